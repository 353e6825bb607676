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

// A control character a terminal may act on: C0 but tab, and DEL.
bool IsC0OrDel(uint8_t byte) { return (byte < 0x20 && byte != '\t') || byte == 0x7F; }

void AppendEscaped(std::string& out, std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char c : bytes) {
    const auto byte = static_cast<uint8_t>(c);
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  }
}

}  // namespace

size_t Utf8SequenceLength(std::string_view text) {
  size_t consumed = 0;
  return NextSequence(text, &consumed);
}

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

std::string LogSafeUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t consumed = 0;
    const size_t n = NextSequence(text, &consumed);
    const auto lead = static_cast<uint8_t>(text[0]);
    const size_t taken = n > 0 ? n : consumed;
    if (n == 1 && IsC0OrDel(lead)) {
      AppendEscaped(out, text.substr(0, 1));
    } else if (n == 2 && lead == 0xC2 && static_cast<uint8_t>(text[1]) < 0xA0) {
      AppendEscaped(out, text.substr(0, 2));  // U+0080..U+009F, C1
    } else if (n > 0) {
      out.append(text.substr(0, n));
    } else if (consumed == 1 && lead >= 0x80 && lead <= 0x9F) {
      AppendEscaped(out, text.substr(0, 1));  // a bare C1 byte
    } else {
      out.append(kReplacementCharacter);
    }
    text.remove_prefix(taken);
  }
  return out;
}

}  // namespace goheap2pprof
