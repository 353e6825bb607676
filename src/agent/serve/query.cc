#include "agent/serve/query.h"

#include <algorithm>

#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

HttpError BadRequest(std::string text) { return HttpError{400, std::move(text)}; }

ServeRoute ProcessMetricsRoute(const std::string& pid_text) {
  ServeRoute route;
  route.endpoint = Endpoint::kProcessMetrics;
  std::optional<pid_t> pid = ParsePid(pid_text);
  if (!pid) {
    route.error = BadRequest("invalid pid - must be a positive integer");
    return route;
  }
  route.profile.pid = *pid;
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

}  // namespace

ServeRoute ParseServeTarget(std::string_view target, const ServeQueryLimits& limits) {
  ServeRoute route;
  size_t q = target.find('?');
  std::string_view raw_path = target.substr(0, q);
  std::string_view raw_query =
      q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  // A fragment is never sent by clients; treat one as the end of the query.
  if (size_t hash = raw_query.find('#'); hash != std::string_view::npos) {
    raw_query = raw_query.substr(0, hash);
  }
  std::optional<std::string> path = UnescapePath(raw_path);
  if (!path || path->empty() || (*path)[0] != '/') {
    route.error = BadRequest("malformed request path");
    return route;
  }
  if (*path == "/") {
    route.endpoint = Endpoint::kIndex;
    return route;
  }
  if (*path == "/targets") {
    route.endpoint = Endpoint::kTargets;
    return route;
  }
  if (*path == "/metrics") {
    const std::vector<std::pair<std::string, std::string>> query = ParseGoQuery(raw_query);
    const bool has_pid =
        std::any_of(query.begin(), query.end(), [](const auto& kv) { return kv.first == "pid"; });
    if (!has_pid) {
      route.endpoint = Endpoint::kMetrics;
      return route;
    }
    return ProcessMetricsRoute(FormValue(query, "pid"));
  }

  // /pid/<N>/debug/pprof/<name> or /debug/pprof/<name>?pid=<N>.
  std::string_view rest = *path;
  std::optional<std::string_view> path_pid;
  constexpr std::string_view kPidPrefix = "/pid/";
  if (rest.substr(0, kPidPrefix.size()) == kPidPrefix) {
    rest.remove_prefix(kPidPrefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) {
      route.error = HttpError{404, "404 page not found"};
      return route;
    }
    path_pid = rest.substr(0, slash);
    rest.remove_prefix(slash);
    if (rest == "/metrics") return ProcessMetricsRoute(std::string(*path_pid));
  }
  const std::vector<std::pair<std::string, std::string>> query = ParseGoQuery(raw_query);
  if (rest == "/flamegraph") return FlamegraphRoute(path_pid, query);
  constexpr std::string_view kPprofPrefix = "/debug/pprof/";
  if (rest.substr(0, kPprofPrefix.size()) != kPprofPrefix) {
    route.error = HttpError{404, "404 page not found"};
    return route;
  }
  std::string_view name = rest.substr(kPprofPrefix.size());
  route.endpoint = Endpoint::kProfile;
  ProfileRequest& p = route.profile;
  if (name == "heap") {
    p.name = ProfileName::kHeap;
  } else if (name == "allocs") {
    p.name = ProfileName::kAllocs;
  } else {
    // net/http/pprof's words for a profile it does not have. Only heap and
    // allocs can be read from outside the process.
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

  // net/http/pprof's handler.ServeHTTP, in its order.
  if (std::string sec = FormValue(query, "seconds"); !sec.empty()) {
    std::optional<int64_t> seconds = GoParseInt(sec);
    if (!seconds || *seconds <= 0) {
      route.error = BadRequest(R"(invalid value for "seconds" - must be a positive integer)");
      return route;
    }
    if (GoAtoiIgnoringError(FormValue(query, "debug")) != 0) {
      route.error = BadRequest("seconds and debug params are incompatible");
      return route;
    }
    if (*seconds > limits.max_seconds) {
      route.error = BadRequest(R"(invalid value for "seconds" - at most )" +
                               std::to_string(limits.max_seconds) + " on this server");
      return route;
    }
    p.seconds = *seconds;
    return route;  // Go's delta path never reads gc
  }
  if (p.name == ProfileName::kHeap && GoAtoiIgnoringError(FormValue(query, "gc")) > 0) {
    route.error = BadRequest(
        "gc=1 cannot be honoured: a garbage collection can only be started from inside the "
        "target, and goheap2pprof never changes the target; ask without gc for the heap as of "
        "the last collection");
    return route;
  }
  p.debug = GoAtoiIgnoringError(FormValue(query, "debug"));
  return route;
}

}  // namespace goheap2pprof
