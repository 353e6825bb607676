// OTLP for `push --otlp-metrics`: a Go process's runtime metrics under the
// semantic conventions' go.* names (agent/common/otel_go_metrics.h) as one
// ExportMetricsServiceRequest (proto/otlp_metrics.proto), with the
// process's resource (agent/push/otlp_resource.h): the same one an OTLP
// profile of the process carries, so a backend joins the two signals on it.
//
//   std::string resource = EncodeOtlpResource(OtlpResourceAttributes(p, name, HostName()));
//   std::string body = OtlpMetricsRequest(OtelGoMetrics(stats), resource, start_ns, now_ns);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/common/otel_go_metrics.h"

namespace goheap2pprof {

// The Unix time in nanoseconds at which a process started, from its start
// time in clock ticks after boot; 0 if the boot time is unknown. The start
// of every cumulative Sum.
uint64_t ProcessStartUnixNano(uint64_t start_ticks);

// The serialized ExportMetricsServiceRequest: one ResourceMetrics, one
// ScopeMetrics (goheap2pprof and its version), each metric a cumulative Sum
// (monotonic for a Counter) of integer points taken at time_unix_nano.
std::string OtlpMetricsRequest(const std::vector<OtelGoMetric>& metrics,
                               const std::string& resource, uint64_t start_unix_nano,
                               uint64_t time_unix_nano);

}  // namespace goheap2pprof
