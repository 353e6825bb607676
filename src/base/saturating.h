// Saturating int64 arithmetic for the views computed from a profile (text
// top, JSON snapshot). Sample values come from target memory or a profile
// file and may be anywhere in the int64 range (ScaleHeapSample yields
// INT64_MIN for corrupt counters, as Go does); summing, negating or scaling
// them must not be undefined behaviour. A saturated result stays at the
// extreme of the range, so an overflowing total reads as "huge", never as a
// wrapped value of the wrong sign.
//
//   int64_t total = 0;
//   for (int64_t v : values) total = SaturatingAdd(total, SaturatingAbs(v));
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace goheap2pprof {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? kInt64Max : kInt64Min;
}

inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? kInt64Min : kInt64Max;
}

// |v|; INT64_MAX for INT64_MIN, whose magnitude has no int64.
inline int64_t SaturatingAbs(int64_t v) {
  if (v == kInt64Min) return kInt64Max;
  return v < 0 ? -v : v;
}

// A double truncated toward zero and clamped to the int64 range; NaN is 0.
inline int64_t SaturatingFromDouble(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return kInt64Max;
  if (v < -9223372036854775808.0) return kInt64Min;
  return static_cast<int64_t>(v);
}

}  // namespace goheap2pprof
