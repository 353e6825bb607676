#include "base/byte_size.h"

#include <charconv>
#include <cmath>
#include <initializer_list>

namespace goheap2pprof {
namespace {

// The units and their scale; "" and "B" are bytes.
double Scale(std::string_view unit) {
  if (unit.empty() || unit == "B") return 1;
  double scale = 1;
  for (std::string_view prefixes : {"Kk", "M", "G", "T"}) {
    scale *= 1024;
    if (unit.size() > 3 || prefixes.find(unit[0]) == std::string_view::npos) continue;
    std::string_view rest = unit.substr(1);
    if (rest.empty() || rest == "B" || rest == "iB") return scale;
  }
  return 0;
}

}  // namespace

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  const size_t unit_at = text.find_first_not_of("0123456789.");
  const std::string_view number = text.substr(0, unit_at);
  const std::string_view unit = unit_at == std::string_view::npos ? "" : text.substr(unit_at);
  if (number.empty()) return std::nullopt;
  if (unit.empty() && number.find('.') == std::string_view::npos) {
    // Bare bytes exactly, as the options read them before (no rounding
    // through a double above 2^53).
    uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (ec != std::errc() || ptr != number.data() + number.size() || n >= uint64_t{1} << 63) {
      return std::nullopt;
    }
    return n;
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value,
                                   std::chars_format::fixed);
  const double scale = Scale(unit);
  if (ec != std::errc() || ptr != number.data() + number.size() || scale == 0 ||
      !std::isfinite(value) || value * scale >= 9.2e18) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(value * scale);
}

}  // namespace goheap2pprof
