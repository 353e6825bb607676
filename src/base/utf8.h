// Text that came from a target (its executable's path, comm, cgroup path,
// environment) is bytes, not UTF-8: a process may name itself anything. The
// agent puts such text into JSON (/targets, watch.jsonl), Prometheus label
// values and protobuf strings, all of which must be valid UTF-8; one
// invalid name must not break the answer for every process. ValidUtf8 makes
// any bytes valid by replacing each maximal ill-formed subsequence with
// U+FFFD (the Unicode Standard's recommended practice, ch. 3.9), so valid
// text is unchanged and a name stays recognisable.
//
//   labels["exe"] = ValidUtf8(facts.exe);   // "/opt/\xff\xfe" -> "/opt/\uFFFD\uFFFD"
#pragma once

#include <string>
#include <string_view>

namespace goheap2pprof {

// The replacement character, U+FFFD, in UTF-8.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// Whether text is well-formed UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF, no truncated sequence).
bool IsValidUtf8(std::string_view text);

// The length of the well-formed sequence at the start of text (1..4), or 0
// when it starts with an ill-formed one (text must not be empty).
size_t Utf8SequenceLength(std::string_view text);

// text with every maximal ill-formed subsequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view text);

// text as a log line may carry it to a terminal: ValidUtf8's, and besides,
// each byte of a control character that could move the cursor, retitle the
// window or start an escape sequence (C0 but tab, DEL, C1 whether encoded
// or a bare byte, which an 8-bit terminal reads as one) written as \xNN.
//
//   LogSafeUtf8("red\x1b[31m\xff") == "red\\x1b[31m\uFFFD" (the escape as four characters)
std::string LogSafeUtf8(std::string_view text);

// The JSON text of j (an nlohmann::json or ordered_json) with every string
// that is not UTF-8 written with U+FFFD: the default dump() throws on such a
// string, and one function or process name from a target must not fail an
// answer, a report or a role. Every JSON the project writes goes through it.
template <typename Json>
std::string JsonText(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace goheap2pprof
