#include "gobin/buildinfo.h"

#include <cstring>

namespace goheap2pprof {

namespace {

constexpr std::string_view kBuildInfoMagic("\xff Go buildinf:", 14);
constexpr uint64_t kBuildInfoHeaderSize = 32;
constexpr uint8_t kFlagInlineStrings = 2;
// debug/buildinfo refuses strings longer than this; so do we, which also
// bounds what a corrupt length can make us copy.
constexpr uint64_t kMaxStringLen = 64 * 1024 * 1024;

// Reads decimal digits at text[*i]; nullopt if there are none or too many.
std::optional<int> ReadNumber(std::string_view text, size_t* i) {
  size_t start = *i;
  int value = 0;
  while (*i < text.size() && text[*i] >= '0' && text[*i] <= '9') {
    if (*i - start >= 6) return std::nullopt;
    value = value * 10 + (text[*i] - '0');
    ++*i;
  }
  if (*i == start) return std::nullopt;
  return value;
}

// A uvarint-length-prefixed string at *off.
Expected<std::string> ReadInlineString(const ByteView& blob, uint64_t* off, std::string_view what) {
  Expected<uint64_t> len = blob.TryUvarint(off);
  if (!len) return len.error();
  if (*len > kMaxStringLen || !blob.Has(*off, *len)) {
    return Error(ErrorKind::kMalformed, "Go build info: ", what, " length ", *len, " at offset ",
                 Hex(*off), " exceeds the ", blob.size(), "-byte blob");
  }
  std::string s(reinterpret_cast<const char*>(blob.data().data() + *off), *len);
  *off += *len;
  return s;
}

}  // namespace

std::optional<GoVersion> ParseGoVersion(std::string_view text) {
  // Development toolchains report "devel go1.23-abcdef Tue ..."; the version
  // they are building towards is what decides the layouts.
  if (text.starts_with("devel ")) text.remove_prefix(6);
  if (!text.starts_with("go")) return std::nullopt;
  size_t i = 2;
  GoVersion v;
  std::optional<int> major = ReadNumber(text, &i);
  if (!major || i >= text.size() || text[i] != '.') return std::nullopt;
  ++i;
  std::optional<int> minor = ReadNumber(text, &i);
  if (!minor) return std::nullopt;
  v.major = *major;
  v.minor = *minor;
  // "go1.21" and "go1.22rc1" have no patch number; "go1.22.0" does.
  if (i < text.size() && text[i] == '.') {
    ++i;
    std::optional<int> patch = ReadNumber(text, &i);
    if (!patch) return std::nullopt;
    v.patch = *patch;
  }
  return v;
}

std::string FormatGoVersion(const GoVersion& v) {
  return "go" + std::to_string(v.major) + "." + std::to_string(v.minor) + "." +
         std::to_string(v.patch);
}

BuildInfo ParseBuildInfo(Bytes data) { return TryParseBuildInfo(data).value(); }

Expected<BuildInfo> TryParseBuildInfo(Bytes data) {
  ByteView blob(data, "Go build info");
  if (!blob.Has(0, kBuildInfoHeaderSize) ||
      std::memcmp(data.data(), kBuildInfoMagic.data(), kBuildInfoMagic.size()) != 0) {
    return Error(ErrorKind::kMalformed, "Go build info: missing magic or truncated header (",
                 data.size(), " bytes)");
  }
  uint8_t flags = blob.U8(15);  // inside the header checked above
  if ((flags & kFlagInlineStrings) == 0) {
    return Error(ErrorKind::kUnsupported,
                 "Go build info uses the pointer format of Go 1.17 and older (flags ", Hex(flags),
                 "); Go 1.18+ is required");
  }
  // Flag bit 0 (big-endian) only matters for the pointer format; inline
  // strings read the same either way, and the ELF layer rejects such files.
  uint64_t off = kBuildInfoHeaderSize;
  BuildInfo info;
  Expected<std::string> version = ReadInlineString(blob, &off, "Go version");
  if (!version) return version.error();
  info.go_version = std::move(*version);
  Expected<std::string> modinfo = ReadInlineString(blob, &off, "module info");
  if (!modinfo) return modinfo.error();
  std::string mod = std::move(*modinfo);
  // cmd/go frames modinfo with 16-byte sentinels; strip them as
  // debug/buildinfo does.
  if (mod.size() >= 33 && mod[mod.size() - 17] == '\n') {
    mod = mod.substr(16, mod.size() - 32);
  }
  info.modinfo = std::move(mod);
  std::string_view rest = info.modinfo;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    if (line.starts_with("path\t")) {
      info.main_path = std::string(line.substr(5));
      break;
    }
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return info;
}

std::optional<BuildInfo> FindBuildInfo(Bytes data) { return TryFindBuildInfo(data).value(); }

Expected<std::optional<BuildInfo>> TryFindBuildInfo(Bytes data) {
  // debug/buildinfo looks only at 16-byte-aligned offsets. The first blob
  // that parses wins; if magics were found but none parsed, report why.
  std::optional<Error> first_error;
  for (uint64_t off = 0; off + kBuildInfoHeaderSize <= data.size(); off += 16) {
    if (std::memcmp(data.data() + off, kBuildInfoMagic.data(), kBuildInfoMagic.size()) != 0) {
      continue;
    }
    Expected<BuildInfo> info = TryParseBuildInfo(data.subspan(off));
    if (info) return std::optional<BuildInfo>(std::move(info).value());
    if (!first_error) first_error = info.error();
  }
  if (first_error) return std::move(*first_error);
  return std::optional<BuildInfo>();
}

}  // namespace goheap2pprof
