#include "agent/common/go_query.h"

#include <limits>

namespace goheap2pprof {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// url.QueryUnescape (plus_is_space) and url.PathUnescape.
std::optional<std::string> Unescape(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = HexValue(s[i + 1]);
      int lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ParseGoQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> values;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.find(';') != std::string_view::npos || pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    std::optional<std::string> k = Unescape(key, true);
    std::optional<std::string> v = Unescape(value, true);
    if (!k || !v) continue;
    values.emplace_back(std::move(*k), std::move(*v));
  }
  return values;
}

std::string FormValue(const std::vector<std::pair<std::string, std::string>>& query,
                      std::string_view key) {
  for (const auto& [k, v] : query) {
    if (k == key) return v;
  }
  return "";
}

std::optional<int64_t> GoParseInt(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  // Accumulate the magnitude in uint64 so that INT64_MIN parses.
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (limit - d) / 10) return std::nullopt;
    n = n * 10 + d;
  }
  return negative ? static_cast<int64_t>(0 - n) : static_cast<int64_t>(n);
}

int64_t GoAtoiIgnoringError(std::string_view s) {
  if (std::optional<int64_t> v = GoParseInt(s)) return *v;
  // ParseInt returns the clamped value on a range error (digits only, too
  // many of them) and 0 on a syntax error.
  std::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return 0;
  }
  return negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

std::optional<std::string> UnescapePath(std::string_view path) { return Unescape(path, false); }

}  // namespace goheap2pprof
