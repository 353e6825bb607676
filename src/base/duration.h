// The one way the agent's options write a duration: Go's time.ParseDuration
// form ("10s", "5m", "250ms", "1.5h", "1m30s"), since the people who set
// them write Go, or a bare number of seconds ("15", "0.5"), which the
// options took before they took units. Every command's options and watch's
// triggers parse through here (the CLI through DurationOrSeconds).
//
//   std::optional<std::chrono::microseconds> d = ParseDuration("1m30s");  // 90 s
//   std::chrono::microseconds p = DurationOption("--poll", "15");          // 15 s
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace goheap2pprof {

// The longest duration accepted: 2^40 us, about 12.7 days. An interval or
// timeout beyond it is a typing error, and the bound keeps every sum in range.
inline constexpr std::chrono::microseconds kMaxDuration{int64_t{1} << 40};

// One or more <decimal number><unit> terms, units ns, us (or µs), ms, s, m
// and h, no sign and no spaces; "0" alone is zero. Truncated to whole
// microseconds. nullopt on anything else or above kMaxDuration.
std::optional<std::chrono::microseconds> ParseDuration(std::string_view text);

// ParseDuration, or else a bare non-negative decimal number of seconds
// (within kMaxDuration).
std::optional<std::chrono::microseconds> DurationOrSeconds(std::string_view text);

// DurationOrSeconds to the nearest millisecond: what the agent's settings
// hold (DiscoverySettings, WorkerSettings).
std::optional<std::chrono::milliseconds> MillisOrSeconds(std::string_view text);

// An option's value: DurationOrSeconds, at least `min`. Throws
// Error(kUsage) naming the option and an example otherwise.
std::chrono::microseconds DurationOption(
    std::string_view option, std::string_view text,
    std::chrono::microseconds min = std::chrono::microseconds(1));

// d in seconds, for messages and Prometheus values ("did not finish in 10 s").
inline double Seconds(std::chrono::milliseconds d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace goheap2pprof
