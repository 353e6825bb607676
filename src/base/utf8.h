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

// text with every maximal ill-formed subsequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view text);

}  // namespace goheap2pprof
