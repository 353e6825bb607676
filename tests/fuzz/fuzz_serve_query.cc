// Fuzz target: the request-target parser of `goheap2pprof serve` (path
// routing, Go's query rules, net/http/pprof's checks), which sees every
// request line a client sends.
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/serve/query.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ServeQueryLimits limits;
  limits.max_seconds = 300;
  ServeRoute r = ParseServeTarget(text, limits);
  if (r.error) {
    // Errors are client errors or not-found, with a body.
    if (r.error->status != 400 && r.error->status != 404) __builtin_trap();
    if (r.error->text.empty()) __builtin_trap();
  } else if (r.endpoint == Endpoint::kProfile) {
    if (r.profile.pid <= 0) __builtin_trap();
    if (r.profile.seconds < 0 || r.profile.seconds > limits.max_seconds) __builtin_trap();
    if (r.profile.seconds > 0 && r.profile.debug != 0) __builtin_trap();
  } else if (r.endpoint == Endpoint::kProcessMetrics) {
    if (r.profile.pid <= 0) __builtin_trap();
  }
  // Whatever ParseInt accepts prints back to the same digits (sign and
  // leading zeros aside).
  if (std::optional<int64_t> v = GoParseInt(text.substr(0, 24))) {
    if (*v != 0 && std::to_string(*v).size() > 21) __builtin_trap();
  }
  for (const auto& [k, v] : ParseGoQuery(text)) {
    if (k.empty() && v.empty() && false) __builtin_trap();
  }
  return 0;
}
