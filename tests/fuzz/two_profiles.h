// The input format shared by the fuzz targets that take two successive
// profiles (profile_delta, push_profile), so both read one corpus: a 4-byte
// little-endian length of the first profile, then both serialized (not
// gzipped) profiles.
#pragma once

#include <cstdint>
#include <cstring>

#include "proto/profile.pb.h"

namespace goheap2pprof {

// Parses `data` into p0 and p1; false when it is too short or either is not
// a profile (the fuzzer's input is then of no interest). `length_word` gets
// the raw length word, which a target may also use to pick its options.
inline bool ParseTwoProfiles(const uint8_t* data, size_t size, uint32_t& length_word,
                             pb::Profile& p0, pb::Profile& p1) {
  if (size < 4) return false;
  std::memcpy(&length_word, data, 4);
  data += 4;
  size -= 4;
  const size_t n = length_word > size ? size : length_word;
  return p0.ParseFromArray(data, static_cast<int>(n)) &&
         p1.ParseFromArray(data + n, static_cast<int>(size - n));
}

}  // namespace goheap2pprof
