// What `watch` leaves in its directory: profiles named
// <program>-<pid>-<UTC time>-<reason>.heap.pb.gz, each with the goroutine
// profile captured just after it beside it, named the same with
// .goroutine.pb.gz (a goroutine leak explains stack memory), the newest
// --max-files heap profiles (and their goroutine profiles) kept (only files this watch wrote are
// ever deleted), and watch.jsonl, one JSON object per line, appended and flushed line by line so a
// reader (or a post-mortem) sees every record that was made.
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
// The goroutine profile's name beside the heap profile `heap_name`
// (ProfileFileName's): .heap.pb.gz becomes .goroutine.pb.gz.
std::string GoroutineFileName(std::string_view heap_name);
// <program>-<pid>-growth, the growth report's files' name before the
// extension, with program's unsafe bytes replaced as above.
std::string GrowthReportBaseName(std::string_view program, pid_t pid);

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
    // Files written beside it (its goroutine profile), deleted with it.
    std::vector<Written> companions;
  };
  // Records a file just written (stat'ed now); returns those to delete.
  std::vector<Written> Add(const std::string& path);
  // Records a file written beside the newest one Add recorded, which goes
  // when that one goes. Nothing is recorded before the first Add.
  void AddCompanion(const std::string& path);
  // Removes the file if it is still ours; returns false (and removes
  // nothing) otherwise.
  static bool Delete(const Written& w);
  size_t size() const { return files_.size(); }

 private:
  size_t max_files_;
  std::deque<Written> files_;
};

// The output directory, checked once and held open: every file of the watch
// is created relative to this descriptor, so a rename of the path does not
// redirect us. watch runs as root, and another local user who can write to
// the directory could otherwise plant a symbolic link or a FIFO under the
// name of our next file and make us overwrite a file of theirs choosing, or
// block forever in open(2).
//
//   OutputDir dir("/var/tmp/heap");           // refuses an unsafe directory
//   dir.WriteAtomically("x.heap.pb.gz", bytes);
class OutputDir {
 public:
  // Throws kIo if path is not a directory, kUsage if others may write to
  // it without the sticky bit (they could replace our files) or if it
  // belongs to neither root nor us.
  explicit OutputDir(const std::string& path);

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }

  // Writes bytes to a fresh temporary file (O_CREAT | O_EXCL | O_NOFOLLOW:
  // never a planted one), flushes it and renames it over name (which
  // replaces a planted link or FIFO, never writes through it). Throws kIo
  // (e.g. a full disk) and then leaves no temporary file behind.
  void WriteAtomically(const std::string& name, std::string_view bytes) const;

  // Opens name for appending, creating it if needed; throws kIo unless it
  // is a regular file with one link that we may append to (a symbolic link,
  // a FIFO or a device under that name is refused, without blocking).
  UniqueFd OpenForAppend(const std::string& name) const;

 private:
  std::string path_;
  UniqueFd fd_;
};

// DIR/watch.jsonl, opened for appending.
class WatchLog {
 public:
  WatchLog(const OutputDir& dir, const std::string& name);
  // Writes one line with a single write(2) (O_APPEND), so lines never
  // interleave. A failure (a full disk) loses this record, not the watch:
  // the file is cut back to its last whole line, the loss is counted, and
  // false is returned with the reason in last_error(). The next record that
  // can be written is preceded by a "records-lost" line with the count.
  bool Append(const nlohmann::json& record);
  const std::string& last_error() const { return last_error_; }
  uint64_t lost() const { return lost_; }

 private:
  std::string path_;
  UniqueFd fd_;
  uint64_t lost_ = 0;
  std::string last_error_;
};

}  // namespace goheap2pprof
