// The delta profile that net/http/pprof serves for ?seconds=N, computed the
// way its serveDeltaProfile does with Go's internal/profile: the first
// profile scaled by -1 (every value, in float64 as Go does) and merged with
// the second. Merging keys samples by their merged locations and their
// labels (the numeric `bytes` label included), sums the values with int64
// wrap-around, drops samples whose values are all zero, and deduplicates
// mappings, locations and functions the way merge.go does; ids come out
// 1..N in order of first use.
//
//   pb::Profile d = DeltaProfile(p0, p1);  // then set time and duration
//
// The inputs come from a capture worker, so they are checked as untrusted:
// an id or string index out of range, or headers that differ, throw
// Error(kMalformed).
#pragma once

#include <cstdint>

#include "proto/profile.pb.h"

namespace goheap2pprof {

// p1 - p0, as net/http/pprof computes it, before it sets TimeNanos and
// DurationNanos: time_nanos is the smaller of the two (Go's combineHeaders),
// duration_nanos their sum, the period the larger, comments the union and
// default_sample_type that of p0.
pb::Profile DeltaProfile(const pb::Profile& p0, const pb::Profile& p1);

// Go's Profile.Scale(-1) on one value: int64(float64(v) * -1), with the
// float rounding of values beyond 2^53 and amd64's result for overflow.
int64_t GoNegate(int64_t v);

}  // namespace goheap2pprof
