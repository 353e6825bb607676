// MappedBytes: ranges, chunked reads on demand, and a file that shrinks under
// a ReadOnDemand reader (a kIo error, never SIGBUS).
#include "base/mapped_bytes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"

namespace goheap2pprof {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::vector<uint8_t>& bytes)
      : path_((std::filesystem::temp_directory_path() /
               ("goheap2pprof-mapped-bytes-" + std::to_string(getpid())))
                  .string()) {
    UniqueFd fd(open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// 300 KiB: several 64 KiB chunks and a partial last one; byte i is i * 7.
std::vector<uint8_t> Pattern() {
  std::vector<uint8_t> bytes(300 * 1024 + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  return bytes;
}

MappedBytes OpenOnDemand(const std::string& path) {
  return MappedBytes::OpenFile(path, "test file", MappedBytes::Access::kReadOnDemand,
                               ErrorKind::kIo)
      .value();
}

TEST(MappedBytesTest, ReadOnDemandGivesTheFileBytes) {
  const std::vector<uint8_t> want = Pattern();
  TempFile file(want);
  MappedBytes bytes = OpenOnDemand(file.path());
  ASSERT_EQ(bytes.size(), want.size());
  // Ranges inside one chunk, across chunk boundaries, and the tail.
  for (auto [off, len] : std::vector<std::pair<uint64_t, uint64_t>>{
           {10, 20}, {65530, 20}, {100000, 150000}, {want.size() - 5, 5}, {0, want.size()}}) {
    std::optional<Bytes> got = bytes.Range(off, len);
    ASSERT_TRUE(got) << off;
    EXPECT_TRUE(std::equal(got->begin(), got->end(), want.begin() + off)) << off;
  }
  std::vector<uint8_t> copy(1000);
  ASSERT_TRUE(bytes.CopyTo(131000, copy));
  EXPECT_TRUE(std::equal(copy.begin(), copy.end(), want.begin() + 131000));
  // Outside the file: absent, not an error.
  EXPECT_FALSE(bytes.Range(want.size() - 5, 6));
  EXPECT_FALSE(bytes.Range(~uint64_t{0}, 2));
  EXPECT_FALSE(bytes.CopyTo(want.size(), std::span<uint8_t>(copy.data(), 1)));
  EXPECT_TRUE(bytes.Range(want.size(), 0));
  // A move keeps the bytes where they are.
  const uint8_t* before = bytes.Range(10, 1)->data();
  MappedBytes moved = std::move(bytes);
  EXPECT_EQ(moved.Range(10, 1)->data(), before);
}

TEST(MappedBytesTest, ShrunkFileIsAnIoErrorNotASignal) {
  const std::vector<uint8_t> want = Pattern();
  TempFile file(want);
  MappedBytes bytes = OpenOnDemand(file.path());
  // Read the first chunk, then cut the file inside the second.
  std::optional<Bytes> head = bytes.Range(0, 100);
  ASSERT_TRUE(head);
  ASSERT_EQ(truncate(file.path().c_str(), 70000), 0);
  // What was read stays readable: it is our copy.
  EXPECT_EQ((*head)[99], static_cast<uint8_t>(99 * 7));
  try {
    std::optional<Bytes> tail = bytes.Range(200000, 100);
    // Touch it: a mapping of the file would die here with SIGBUS.
    unsigned sum = 0;
    for (uint8_t b : tail.value()) sum += b;
    ADD_FAILURE() << "read past the new end of the file succeeded (sum " << sum << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("test file shrank while being read"), std::string::npos)
        << e.what();
  }
  std::vector<uint8_t> copy(100);
  EXPECT_THROW(bytes.CopyTo(200000, copy), Error);
}

// Why target-controlled files are never mapped: touching a mapped page past
// the end of a file that shrank kills the reader.
TEST(MappedBytesTest, MappingOfAShrunkFileDiesWithSigbus) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer turns SIGBUS into a report and exit code";
#endif
  const std::vector<uint8_t> want = Pattern();
  TempFile file(want);
  MappedBytes mapped =
      MappedBytes::OpenFile(file.path(), "mapped", MappedBytes::Access::kMap, ErrorKind::kIo)
          .value();
  ASSERT_EQ(truncate(file.path().c_str(), 4096), 0);
  EXPECT_EXIT(
      {
        volatile uint8_t b = (*mapped.Range(200000, 1))[0];
        (void)b;
        _exit(0);
      },
      testing::KilledBySignal(SIGBUS), "");
}

TEST(MappedBytesTest, OpenFileErrorsAreValues) {
  Expected<MappedBytes> absent = MappedBytes::OpenFile(
      "/nonexistent/goheap2pprof", "absent", MappedBytes::Access::kMap, ErrorKind::kUsage);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().kind(), ErrorKind::kIo);
  Expected<MappedBytes> dir =
      MappedBytes::OpenFile("/", "the root", MappedBytes::Access::kReadOnDemand, ErrorKind::kUsage);
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(std::string(dir.error().what()).find("the root is not a regular file"),
            std::string::npos);
}

// Opening a file for reading can act (a watchdog device arms, /proc/kmsg
// consumes the log); a FIFO shows it here: a reader's open wakes the writer
// that waits in its own open. OpenFile must refuse the FIFO without opening
// it, so the writer still waits afterwards.
TEST(MappedBytesTest, ANonRegularFileIsRefusedWithoutBeingOpened) {
  const std::string fifo = (std::filesystem::temp_directory_path() /
                            ("goheap2pprof-mapped-bytes-fifo-" + std::to_string(getpid())))
                               .string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> writer_opened{false};
  std::thread writer([&] {
    UniqueFd w(open(fifo.c_str(), O_WRONLY | O_CLOEXEC));  // waits for a reader
    writer_opened = true;
  });
  // Let the writer reach its open and wait there first.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Expected<MappedBytes> got = MappedBytes::OpenFile(
      fifo, "the fifo", MappedBytes::Access::kReadOnDemand, ErrorKind::kMalformed);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind(), ErrorKind::kMalformed);
  EXPECT_NE(std::string(got.error().what()).find("not a regular file"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(writer_opened) << "OpenFile opened the FIFO, and its writer woke up";
  UniqueFd release(open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));  // lets it go
  writer.join();
  EXPECT_TRUE(writer_opened);
  unlink(fifo.c_str());
}

TEST(MappedBytesTest, MapAndOwnAndZeroed) {
  const std::vector<uint8_t> want = Pattern();
  TempFile file(want);
  MappedBytes mapped =
      MappedBytes::OpenFile(file.path(), "mapped", MappedBytes::Access::kMap, ErrorKind::kIo)
          .value();
  EXPECT_EQ(mapped.fd(), -1);
  Bytes all = mapped.All();
  EXPECT_TRUE(std::equal(all.begin(), all.end(), want.begin(), want.end()));
  MappedBytes owned = MappedBytes::Own(want);
  EXPECT_EQ(owned.Range(5, 3)->data()[0], want[5]);
  MappedBytes zeroed = MappedBytes::Zeroed(1 << 20, "scratch");
  zeroed.writable_data()[12345] = 9;
  EXPECT_EQ((*zeroed.Range(12344, 3))[0], 0);
  EXPECT_EQ((*zeroed.Range(12344, 3))[1], 9);
}

}  // namespace
}  // namespace goheap2pprof
