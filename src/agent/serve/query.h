// What an HTTP request to `goheap2pprof serve` asks for, decided from the raw
// request target alone (path and query as the client sent them), with the
// rules of Go's net/url and net/http/pprof so that clients written for a Go
// program's own /debug/pprof see the same answers. Pure code: unit tested and
// fuzzed (tests/fuzz/fuzz_serve_query.cc).
//
//   ServeRoute r = ParseServeTarget("/debug/pprof/heap?pid=42&seconds=10");
//   if (r.error) reply(r.error->status, r.error->text);
//   else if (r.endpoint == Endpoint::kProfile) capture(r.profile);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/common/go_query.h"

namespace goheap2pprof {

enum class Endpoint { kIndex, kTargets, kMetrics, kProfile, kProcessMetrics, kFlamegraph };
enum class ProfileName { kHeap, kAllocs, kGoroutine };

struct ProfileRequest {
  ProfileName name = ProfileName::kHeap;
  pid_t pid = 0;
  int64_t seconds = 0;  // > 0: a delta profile over this many seconds
  int64_t debug = 0;    // != 0: the legacy text format
};

// A flame graph page (pprof/flame_graph/flame_graph.h) of a fresh heap capture.
struct FlamegraphRequest {
  pid_t pid = 0;
  std::string sample_index = "inuse_space";  // one of the heap profile's four types
};

// The names /pid/N/metrics writes the Go runtime's metrics under:
// client_golang's (agent/serve/go_metrics_text.h) or OpenTelemetry's
// semantic conventions (agent/common/otel_go_metrics.h).
enum class MetricNames { kPrometheus, kOpenTelemetry };

struct HttpError {
  int status = 400;
  std::string text;  // the body, one line, as net/http/pprof's serveError writes it
};

struct ServeRoute {
  Endpoint endpoint = Endpoint::kIndex;
  ProfileRequest profile;        // for kProfile; for kProcessMetrics only its pid
  FlamegraphRequest flamegraph;  // for kFlamegraph
  MetricNames metric_names = MetricNames::kPrometheus;  // for kProcessMetrics
  std::optional<HttpError> error;
};

struct ServeQueryLimits {
  int64_t max_seconds = 300;  // longer deltas would hold a server thread too long
};

// Routes a request target ("/path?query", as on the request line):
//   /                                   kIndex
//   /targets, /metrics                  kTargets, kMetrics (the server's own)
//   /debug/pprof/{heap,allocs,goroutine}?pid=N
//                                       kProfile
//   /pid/N/debug/pprof/{heap,allocs,goroutine}
//                                       kProfile (a ?pid= is then ignored)
//   /metrics?pid=N, /pid/N/metrics      kProcessMetrics (the Go runtime's
//                                       metrics of process N; names=otel for
//                                       OpenTelemetry's names, else 400
//                                       unless empty or prometheus)
//   /pid/N/flamegraph?sample_index=T    kFlamegraph (/flamegraph?pid=N too); T is
//                                       inuse_space (default), inuse_objects,
//                                       alloc_space or alloc_objects, else 400
// Anything else is 404. For profiles it applies net/http/pprof's checks in its
// order: a non-empty `seconds` must be a positive integer (400 with Go's
// text), and may not be combined with `debug`; `gc` > 0 on heap asks for a
// collection in the target, which cannot be done from outside (400 saying
// so; allocs and goroutine ignore gc, as Go does). goroutine takes `seconds`
// as heap does: net/http/pprof serves it a delta too (profileSupportsDelta).
ServeRoute ParseServeTarget(std::string_view target, const ServeQueryLimits& limits = {});

}  // namespace goheap2pprof
