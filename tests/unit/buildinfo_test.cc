// Go build-info blobs (good, truncated, bad flags) and Go version strings.
#include "gobin/buildinfo.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace goheap2pprof {
namespace {

void AppendUvarint(std::vector<uint8_t>& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  b.push_back(static_cast<uint8_t>(v));
}

// The 16-byte sentinels cmd/go puts around modinfo (kModEnd holds a NUL).
const std::string kModStart("\x30\x77\xaf\x0c\x92\x74\x08\x02\x41\xe1\xc1\x07\xe6\xd6\x18\xe6", 16);
const std::string kModEnd("\xf9\x32\x43\x31\x86\x18\x20\x72\x00\x82\x42\x10\x41\x16\xd8\xf2", 16);

// A blob as cmd/link writes it for Go 1.18+.
std::vector<uint8_t> Blob(std::string_view version, std::string_view mod, uint8_t flags = 2) {
  std::string magic("\xff Go buildinf:", 14);
  std::vector<uint8_t> b(magic.begin(), magic.end());
  b.push_back(8);      // ptrSize
  b.push_back(flags);  // flags
  b.resize(32, 0);
  AppendUvarint(b, version.size());
  b.insert(b.end(), version.begin(), version.end());
  AppendUvarint(b, mod.size());
  b.insert(b.end(), mod.begin(), mod.end());
  b.resize((b.size() + 15) / 16 * 16, 0);
  return b;
}

TEST(BuildInfoTest, ParsesInlineStringFormat) {
  std::string mod = kModStart +
                    "path\texample.com/cmd/x\nmod\texample.com\t(devel)\t\n"
                    "build\tCGO_ENABLED=0\n" +
                    kModEnd;
  BuildInfo bi = ParseBuildInfo(Blob("go1.22.0", mod));
  EXPECT_EQ(bi.go_version, "go1.22.0");
  EXPECT_EQ(bi.main_path, "example.com/cmd/x");
  EXPECT_EQ(bi.modinfo.rfind("path\t", 0), 0u);
  EXPECT_EQ(bi.modinfo.back(), '\n');
}

TEST(BuildInfoTest, EmptyModinfo) {
  BuildInfo bi = ParseBuildInfo(Blob("go1.19.8", ""));
  EXPECT_EQ(bi.go_version, "go1.19.8");
  EXPECT_EQ(bi.main_path, "");
  EXPECT_EQ(bi.modinfo, "");
}

TEST(BuildInfoTest, BadFlagsAndTruncation) {
  try {
    ParseBuildInfo(Blob("go1.17", "", 0));  // pointer format
    ADD_FAILURE() << "expected kUnsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
  std::vector<uint8_t> good = Blob("go1.22.0", kModStart + "path\tx\n" + kModEnd);
  // Every truncation throws kMalformed (and never reads past the bytes).
  size_t min_ok = 32 + 1 + 8 + 1 + 16 + 7 + 16;
  for (size_t n = 0; n < min_ok; ++n) {
    try {
      ParseBuildInfo(Bytes(good.data(), n));
      ADD_FAILURE() << "truncated to " << n << " parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kMalformed) << n;
    }
  }
  // A length that runs past the end.
  std::vector<uint8_t> bad = good;
  bad[32] = 0x7f;
  EXPECT_THROW(ParseBuildInfo(bad), Error);
  // A varint that never ends.
  bad = good;
  for (size_t i = 32; i < bad.size(); ++i) bad[i] = 0xff;
  EXPECT_THROW(ParseBuildInfo(bad), Error);
  // Wrong magic.
  bad = good;
  bad[1] = 'X';
  EXPECT_THROW(ParseBuildInfo(bad), Error);
}

TEST(BuildInfoTest, FindsAlignedBlobOnly) {
  std::vector<uint8_t> data(64, 0xaa);
  std::vector<uint8_t> blob = Blob("go1.21.3", "");
  data.insert(data.end(), blob.begin(), blob.end());
  std::optional<BuildInfo> bi = FindBuildInfo(data);
  ASSERT_TRUE(bi);
  EXPECT_EQ(bi->go_version, "go1.21.3");

  std::vector<uint8_t> misaligned(8, 0);
  misaligned.insert(misaligned.end(), blob.begin(), blob.end());
  EXPECT_FALSE(FindBuildInfo(misaligned));
  EXPECT_FALSE(FindBuildInfo(std::vector<uint8_t>(100, 0)));
  EXPECT_FALSE(FindBuildInfo(Bytes()));

  // A magic whose blob is corrupt is reported, not silently skipped.
  std::vector<uint8_t> corrupt(blob.begin(), blob.begin() + 33);
  corrupt[32] = 0x7f;
  EXPECT_THROW(FindBuildInfo(corrupt), Error);
}

TEST(BuildInfoTest, ParseGoVersion) {
  EXPECT_EQ(ParseGoVersion("go1.22.0"), (GoVersion{1, 22, 0}));
  EXPECT_EQ(ParseGoVersion("go1.19.8"), (GoVersion{1, 19, 8}));
  EXPECT_EQ(ParseGoVersion("go1.21"), (GoVersion{1, 21, 0}));
  EXPECT_EQ(ParseGoVersion("go1.22rc1"), (GoVersion{1, 22, 0}));
  EXPECT_EQ(ParseGoVersion("go1.22.0 X:boringcrypto"), (GoVersion{1, 22, 0}));
  EXPECT_EQ(ParseGoVersion("go1.27.3"), (GoVersion{1, 27, 3}));
  EXPECT_EQ(ParseGoVersion("devel go1.23-abcdef Tue Jan 2 15:04:05 2024 +0000"),
            (GoVersion{1, 23, 0}));
  EXPECT_FALSE(ParseGoVersion(""));
  EXPECT_FALSE(ParseGoVersion("go"));
  EXPECT_FALSE(ParseGoVersion("go1"));
  EXPECT_FALSE(ParseGoVersion("go1."));
  EXPECT_FALSE(ParseGoVersion("go1.x"));
  EXPECT_FALSE(ParseGoVersion("devel +abcdef"));
  EXPECT_FALSE(ParseGoVersion("1.22.0"));
  EXPECT_FALSE(ParseGoVersion("go1.99999999999"));
  EXPECT_EQ(FormatGoVersion({1, 22, 3}), "go1.22.3");
  EXPECT_LT((GoVersion{1, 19, 8}), (GoVersion{1, 20, 0}));
}

}  // namespace
}  // namespace goheap2pprof
