#include "base/duration.h"

#include <charconv>
#include <cstdint>
#include <string>

#include "base/error.h"

namespace goheap2pprof {
namespace {

// Nanoseconds per unit, the units Go's time.ParseDuration knows; 0 if none.
uint64_t UnitNanos(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1000;  // µ: micro, mu
  if (unit == "ms") return 1000000;
  if (unit == "s") return 1000000000;
  if (unit == "m") return 60000000000;
  if (unit == "h") return 3600000000000;
  return 0;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

constexpr uint64_t kMaxNanos = static_cast<uint64_t>(kMaxDuration.count()) * 1000;

// One "<number><unit>" term at the front of text, in nanoseconds (at most
// kMaxNanos + 1, which the caller refuses); advances text. nullopt on junk.
std::optional<uint64_t> TakeTerm(std::string_view& text) {
  uint64_t whole = 0;
  size_t i = 0;
  for (; i < text.size() && IsDigit(text[i]); ++i) {
    whole = whole * 10 + static_cast<uint64_t>(text[i] - '0');
    if (whole > kMaxNanos) whole = kMaxNanos + 1;  // saturate: too long either way
  }
  const size_t whole_digits = i;
  // At most six fraction digits count (finer than a microsecond of an hour
  // is noise); the rest must still be digits.
  uint64_t fraction = 0, fraction_scale = 1;
  size_t fraction_digits = 0;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && IsDigit(text[i]); ++i, ++fraction_digits) {
      if (fraction_digits < 6) {
        fraction = fraction * 10 + static_cast<uint64_t>(text[i] - '0');
        fraction_scale *= 10;
      }
    }
  }
  if (whole_digits == 0 && fraction_digits == 0) return std::nullopt;
  size_t unit_end = i;
  while (unit_end < text.size() && !IsDigit(text[unit_end]) && text[unit_end] != '.') ++unit_end;
  const uint64_t scale = UnitNanos(text.substr(i, unit_end - i));
  if (scale == 0) return std::nullopt;
  text.remove_prefix(unit_end);
  if (whole > kMaxNanos / scale) return kMaxNanos + 1;
  // fraction < 10^6 and scale <= 3.6e12: the product fits in 64 bits.
  return whole * scale + fraction * scale / fraction_scale;
}

// "1ms", "2s", "250us": a bound as an option would write it.
std::string ShortDuration(std::chrono::microseconds d) {
  const int64_t us = d.count();
  if (us % 1000000 == 0) return std::to_string(us / 1000000) + "s";
  if (us % 1000 == 0) return std::to_string(us / 1000) + "ms";
  return std::to_string(us) + "us";
}

}  // namespace

std::optional<std::chrono::microseconds> ParseDuration(std::string_view text) {
  if (text == "0") return std::chrono::microseconds(0);
  if (text.empty()) return std::nullopt;
  uint64_t total = 0;
  while (!text.empty()) {
    std::optional<uint64_t> term = TakeTerm(text);
    if (!term) return std::nullopt;
    total += *term;  // each term is at most kMaxNanos + 1: no overflow before the check
    if (total > kMaxNanos) return std::nullopt;
  }
  return std::chrono::microseconds(static_cast<int64_t>(total / 1000));
}

std::optional<std::chrono::microseconds> DurationOrSeconds(std::string_view text) {
  if (std::optional<std::chrono::microseconds> d = ParseDuration(text)) return d;
  double seconds = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), seconds, std::chars_format::fixed);
  if (ec != std::errc() || end != text.data() + text.size() || !(seconds >= 0) ||
      seconds * 1e6 > static_cast<double>(kMaxDuration.count())) {
    return std::nullopt;
  }
  return std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

std::optional<std::chrono::milliseconds> MillisOrSeconds(std::string_view text) {
  std::optional<std::chrono::microseconds> d = DurationOrSeconds(text);
  if (!d) return std::nullopt;
  return std::chrono::round<std::chrono::milliseconds>(*d);
}

std::chrono::microseconds DurationOption(std::string_view option, std::string_view text,
                                         std::chrono::microseconds min) {
  std::optional<std::chrono::microseconds> d = DurationOrSeconds(text);
  if (!d || *d < min) {
    throw Error(ErrorKind::kUsage, option, " \"", text,
                "\": expected a duration such as 500ms, 10s or 5m (or seconds)",
                min > std::chrono::microseconds(1) ? ", at least " + ShortDuration(min) : "");
  }
  return *d;
}

}  // namespace goheap2pprof
