// The delta profile that net/http/pprof serves for ?seconds=N, computed the
// way its serveDeltaProfile does with Go's internal/profile: the first
// profile scaled by -1 (every value, in float64 as Go does) and merged with
// the second. Merging keys samples by their merged locations and their
// labels (the numeric `bytes` label included), sums the values with int64
// wrap-around, drops samples whose values are all zero, and deduplicates
// mappings, locations and functions the way merge.go does; ids come out
// 1..N in order of first use.
//
// The work is done on the serialized profiles, decoded into a compact form
// (flat arrays, strings as views into the input bytes, label sets interned)
// rather than into two pb::Profile messages: a 131k-sample heap profile
// parsed as messages costs hundreds of MiB, the compact form some tens. It
// runs in a capture worker (agent/worker/worker.h), where that memory is confined
// and given back after the request.
//
//   std::string d = EncodedDeltaProfile(base_bytes, new_bytes);  // serialized
//
// The inputs are untrusted (a base profile comes back from the server, which
// got it from a worker): every read is bounds-checked, and an id or string
// index out of range, a truncated field or headers that differ throw
// Error(kMalformed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proto/profile.pb.h"

namespace goheap2pprof {

// p1 - p0 from their serialized (not gzipped) bytes, serialized, with the
// times serveDeltaProfile sets: time_nanos that of p1, duration_nanos p1's
// time minus p0's.
std::string EncodedDeltaProfile(std::string_view p0, std::string_view p1);

// p1 - p0 as messages (for tests and tools), before serveDeltaProfile sets
// TimeNanos and DurationNanos: time_nanos is the smaller of the two (Go's
// combineHeaders), duration_nanos their sum, the period the larger,
// comments the union and default_sample_type that of p0.
pb::Profile DeltaProfile(const pb::Profile& p0, const pb::Profile& p1);

// Go's Profile.Scale(-1) on one value: int64(float64(v) * -1), with the
// float rounding of values beyond 2^53 and amd64's result for overflow.
int64_t GoNegate(int64_t v);

}  // namespace goheap2pprof
