#include "agent/push/otlp_metrics.h"

#include <unistd.h>

#include <climits>

#include "agent/common/service_name.h"
#include "base/utf8.h"
#include "proc/procfs.h"
#include "proto/otlp_metrics.pb.h"

namespace goheap2pprof {
namespace {

namespace pb = goheap2pprof::otlp::common;
namespace pbm = goheap2pprof::otlp::metrics;

void AddString(std::vector<OtlpAttribute>& out, const char* key, const std::string& value) {
  if (!value.empty()) out.push_back({key, ValidUtf8(value), std::nullopt});
}

void SetAttribute(pb::KeyValue* kv, const OtlpAttribute& a) {
  kv->set_key(a.key);
  if (a.int_value) {
    kv->mutable_value()->set_int_value(*a.int_value);
  } else {
    kv->mutable_value()->set_string_value(a.string_value);
  }
}

void AddMetric(pbm::ScopeMetrics* scope, const OtelGoMetric& m, uint64_t start, uint64_t now) {
  pbm::Metric* metric = scope->add_metrics();
  metric->set_name(std::string(m.name));
  metric->set_description(std::string(m.description));
  metric->set_unit(std::string(m.unit));
  // Both instruments are cumulative Sums: an UpDownCounter is not
  // monotonic, a Counter is.
  pbm::Sum* sum = metric->mutable_sum();
  sum->set_aggregation_temporality(pbm::AGGREGATION_TEMPORALITY_CUMULATIVE);
  sum->set_is_monotonic(m.instrument == OtelInstrument::kCounter);
  for (const OtelGoPoint& p : m.points) {
    pbm::NumberDataPoint* point = sum->add_data_points();
    if (!p.attribute_key.empty()) {
      SetAttribute(point->add_attributes(),
                   {std::string(p.attribute_key), std::string(p.attribute_value), std::nullopt});
    }
    point->set_start_time_unix_nano(start);
    point->set_time_unix_nano(now);
    point->set_as_int(p.value);
  }
}

}  // namespace

std::vector<OtlpAttribute> OtelResourceAttributes(const GoProcess& process,
                                                  const std::string& service_name_from,
                                                  const std::string& host_name) {
  std::vector<OtlpAttribute> out;
  std::string service = ServiceNameOf(process.facts, service_name_from);
  // The conventions' own default for a process that names no service.
  if (service.empty()) service = "unknown_service";
  AddString(out, "service.name", service);
  out.push_back({"process.pid", "", static_cast<int64_t>(process.facts.pid)});
  // The kernel marks an executable replaced or removed since the start.
  std::string exe = process.facts.exe;
  if (exe.ends_with(" (deleted)")) exe.resize(exe.size() - std::string_view(" (deleted)").size());
  AddString(out, "process.executable.name", exe.substr(exe.rfind('/') + 1));
  AddString(out, "process.executable.path", exe);
  AddString(out, "process.runtime.name", "gc");
  AddString(out, "process.runtime.version", process.exe.go_version);
  const PodIdentity& id = process.facts.identity;
  AddString(out, "container.id", id.cgroup.container_id);
  AddString(out, "k8s.namespace.name", id.names.pod_namespace);
  AddString(out, "k8s.pod.name", id.names.pod);
  AddString(out, "k8s.pod.uid", id.names.pod_uid.empty() ? id.cgroup.pod_uid : id.names.pod_uid);
  AddString(out, "k8s.container.name", id.names.container);
  AddString(out, "k8s.node.name", id.node);
  AddString(out, "host.name", host_name);
  return out;
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

uint64_t ProcessStartUnixNano(uint64_t start_ticks) {
  const uint64_t boot = BootTimeSeconds();
  const long ticks = sysconf(_SC_CLK_TCK);
  if (boot == 0 || ticks <= 0) return 0;
  return boot * 1000000000ull + start_ticks * (1000000000ull / static_cast<uint64_t>(ticks));
}

std::string OtlpMetricsRequest(const std::vector<OtelGoMetric>& metrics,
                               const std::vector<OtlpAttribute>& resource, uint64_t start_unix_nano,
                               uint64_t time_unix_nano) {
  pbm::ExportMetricsServiceRequest request;
  pbm::ResourceMetrics* rm = request.add_resource_metrics();
  for (const OtlpAttribute& a : resource) SetAttribute(rm->mutable_resource()->add_attributes(), a);
  pbm::ScopeMetrics* scope = rm->add_scope_metrics();
  scope->mutable_scope()->set_name("goheap2pprof");
  scope->mutable_scope()->set_version(GOHEAP2PPROF_VERSION);
  for (const OtelGoMetric& m : metrics) AddMetric(scope, m, start_unix_nano, time_unix_nano);
  std::string body;
  request.SerializeToString(&body);
  return body;
}

}  // namespace goheap2pprof
