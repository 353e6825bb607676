// OTLP for `push --otlp-metrics`: a Go process's runtime metrics under the
// semantic conventions' go.* names (agent/common/otel_go_metrics.h) as one
// ExportMetricsServiceRequest (proto/otlp_metrics.proto), with the
// process's resource attributes named as the conventions name them. The
// resource is the same one an OTLP profile of the process carries, so a
// backend joins the two signals on it.
//
//   std::vector<OtlpAttribute> resource = OtelResourceAttributes(p, "auto", HostName());
//   std::string body = OtlpMetricsRequest(OtelGoMetrics(stats), resource, start_ns, now_ns);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/common/discovery.h"
#include "agent/common/otel_go_metrics.h"

namespace goheap2pprof {

// One resource attribute: a string, or an integer (process.pid).
struct OtlpAttribute {
  std::string key;
  std::string string_value;
  std::optional<int64_t> int_value;
  bool operator==(const OtlpAttribute&) const = default;
};

// The resource of one process, only the attributes known, in this order:
// service.name (as push names the process, --service-name-from),
// process.pid, process.executable.name and .path, process.runtime.name
// ("gc", runtime.Compiler, what the OTel Go SDK sets) and .version (the
// process's Go version), container.id, k8s.namespace.name, k8s.pod.name,
// k8s.pod.uid, k8s.container.name, k8s.node.name, host.name.
std::vector<OtlpAttribute> OtelResourceAttributes(const GoProcess& process,
                                                  const std::string& service_name_from,
                                                  const std::string& host_name);

// This machine's name (gethostname), for host.name; "" if it has none.
std::string HostName();

// The Unix time in nanoseconds at which a process started, from its start
// time in clock ticks after boot; 0 if the boot time is unknown. The start
// of every cumulative Sum.
uint64_t ProcessStartUnixNano(uint64_t start_ticks);

// The serialized ExportMetricsServiceRequest: one ResourceMetrics, one
// ScopeMetrics (goheap2pprof and its version), each metric a cumulative Sum
// (monotonic for a Counter) of integer points taken at time_unix_nano.
std::string OtlpMetricsRequest(const std::vector<OtelGoMetric>& metrics,
                               const std::vector<OtlpAttribute>& resource, uint64_t start_unix_nano,
                               uint64_t time_unix_nano);

}  // namespace goheap2pprof
