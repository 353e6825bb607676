// SHA-256 (FIPS 180-4), for the Content-Security-Policy of the flame graph
// page: the page allows only the script whose hash it names, so that text
// from a target that escaped its escaping still could not run. Written here
// rather than taken from OpenSSL because the layers below the agent do not
// link it, and this one digest of a constant script is all they need.
//
//   std::string b64 = Base64(Sha256("abc"));  // "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace goheap2pprof {

std::array<uint8_t, 32> Sha256(std::string_view data);

// Standard base64 (RFC 4648 section 4) with padding.
std::string Base64(std::string_view bytes);
std::string Base64(const std::array<uint8_t, 32>& bytes);

}  // namespace goheap2pprof
