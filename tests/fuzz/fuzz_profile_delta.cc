// Fuzz target: the ?seconds=N delta on two profiles. The capture worker
// decodes the base profile that the server hands back to it (it could have
// been damaged or forged) with the compact decoder of pprof/profile/delta.h:
// any bytes must end in Error, never in a crash, and what it encodes it must
// decode again. When both inputs parse as profiles, the message entry point
// is checked too.
// Input: a 4-byte little-endian length of the first profile, then both
// serialized (not gzipped) profiles.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/error.h"
#include "pprof/profile/delta.h"
#include "two_profiles.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  if (size < 4) return 0;
  uint32_t n = 0;
  std::memcpy(&n, data, 4);
  const std::string_view rest(reinterpret_cast<const char*>(data) + 4, size - 4);
  const size_t split = n > rest.size() ? rest.size() : n;
  std::string encoded;
  try {
    encoded = EncodedDeltaProfile(rest.substr(0, split), rest.substr(split));
  } catch (const Error&) {
  }
  try {
    // What the encoder writes, the decoder reads back. (Not libprotobuf:
    // its proto3 strings must be UTF-8, profile strings need not be, as in
    // Go.)
    if (!encoded.empty()) EncodedDeltaProfile(encoded, encoded);
  } catch (const Error&) {
    __builtin_trap();
  }
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
