// Go build information (.go.buildinfo, written by cmd/link for Go 1.18+) and
// Go version strings.
//
//   if (auto bi = FindBuildInfo(elf_segment_bytes)) {
//     GoVersion v = ParseGoVersion(bi->go_version).value();  // {1, 22, 0}
//   }
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/bytes.h"
#include "base/expected.h"

namespace goheap2pprof {

struct GoVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  auto operator<=>(const GoVersion&) const = default;
};

// "go1.22.0", "go1.21", "go1.22rc1", "go1.22.0 X:boringcrypto",
// "devel go1.23-abcdef ..." -> {1, minor, patch}; nullopt if unrecognized.
std::optional<GoVersion> ParseGoVersion(std::string_view text);
std::string FormatGoVersion(const GoVersion& v);  // "go1.22.0"

struct BuildInfo {
  std::string go_version;  // runtime.buildVersion, e.g. "go1.22.0"
  std::string main_path;   // "path" line of modinfo, may be empty
  std::string modinfo;     // without the sentinels
};

// Parses a buildinfo blob that starts with the magic "\xff Go buildinf:".
// Only the inline-string format (flags & 2, Go 1.18+) is accepted; older
// formats yield kUnsupported. Throws kMalformed on inconsistent lengths.
BuildInfo ParseBuildInfo(Bytes blob);
// The same with the Error as a value.
Expected<BuildInfo> TryParseBuildInfo(Bytes blob);
// Searches data (a .go.buildinfo section or a writable PT_LOAD's file bytes)
// for the magic at 16-byte-aligned offsets, as debug/buildinfo does.
// Throws the first blob's Error if magics were found but none parsed.
std::optional<BuildInfo> FindBuildInfo(Bytes data);
// The same with that Error as a value.
Expected<std::optional<BuildInfo>> TryFindBuildInfo(Bytes data);

}  // namespace goheap2pprof
