#include "agent/common/query.h"

#include <algorithm>
#include <limits>

#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// url.QueryUnescape (plus_is_space) and url.PathUnescape.
std::optional<std::string> Unescape(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = HexValue(s[i + 1]);
      int lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

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

}  // namespace

std::vector<std::pair<std::string, std::string>> ParseGoQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> values;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.find(';') != std::string_view::npos || pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    std::optional<std::string> k = Unescape(key, true);
    std::optional<std::string> v = Unescape(value, true);
    if (!k || !v) continue;
    values.emplace_back(std::move(*k), std::move(*v));
  }
  return values;
}

std::string FormValue(const std::vector<std::pair<std::string, std::string>>& query,
                      std::string_view key) {
  for (const auto& [k, v] : query) {
    if (k == key) return v;
  }
  return "";
}

std::optional<int64_t> GoParseInt(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  // Accumulate the magnitude in uint64 so that INT64_MIN parses.
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (limit - d) / 10) return std::nullopt;
    n = n * 10 + d;
  }
  return negative ? static_cast<int64_t>(0 - n) : static_cast<int64_t>(n);
}

int64_t GoAtoiIgnoringError(std::string_view s) {
  if (std::optional<int64_t> v = GoParseInt(s)) return *v;
  // ParseInt returns the clamped value on a range error (digits only, too
  // many of them) and 0 on a syntax error.
  std::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return 0;
  }
  return negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

std::optional<std::string> UnescapePath(std::string_view path) { return Unescape(path, false); }

namespace {

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
