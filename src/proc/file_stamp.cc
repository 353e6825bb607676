#include "proc/file_stamp.h"

#include <ctime>

namespace goheap2pprof {

namespace {

int64_t Nanoseconds(const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

}  // namespace

FileStamp FileStamp::Of(const struct stat& st) {
  return FileStamp{.dev = static_cast<uint64_t>(st.st_dev),
                   .inode = static_cast<uint64_t>(st.st_ino),
                   .size = static_cast<uint64_t>(st.st_size),
                   .mtime_ns = Nanoseconds(st.st_mtim),
                   .ctime_ns = Nanoseconds(st.st_ctim)};
}

std::optional<FileStamp> FileStamp::OfPath(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return Of(st);
}

std::string FileStamp::ToString() const {
  return std::to_string(dev) + ":" + std::to_string(inode) + ":" + std::to_string(size) + ":" +
         std::to_string(mtime_ns) + ":" + std::to_string(ctime_ns);
}

bool FileStamp::Settled() const {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return ctime_ns + 1'000'000'000 < Nanoseconds(now);
}

}  // namespace goheap2pprof
