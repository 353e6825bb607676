// Fuzz target: DeltaProfile (?seconds=N) on two profiles as a capture worker
// could send them: the server parses and merges them, so malformed ids,
// string indexes and value counts must end in Error, never in a crash.
// Input: a 4-byte little-endian length of the first profile, then both
// serialized (not gzipped) profiles.
#include <cstdint>
#include <cstring>

#include "base/error.h"
#include "pprof/profile_delta.h"
#include "two_profiles.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  uint32_t n = 0;
  pb::Profile p0, p1;
  if (!ParseTwoProfiles(data, size, n, p0, p1)) return 0;
  try {
    pb::Profile d = DeltaProfile(p0, p1);
    // Ids 1..N and string 0 empty, as Parca requires.
    if (d.string_table_size() == 0 || !d.string_table(0).empty()) __builtin_trap();
    for (int i = 0; i < d.location_size(); ++i) {
      if (d.location(i).id() != static_cast<uint64_t>(i) + 1) __builtin_trap();
    }
  } catch (const Error&) {
  }
  return 0;
}
