// The labels of the series `goheap2pprof push` writes for one process, and
// the checks on --label k=v extras. Both backends get __name__=memory (the
// name Pyroscope derives for Go heap profiles and the one Parca's scraper
// uses for them; __name__=goroutine for the goroutine profile), service_name as serve's /targets
// names the process, pid and go_version, and the process's Kubernetes identity (pod_identity.h; an
// extra --label of the same name wins); Pyroscope also gets __delta__=false, because the agent
// sends alloc_* already as deltas (a v1 server would otherwise compute its
// own delta and drop the first profile). Label names follow Prometheus's
// rules, which both servers check; Pyroscope accepts at most 30 per series.
//
//   std::vector<PushLabel> labels = PushSeriesLabels(process, "exe", extras, true);
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/common/discovery.h"

namespace goheap2pprof {

using PushLabel = std::pair<std::string, std::string>;

// Pyroscope's validation.max-label-names-per-series default.
constexpr size_t kMaxLabelsPerSeries = 30;
// How many labels the agent sets itself on a Pyroscope series, at most: 5,
// and the Kubernetes identity's 6 (namespace, pod, pod_uid, container,
// container_id, node).
constexpr size_t kAgentLabels = 11;

// [a-zA-Z_][a-zA-Z0-9_]*
bool IsValidLabelName(std::string_view name);

// Parses one --label NAME=VALUE; throws Error(kUsage) for a malformed or
// reserved name (one starting with "__", or one the agent sets), or an
// empty value (which both servers treat as an absent label).
PushLabel ParseLabelOption(const std::string& text);

// Checks a whole set of extras: no name twice, and room under the limit.
void CheckExtraLabels(const std::vector<PushLabel>& extras);

// The series labels of one process, sorted by name (both servers keep label
// sets sorted; Parca requires unique names). `profile_name` is __name__: "memory"
// for the heap profile, "goroutine" for the goroutine profile (the name
// Pyroscope gives Go's goroutine profile type, and Parca's scraper gives
// its `goroutine` pprof_config).
std::vector<PushLabel> PushSeriesLabels(const GoProcess& process,
                                        const std::string& service_name_from,
                                        const std::vector<PushLabel>& extras, bool pyroscope,
                                        std::string_view profile_name = "memory");

}  // namespace goheap2pprof
