// The one way an option writes a number of bytes: a bare count of bytes
// ("1048576", what the byte options took before they took units), or a
// decimal number with a unit ("64MiB", "512K", "1.5G"). K, M, G and T are
// powers of 1024, whatever the spelling: KiB, KB and K (also k) are one unit,
// since a person who writes "64MB" for a memory limit means 64 MiB. Every size
// option (--worker-memory, --max-capture-bytes, --max-queue-bytes,
// --max-profile-bytes, watch's --rss-above) parses through here.
//
//   std::optional<uint64_t> n = ParseByteSize("64MiB");  // 67108864
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace goheap2pprof {

// nullopt for anything else: no sign, no spaces, no exponent, nothing at or
// above 2^63 (a fraction of a byte is dropped: "1.5B" is 1).
std::optional<uint64_t> ParseByteSize(std::string_view text);

}  // namespace goheap2pprof
