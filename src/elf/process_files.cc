#include "elf/process_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "base/error.h"

namespace goheap2pprof {

namespace {

// The executable, or why it cannot be used, as a value: OpenProcessExecutable
// throws it, TryOpenProcessExecutable reports it.
Expected<ElfFile> ProcessExecutable(pid_t pid) {
  const std::string path = ProcPath(pid, "exe");
  char target[4096];
  ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  if (n < 0) {
    int err = errno;
    if (err == ENOENT) {
      return Error(ErrorKind::kNotGo, "process ", pid, " has no executable (", path,
                   " is empty): it is a kernel thread or exiting");
    }
    if (err == EACCES || err == EPERM) {
      return Error(ErrorKind::kPermission, "not permitted to inspect process ", pid, " (reading ",
                   path, ": ", std::strerror(err), ")");
    }
    return Error(ErrorKind::kIo, "cannot read ", path, ": ", std::strerror(err));
  }
  target[n] = '\0';
  return ElfFile::TryOpen(path, std::string(target) + " (pid " + std::to_string(pid) + ")");
}

}  // namespace

ElfFile OpenProcessExecutable(pid_t pid) { return ProcessExecutable(pid).value(); }

std::optional<ElfFile> TryOpenProcessExecutable(pid_t pid, std::string* why) {
  Expected<ElfFile> exe = ProcessExecutable(pid);
  if (!exe) {
    if (why) *why = exe.error().what();
    return std::nullopt;
  }
  return std::move(exe).value();
}

std::optional<ElfFile> OpenMappedFile(pid_t pid, const MapsEntry& e) {
  const std::string file = StripDeleted(e.path);
  for (const std::string& candidate : MappedFilePaths(pid, e)) {
    // Not readable or not an ELF we read: try the next way.
    Expected<ElfFile> elf = ElfFile::TryOpen(candidate, file);
    if (elf) return std::move(elf).value();
  }
  return std::nullopt;
}

namespace {

// A file as stat(2) describes it: any change to its bytes or its times
// changes the ctime.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  timespec ctime{};
  bool operator==(const FileStamp& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec &&
           ctime.tv_nsec == o.ctime.tv_nsec;
  }
};

std::optional<FileStamp> StampOf(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

// Whether the file last changed over a second ago. The kernel takes file
// times from a clock that moves once a tick: a file changed again within
// the tick its stamp was taken in can keep that stamp, so only a settled
// file is remembered (a library on disk changed long ago).
bool Settled(const FileStamp& stamp) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return stamp.ctime.tv_sec + 1 < now.tv_sec;
}

class BuildIdCache {
 public:
  static constexpr size_t kMaxEntries = 64;
  std::optional<std::string> Find(const FileStamp& stamp) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [s, id] : entries_) {
      if (s == stamp) return id;
    }
    return std::nullopt;
  }
  void Add(const FileStamp& stamp, std::string id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= kMaxEntries) entries_.pop_front();
    entries_.emplace_back(stamp, std::move(id));
  }

 private:
  std::mutex mu_;
  std::deque<std::pair<FileStamp, std::string>> entries_;  // oldest first
};

BuildIdCache& BuildIds() {
  static BuildIdCache cache;
  return cache;
}

}  // namespace

std::string MappedFileGnuBuildId(pid_t pid, const MapsEntry& e) {
  const std::string file = StripDeleted(e.path);
  for (const std::string& candidate : MappedFilePaths(pid, e)) {
    // Stamped before it is read: a file changed in between is stamped as it
    // was and read as it is now, so the next call stamps it anew and misses.
    const std::optional<FileStamp> stamp = StampOf(candidate);
    if (!stamp) continue;
    if (std::optional<std::string> id = BuildIds().Find(*stamp)) return *id;
    // Not readable or not an ELF we read: try the next way.
    Expected<ElfFile> elf = ElfFile::TryOpen(candidate, file);
    if (!elf) continue;
    std::string id = elf->GnuBuildId();
    if (Settled(*stamp)) BuildIds().Add(*stamp, id);
    return id;
  }
  return "";
}

}  // namespace goheap2pprof
