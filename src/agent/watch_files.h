// What `watch` leaves in its directory: profiles named
// <program>-<pid>-<UTC time>-<reason>.heap.pb.gz, the newest --max-files of
// them kept (only files this watch wrote are ever deleted), and watch.jsonl,
// one JSON object per line, appended and flushed line by line so a reader
// (or a post-mortem) sees every record that was made.
//
//   std::string name = ProfileFileName("server", 42, system_clock::now(), "above90");
//   FileRotation rot(10);
//   for (const std::string& old : rot.Add(dir + "/" + name)) ...   // deleted
//   WatchLog log(dir + "/watch.jsonl");
//   log.Append({{"pid", 42}, {"reason", "above90"}, ...});
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"

namespace goheap2pprof {

// "20261130T214501.123Z": UTC, millisecond precision, sortable, no ':' (which
// some tools and filesystems dislike).
std::string UtcFileStamp(std::chrono::system_clock::time_point t);
// "2026-11-30T21:45:01.123Z": for the JSON records.
std::string UtcIsoTime(std::chrono::system_clock::time_point t);
// <program>-<pid>-<stamp>-<reason>.heap.pb.gz, with '/' and other unsafe
// bytes of program and reason replaced by '_'.
std::string ProfileFileName(std::string_view program, pid_t pid,
                            std::chrono::system_clock::time_point t, std::string_view reason);

// The files this watch wrote, oldest first. Add returns the files to delete
// so that at most max_files remain; Delete removes one only if it is still
// the file we wrote (same device and inode), so a file replaced by someone
// else since is left alone.
class FileRotation {
 public:
  explicit FileRotation(size_t max_files) : max_files_(max_files) {}
  struct Written {
    std::string path;
    uint64_t dev = 0;
    uint64_t ino = 0;
  };
  // Records a file just written (stat'ed now); returns those to delete.
  std::vector<Written> Add(const std::string& path);
  // Removes the file if it is still ours; returns false (and removes
  // nothing) otherwise.
  static bool Delete(const Written& w);
  size_t size() const { return files_.size(); }

 private:
  size_t max_files_;
  std::deque<Written> files_;
};

// DIR/watch.jsonl, opened for appending.
class WatchLog {
 public:
  explicit WatchLog(const std::string& path);
  // Writes one line with a single write(2) (O_APPEND), so lines never
  // interleave; throws kIo on failure.
  void Append(const nlohmann::json& record);

 private:
  std::string path_;
  UniqueFd fd_;
};

}  // namespace goheap2pprof
