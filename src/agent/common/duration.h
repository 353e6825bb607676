// The one way the agent's options write a duration: Go's time.ParseDuration
// form ("10s", "5m", "250ms", "1.5h", "1m30s"), since the people who set
// them write Go. serve, push and watch all parse through here.
//
//   std::optional<std::chrono::microseconds> d = ParseDuration("1m30s");  // 90 s
//   double s = DurationSecondsOption("--interval", "15s");                // 15.0
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

// An option's value: ParseDuration, at least `min`. Throws Error(kUsage)
// naming the option and an example otherwise.
std::chrono::microseconds DurationOption(
    std::string_view option, std::string_view text,
    std::chrono::microseconds min = std::chrono::microseconds(1));
// The same in seconds, for options kept as double seconds.
double DurationSecondsOption(std::string_view option, std::string_view text,
                             std::chrono::microseconds min = std::chrono::microseconds(1));

}  // namespace goheap2pprof
