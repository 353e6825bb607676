#include "agent/serve/query.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

HttpError BadRequest(std::string text) { return HttpError{400, std::move(text)}; }

// `names` picks the metric names: client_golang's (the default, or
// names=prometheus) or OpenTelemetry's (names=otel).
ServeRoute ProcessMetricsRoute(const std::string& pid_text,
                               const std::vector<std::pair<std::string, std::string>>& query) {
  ServeRoute route;
  route.endpoint = Endpoint::kProcessMetrics;
  std::optional<pid_t> pid = ParsePid(pid_text);
  if (!pid) {
    route.error = BadRequest("invalid pid - must be a positive integer");
    return route;
  }
  route.profile.pid = *pid;
  const std::string names = FormValue(query, "names");
  if (names == "otel") {
    route.metric_names = MetricNames::kOpenTelemetry;
  } else if (!names.empty() && names != "prometheus") {
    route.error = BadRequest("invalid names - must be prometheus (the default) or otel");
  }
  return route;
}

ServeRoute FlamegraphRoute(std::optional<std::string_view> path_pid,
                           const std::vector<std::pair<std::string, std::string>>& query) {
  ServeRoute route;
  const std::string pid_text = path_pid ? std::string(*path_pid) : FormValue(query, "pid");
  std::optional<pid_t> pid = ParsePid(pid_text);
  if (!pid) {
    route.error =
        BadRequest(pid_text.empty() ? "missing pid: ask for /pid/N/flamegraph or /flamegraph?pid=N"
                                    : "invalid pid - must be a positive integer");
    return route;
  }
  route.endpoint = Endpoint::kFlamegraph;
  route.flamegraph.pid = *pid;
  const std::string type = FormValue(query, "sample_index");
  if (type.empty()) return route;
  for (const char* known : {"inuse_space", "inuse_objects", "alloc_space", "alloc_objects"}) {
    if (type == known) {
      route.flamegraph.sample_index = type;
      return route;
    }
  }
  route.error = BadRequest(
      "invalid sample_index - must be inuse_space, inuse_objects, alloc_space or alloc_objects");
  return route;
}

// A route that is only the error.
ServeRoute ErrorRoute(HttpError error) {
  ServeRoute route;
  route.error = std::move(error);
  return route;
}

// The path and the query of a request target; a fragment (which clients
// never send) ends the query.
std::pair<std::string_view, std::string_view> SplitTarget(std::string_view target) {
  size_t q = target.find('?');
  std::string_view raw_query =
      q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  if (size_t hash = raw_query.find('#'); hash != std::string_view::npos) {
    raw_query = raw_query.substr(0, hash);
  }
  return {target.substr(0, q), raw_query};
}

// The server's own pages (/, /targets, /metrics) and /metrics?pid=N;
// nullopt for any other path.
std::optional<ServeRoute> ServerRoute(const std::string& path, std::string_view raw_query) {
  ServeRoute route;
  if (path == "/") {
    route.endpoint = Endpoint::kIndex;
    return route;
  }
  if (path == "/targets") {
    route.endpoint = Endpoint::kTargets;
    return route;
  }
  if (path != "/metrics") return std::nullopt;
  const std::vector<std::pair<std::string, std::string>> query = ParseGoQuery(raw_query);
  const bool has_pid =
      std::any_of(query.begin(), query.end(), [](const auto& kv) { return kv.first == "pid"; });
  if (!has_pid) {
    route.endpoint = Endpoint::kMetrics;
    return route;
  }
  return ProcessMetricsRoute(FormValue(query, "pid"), query);
}

// net/http/pprof's handler.ServeHTTP, in its order: seconds (a delta),
// then gc, then debug, into route.profile.
void ApplyProfileQuery(const std::vector<std::pair<std::string, std::string>>& query,
                       const ServeQueryLimits& limits, ServeRoute& route) {
  ProfileRequest& p = route.profile;
  if (std::string sec = FormValue(query, "seconds"); !sec.empty()) {
    std::optional<int64_t> seconds = GoParseInt(sec);
    if (!seconds || *seconds <= 0) {
      route.error = BadRequest(R"(invalid value for "seconds" - must be a positive integer)");
      return;
    }
    if (GoAtoiIgnoringError(FormValue(query, "debug")) != 0) {
      route.error = BadRequest("seconds and debug params are incompatible");
      return;
    }
    if (*seconds > limits.max_seconds) {
      route.error = BadRequest(R"(invalid value for "seconds" - at most )" +
                               std::to_string(limits.max_seconds) + " on this server");
      return;
    }
    p.seconds = *seconds;
    return;  // Go's delta path never reads gc
  }
  if (p.name == ProfileName::kHeap && GoAtoiIgnoringError(FormValue(query, "gc")) > 0) {
    route.error = BadRequest(
        "gc=1 cannot be honoured: a garbage collection can only be started from inside the "
        "target, and goheap2pprof never changes the target; ask without gc for the heap as of "
        "the last collection");
    return;
  }
  p.debug = GoAtoiIgnoringError(FormValue(query, "debug"));
}

// /debug/pprof/<name>, with the pid of the path or the query.
ServeRoute ProfileRoute(std::string_view name, std::optional<std::string_view> path_pid,
                        const std::vector<std::pair<std::string, std::string>>& query,
                        const ServeQueryLimits& limits) {
  ServeRoute route;
  route.endpoint = Endpoint::kProfile;
  ProfileRequest& p = route.profile;
  if (name == "heap") {
    p.name = ProfileName::kHeap;
  } else if (name == "allocs") {
    p.name = ProfileName::kAllocs;
  } else if (name == "goroutine") {
    p.name = ProfileName::kGoroutine;
  } else {
    // net/http/pprof's words for a profile it does not have. Only heap,
    // allocs and goroutine can be read from outside the process.
    route.error = HttpError{404, "Unknown profile"};
    return route;
  }
  std::string pid_text = path_pid ? std::string(*path_pid) : FormValue(query, "pid");
  if (pid_text.empty()) {
    route.error = BadRequest("missing pid: ask for /debug/pprof/" + std::string(name) +
                             "?pid=N or /pid/N/debug/pprof/" + std::string(name));
    return route;
  }
  std::optional<pid_t> pid = ParsePid(pid_text);
  if (!pid) {
    route.error = BadRequest("invalid pid - must be a positive integer");
    return route;
  }
  p.pid = *pid;
  ApplyProfileQuery(query, limits, route);
  return route;
}

}  // namespace

ServeRoute ParseServeTarget(std::string_view target, const ServeQueryLimits& limits) {
  const auto [raw_path, raw_query] = SplitTarget(target);
  std::optional<std::string> path = UnescapePath(raw_path);
  if (!path || path->empty() || (*path)[0] != '/') {
    return ErrorRoute(BadRequest("malformed request path"));
  }
  if (std::optional<ServeRoute> own = ServerRoute(*path, raw_query)) return std::move(*own);

  // /pid/<N>/debug/pprof/<name> or /debug/pprof/<name>?pid=<N>.
  std::string_view rest = *path;
  std::optional<std::string_view> path_pid;
  constexpr std::string_view kPidPrefix = "/pid/";
  if (rest.substr(0, kPidPrefix.size()) == kPidPrefix) {
    rest.remove_prefix(kPidPrefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return ErrorRoute(HttpError{404, "404 page not found"});
    path_pid = rest.substr(0, slash);
    rest.remove_prefix(slash);
  }
  const std::vector<std::pair<std::string, std::string>> query = ParseGoQuery(raw_query);
  if (path_pid && rest == "/metrics") return ProcessMetricsRoute(std::string(*path_pid), query);
  if (rest == "/flamegraph") return FlamegraphRoute(path_pid, query);
  constexpr std::string_view kPprofPrefix = "/debug/pprof/";
  if (rest.substr(0, kPprofPrefix.size()) != kPprofPrefix) {
    return ErrorRoute(HttpError{404, "404 page not found"});
  }
  return ProfileRoute(rest.substr(kPprofPrefix.size()), path_pid, query, limits);
}

}  // namespace goheap2pprof
