// Fuzz target: MakePyroscopeProfile (goheap2pprof push) on two successive
// cumulative profiles as a capture worker could send them: the agent
// computes alloc deltas, drops zeros, trims and compacts them, so malformed
// ids, string indexes and value counts must end in Error, never in a crash,
// and what comes out must meet Pyroscope's and Parca's rules. Input: the
// profile_delta corpus's format, a 4-byte little-endian length of the first
// profile, then both serialized (not gzipped) profiles; the first byte of
// the length also picks a small sample limit, so trimming is reached.
#include <cstdint>
#include <cstring>

#include "agent/worker/push_profile.h"
#include "base/error.h"
#include "two_profiles.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  uint32_t n = 0;
  pb::Profile p0, p1;
  if (!ParseTwoProfiles(data, size, n, p0, p1)) return 0;
  PushLimits limits;
  limits.max_samples = 1 + data[0] % 64;
  limits.max_bytes = 64 + static_cast<size_t>(data[1]) * 64;
  AllocDeltaState state(/*from_zero=*/(n & 1) != 0);
  for (const pb::Profile* p : {&p0, &p1}) {
    try {
      PyroscopeProfile out = MakePyroscopeProfile(*p, state, limits);
      const pb::Profile& q = out.profile;
      if (q.string_table_size() == 0 || !q.string_table(0).empty()) __builtin_trap();
      if (static_cast<size_t>(q.sample_size()) > limits.max_samples) __builtin_trap();
      for (int i = 0; i < q.location_size(); ++i) {
        if (q.location(i).id() != static_cast<uint64_t>(i) + 1) __builtin_trap();
      }
      for (int i = 0; i < q.function_size(); ++i) {
        if (q.function(i).id() != static_cast<uint64_t>(i) + 1) __builtin_trap();
      }
      for (const pb::Sample& s : q.sample()) {
        bool zero = true;
        for (int64_t v : s.value()) zero = zero && v == 0;
        if (zero) __builtin_trap();
      }
    } catch (const Error&) {
    }
  }
  return 0;
}
