#include "base/utf8.h"

#include <cstdint>

namespace goheap2pprof {
namespace {

// The length of the well-formed sequence at the start of text (1..4), or 0
// with *consumed set to the length of the maximal subpart of an ill-formed
// one (at least 1): the bytes one U+FFFD stands for. Ranges from the Unicode
// Standard's table of well-formed UTF-8 byte sequences.
size_t NextSequence(std::string_view text, size_t* consumed) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t second_low = 0x80, second_high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_low = 0xA0;   // overlong below U+0800
    if (lead == 0xED) second_high = 0x9F;  // surrogates U+D800..DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_low = 0x90;   // overlong below U+10000
    if (lead == 0xF4) second_high = 0x8F;  // above U+10FFFF
  } else {
    *consumed = 1;  // continuation byte, C0/C1 (overlong) or F5..FF
    return 0;
  }
  size_t i = 1;
  for (; i < length && i < text.size(); ++i) {
    const uint8_t low = i == 1 ? second_low : 0x80, high = i == 1 ? second_high : 0xBF;
    if (byte(i) < low || byte(i) > high) break;
  }
  if (i == length) return length;
  *consumed = i;
  return 0;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  while (!text.empty()) {
    size_t consumed = 0;
    const size_t n = NextSequence(text, &consumed);
    if (n == 0) return false;
    text.remove_prefix(n);
  }
  return true;
}

std::string ValidUtf8(std::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  while (!text.empty()) {
    size_t consumed = 0;
    const size_t n = NextSequence(text, &consumed);
    if (n > 0) {
      out.append(text.substr(0, n));
      text.remove_prefix(n);
    } else {
      out.append(kReplacementCharacter);
      text.remove_prefix(consumed);
    }
  }
  return out;
}

}  // namespace goheap2pprof
