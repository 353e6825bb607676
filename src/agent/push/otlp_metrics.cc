#include "agent/push/otlp_metrics.h"

#include <unistd.h>

#include "proc/procfs.h"
#include "proto/otlp_metrics.pb.h"

namespace goheap2pprof {
namespace {

namespace pb = goheap2pprof::otlp::common;
namespace pbm = goheap2pprof::otlp::metrics;

void SetAttribute(pb::KeyValue* kv, std::string_view key, std::string_view value) {
  kv->set_key(std::string(key));
  kv->mutable_value()->set_string_value(std::string(value));
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
      SetAttribute(point->add_attributes(), p.attribute_key, p.attribute_value);
    }
    point->set_start_time_unix_nano(start);
    point->set_time_unix_nano(now);
    point->set_as_int(p.value);
  }
}

}  // namespace

uint64_t ProcessStartUnixNano(uint64_t start_ticks) {
  const uint64_t boot = BootTimeSeconds();
  const long ticks = sysconf(_SC_CLK_TCK);
  if (boot == 0 || ticks <= 0) return 0;
  return boot * 1000000000ull + start_ticks * (1000000000ull / static_cast<uint64_t>(ticks));
}

std::string OtlpMetricsRequest(const std::vector<OtelGoMetric>& metrics,
                               const std::string& resource, uint64_t start_unix_nano,
                               uint64_t time_unix_nano) {
  pbm::ExportMetricsServiceRequest request;
  pbm::ResourceMetrics* rm = request.add_resource_metrics();
  // Our own bytes (EncodeOtlpResource), parsed back into the message.
  rm->mutable_resource()->ParseFromString(resource);
  pbm::ScopeMetrics* scope = rm->add_scope_metrics();
  scope->mutable_scope()->set_name("goheap2pprof");
  scope->mutable_scope()->set_version(GOHEAP2PPROF_VERSION);
  for (const OtelGoMetric& m : metrics) AddMetric(scope, m, start_unix_nano, time_unix_nano);
  std::string body;
  request.SerializeToString(&body);
  return body;
}

}  // namespace goheap2pprof
