// gzip and the atomic output writer.
#include "pprof/output.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <span>

#include "base/error.h"

namespace goheap2pprof {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class OutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("goheap2pprof-out-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(Gzip, RoundTripsAndHasGzipHeader) {
  std::string data(100000, 'x');
  for (size_t i = 0; i < data.size(); i += 7) data[i] = static_cast<char>(i);
  std::string gz = Gzip(data);
  ASSERT_GE(gz.size(), 10u);
  EXPECT_EQ(static_cast<uint8_t>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<uint8_t>(gz[1]), 0x8b);
  EXPECT_EQ(Gunzip(gz), data);
  EXPECT_THROW(Gunzip(gz.substr(0, gz.size() / 2)), Error);
  EXPECT_THROW(Gunzip("not gzip at all"), Error);
}

// Reads all of in, n bytes at a time.
std::string ReadAll(GunzipStream& in, size_t n) {
  std::string out;
  std::string chunk(n, '\0');
  while (size_t got = in.Read(std::span<char>(chunk.data(), chunk.size())))
    out.append(chunk, 0, got);
  return out;
}

TEST(GunzipStream, InflatesAPieceAtATime) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "#\t0x" + std::to_string(i) + "\tmain.f\n";
  const std::string gz = Gzip(text);
  GunzipStream small(gz);
  EXPECT_TRUE(ReadAll(small, 7) == text);
  // Concatenated members are one stream, as Gunzip reads them.
  const std::string two = gz + Gzip("more");
  GunzipStream both(two);
  EXPECT_TRUE(ReadAll(both, 65536) == text + "more");
}

TEST(GunzipStream, RefusesCorruptAndTruncatedStreams) {
  const std::string gz = Gzip(std::string(1 << 20, 'x'));
  const std::string truncated = gz.substr(0, gz.size() / 2);
  GunzipStream cut(truncated);
  EXPECT_THROW(ReadAll(cut, 4096), Error);
  std::string corrupt = gz;
  corrupt[corrupt.size() / 2] = static_cast<char>(corrupt[corrupt.size() / 2] ^ 0x5a);
  corrupt[12] = static_cast<char>(0xff);
  GunzipStream bad(corrupt);
  EXPECT_THROW(ReadAll(bad, 4096), Error);
}

TEST_F(OutputTest, WritesAtomicallyAndLeavesNoTemporaries) {
  fs::path out = dir_ / "heap.pb.gz";
  WriteOutput(out, "first");
  WriteOutput(out, "second");
  EXPECT_EQ(ReadAll(out), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

// Sets the umask for one scope and restores it.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(umask(mask)) {}
  ~ScopedUmask() { umask(old_); }

 private:
  mode_t old_;
};

mode_t ModeOf(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

TEST_F(OutputTest, NewFilesGet0666LessTheUmask) {
  // As os.Create (go tool pprof -output) creates files.
  {
    ScopedUmask mask(022);
    WriteOutput(dir_ / "a.json", "{}");
    WriteProfile(dir_ / "a.pb.gz", pb::Profile());
  }
  EXPECT_EQ(ModeOf(dir_ / "a.json"), 0644u);
  EXPECT_EQ(ModeOf(dir_ / "a.pb.gz"), 0644u);
  {
    ScopedUmask mask(007);
    WriteOutput(dir_ / "b.json", "{}");
    WriteProfile(dir_ / "b.pb.gz", pb::Profile());
  }
  EXPECT_EQ(ModeOf(dir_ / "b.json"), 0660u);
  EXPECT_EQ(ModeOf(dir_ / "b.pb.gz"), 0660u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 4);
}

TEST_F(OutputTest, MissingDirectoryFailsBeforeReading) {
  try {
    CheckOutputWritable((dir_ / "nope" / "heap.pb.gz").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_THROW(CheckOutputWritable(dir_.string()), Error);  // a directory
  EXPECT_NO_THROW(CheckOutputWritable((dir_ / "heap.pb.gz").string()));
  EXPECT_NO_THROW(CheckOutputWritable("-"));
}

TEST_F(OutputTest, FullDeviceKeepsExistingFile) {
  // /dev/full fails every write; a failed write must leave the old file alone.
  fs::path out = dir_ / "keep.pb.gz";
  WriteOutput(out, "precious");
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "/dev/full is not available here";
  EXPECT_THROW(WriteOutput("/dev/full", std::string(1 << 16, 'x')), Error);
  EXPECT_EQ(ReadAll(out), "precious");
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

pb::Profile SmallProfile() {
  pb::Profile p;
  p.add_string_table("");
  p.add_string_table("space");
  p.mutable_period_type()->set_type(1);
  p.set_period(524288);
  for (int i = 0; i < 5000; ++i) {
    pb::Sample* s = p.add_sample();
    for (int v = 0; v < 4; ++v) s->add_value(i * 10 + v);
    s->add_location_id(i % 7 + 1);
  }
  return p;
}

TEST_F(OutputTest, WriteProfileStreamsTheSameBytesAsEncodeProfile) {
  pb::Profile p = SmallProfile();
  fs::path out = dir_ / "streamed.pb.gz";
  WriteProfile(out.string(), p);
  std::string streamed = ReadAll(out);
  EXPECT_EQ(static_cast<uint8_t>(streamed[0]), 0x1f);
  EXPECT_EQ(Gunzip(streamed), Gunzip(EncodeProfile(p)));
  pb::Profile back;
  ASSERT_TRUE(back.ParseFromString(Gunzip(streamed)));
  EXPECT_EQ(back.sample_size(), 5000);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(OutputTest, WriteProfileToAFullDeviceFails) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "/dev/full is not available here";
  try {
    WriteProfile("/dev/full", SmallProfile());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

// Whether gz is exactly one gzip member whose data is want (zlib itself
// decodes it, stopping at the member's end).
::testing::AssertionResult OneMemberOf(const std::string& gz, const std::string& want) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return ::testing::AssertionFailure() << "inflateInit2";
  std::string out(want.size() + 1, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const size_t produced = out.size() - z.avail_out;
  const uInt left = z.avail_in;
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return ::testing::AssertionFailure() << "inflate: " << rc;
  if (left != 0) return ::testing::AssertionFailure() << left << " bytes after the first member";
  out.resize(produced);
  if (out != want) return ::testing::AssertionFailure() << "different data";
  return ::testing::AssertionSuccess();
}

// Data across chunk boundaries (the writer deflates 1 MiB chunks apart).
TEST(Gzip, IsOneMemberWhateverTheChunkBoundaries) {
  constexpr size_t kMiB = 1 << 20;
  for (size_t size : {size_t{0}, size_t{1}, kMiB - 1, kMiB, kMiB + 1, 2 * kMiB, 3 * kMiB + 12345}) {
    std::string data(size, '\0');
    uint32_t x = 12345;
    for (size_t i = 0; i < size; ++i) {
      x = x * 1103515245 + 12345;
      data[i] = static_cast<char>(i % 97 < 60 ? 'a' + i % 7 : x >> 24);  // partly compressible
    }
    const std::string gz = Gzip(data);
    EXPECT_TRUE(OneMemberOf(gz, data)) << "size " << size;
    EXPECT_EQ(Gunzip(gz), data) << "size " << size;
  }
}

// The compressor's worst cases: chunks it cannot shrink (stored blocks,
// which must fit the output it is given) and chunks of one repeated byte.
TEST(Gzip, IncompressibleAndUniformChunksRoundTrip) {
  constexpr size_t kMiB = 1 << 20;
  for (size_t size : {size_t{70000}, kMiB, 3 * kMiB + 777}) {
    std::string random(size, '\0');
    uint64_t x = 88172645463325252ull;
    for (char& c : random) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>(x >> 56);
    }
    const std::string gz = Gzip(random);
    EXPECT_TRUE(OneMemberOf(gz, random)) << "size " << size;
    // Stored blocks: 5 bytes per 64 KiB, a header and a trailer.
    EXPECT_LE(gz.size(), size + 5 * (size / 65535 + 4) * 4 + 64) << "size " << size;
    const std::string uniform(size, 'x');
    const std::string gz_uniform = Gzip(uniform);
    EXPECT_TRUE(OneMemberOf(gz_uniform, uniform)) << "size " << size;
    EXPECT_LT(gz_uniform.size(), size / 100) << "size " << size;
  }
}

TEST(Gzip, GunzipReadsConcatenatedMembers) {
  EXPECT_EQ(Gunzip(Gzip("first ") + Gzip("second")), "first second");
}

// A gzip stream's last four bytes, its ISIZE, set to `isize`.
std::string WithIsize(std::string gz, uint32_t isize) {
  for (int i = 0; i < 4; ++i) gz[gz.size() - 4 + i] = static_cast<char>(isize >> (8 * i));
  return gz;
}

ErrorKind GunzipErrorKind(std::string_view gz, size_t max_size = size_t{1} << 31) {
  try {
    Gunzip(gz, max_size);
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kInternal;
}

// Gunzip takes one whole member by libdeflate, sized by the untrusted ISIZE
// trailer, and leaves everything else to zlib: a wrong ISIZE, a limit, a
// corrupt CRC or trailing bytes end as they ended with zlib alone.
TEST(Gzip, GunzipTrustsNoTrailer) {
  const std::string data(300000, 'x');  // about 1000 to 1
  const std::string gz = Gzip(data);
  ASSERT_EQ(Gunzip(gz), data);
  const auto size = static_cast<uint32_t>(data.size());
  for (uint32_t lie : {size - 1, size + 1, 0u, size * 2, UINT32_MAX}) {
    EXPECT_EQ(GunzipErrorKind(WithIsize(gz, lie)), ErrorKind::kMalformed) << lie;
  }
  EXPECT_EQ(GunzipErrorKind(gz, data.size() - 1), ErrorKind::kMalformed);
  EXPECT_EQ(Gunzip(gz, data.size()), data);
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 1;
  EXPECT_EQ(GunzipErrorKind(bad_crc), ErrorKind::kMalformed);
  EXPECT_EQ(GunzipErrorKind(gz + "junk"), ErrorKind::kMalformed);
  EXPECT_EQ(Gunzip(Gzip("")), "");
  EXPECT_EQ(Gunzip(gz + Gzip("y")), data + "y");
}

// TryGunzip returns what Gunzip would throw, so that a caller can say whose
// bytes were bad without a catch (growth names the file).
TEST(Gzip, TryGunzipReturnsTheErrorInsteadOfThrowing) {
  const std::string data(300000, 'x');
  const std::string gz = Gzip(data);
  const Expected<std::string> good = TryGunzip(gz, data.size());
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(*good, data);
  for (const Expected<std::string>& bad :
       {TryGunzip(gz.substr(0, gz.size() / 2), data.size()), TryGunzip(gz, data.size() - 1),
        TryGunzip("not gzip at all", data.size())}) {
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().kind(), ErrorKind::kMalformed) << bad.error().what();
  }
  EXPECT_NE(std::string(TryGunzip(gz, 1000).error().what()).find("expands too far"),
            std::string::npos);
}

TEST_F(OutputTest, AProfileOfManyChunksIsWrittenWhole) {
  pb::Profile p;
  p.add_string_table("");
  for (int i = 0; i < 200000; ++i) {
    pb::Sample* s = p.add_sample();
    for (int v = 0; v < 4; ++v) s->add_value(int64_t{i} * 7919 + v);
    for (int l = 0; l < 6; ++l) s->add_location_id((i * 31 + l) % 5000 + 1);
  }
  std::string raw;
  ASSERT_TRUE(p.SerializeToString(&raw));
  ASSERT_GT(raw.size(), size_t{4} << 20);
  fs::path out = dir_ / "big.pb.gz";
  WriteProfile(out.string(), p);
  EXPECT_TRUE(OneMemberOf(ReadAll(out), raw));
}

}  // namespace
}  // namespace goheap2pprof
