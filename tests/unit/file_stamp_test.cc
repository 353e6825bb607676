// FileStamp: what the caches of mapped files' build IDs, discovery's
// executables and a worker's analyses key a file by.
#include "proc/file_stamp.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace goheap2pprof {
namespace {

class FileStampTest : public ::testing::Test {
 protected:
  static std::string Scratch(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            ("goheap2pprof-file-stamp-" + std::to_string(getpid()) + "-" + name))
        .string();
  }
  static void Write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
};

TEST_F(FileStampTest, NamesTheFileAsStatDescribesIt) {
  const std::string path = Scratch("stat");
  Write(path, "twelve bytes");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  const std::optional<FileStamp> stamp = FileStamp::OfPath(path);
  ASSERT_TRUE(stamp);
  EXPECT_EQ(stamp->dev, st.st_dev);
  EXPECT_EQ(stamp->inode, st.st_ino);
  EXPECT_EQ(stamp->size, 12u);
  EXPECT_EQ(stamp->mtime_ns, st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec);
  EXPECT_EQ(stamp->ctime_ns, st.st_ctim.tv_sec * 1'000'000'000 + st.st_ctim.tv_nsec);
  EXPECT_EQ(*stamp, FileStamp::Of(st));
  EXPECT_EQ(stamp->ToString(), std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) +
                                   ":12:" + std::to_string(stamp->mtime_ns) + ":" +
                                   std::to_string(stamp->ctime_ns));
  std::filesystem::remove(path);
  EXPECT_FALSE(FileStamp::OfPath(path));
}

TEST_F(FileStampTest, ARewriteInPlaceOrAChangeOfModeIsAnotherStamp) {
  const std::string path = Scratch("rewrite");
  Write(path, "aaaa");
  const FileStamp first = *FileStamp::OfPath(path);
  // File times come from a clock that moves once a kernel tick (4 ms at
  // HZ=250): wait a few.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  Write(path, "bbbb");  // same inode, same size
  const FileStamp rewritten = *FileStamp::OfPath(path);
  EXPECT_EQ(rewritten.inode, first.inode);
  EXPECT_EQ(rewritten.size, first.size);
  EXPECT_NE(rewritten, first);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  // chmod moves only the ctime, which the stamp holds.
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  const FileStamp chmodded = *FileStamp::OfPath(path);
  EXPECT_EQ(chmodded.mtime_ns, rewritten.mtime_ns);
  EXPECT_NE(chmodded.ctime_ns, rewritten.ctime_ns);
  EXPECT_NE(chmodded, rewritten);
  std::filesystem::remove(path);
}

TEST_F(FileStampTest, AFileIsSettledASecondAfterItsLastChange) {
  const std::string path = Scratch("settled");
  Write(path, "new");
  EXPECT_FALSE(FileStamp::OfPath(path)->Settled());
  FileStamp old = *FileStamp::OfPath(path);
  old.ctime_ns -= 2'000'000'000;
  EXPECT_TRUE(old.Settled());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace goheap2pprof
