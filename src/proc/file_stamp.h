// What identifies a file's contents without reading them: its device and
// inode, its size, and its modification and status-change times. A file
// rewritten in place keeps its inode and may keep its size; any change to
// its bytes or its metadata moves its ctime. The caches that remember
// something of a file by it: the build IDs of a target's mapped files
// (elf/process_files.cc), discovery's record of each executable
// (agent/common/discovery.cc) and a worker's analyses (agent/worker).
//
//   std::optional<FileStamp> stamp = FileStamp::OfPath("/proc/42/exe");
//   if (stamp && stamp->Settled()) cache.Add(*stamp, what_was_read);
#pragma once

#include <sys/stat.h>

#include <compare>
#include <cstdint>
#include <optional>
#include <string>

namespace goheap2pprof {

struct FileStamp {
  uint64_t dev = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  auto operator<=>(const FileStamp&) const = default;

  static FileStamp Of(const struct stat& st);
  // nullopt when `path` cannot be stat'ed (gone, or not ours to see).
  static std::optional<FileStamp> OfPath(const std::string& path);

  // "dev:inode:size:mtime_ns:ctime_ns", for keys that are strings.
  std::string ToString() const;

  // Whether the file last changed more than a second ago. The kernel takes
  // file times from a clock that moves once a tick: a file changed again
  // within the tick its stamp was taken in can keep that stamp, so a cache
  // remembers only a settled file (a library on disk changed long ago).
  bool Settled() const;
};

}  // namespace goheap2pprof
