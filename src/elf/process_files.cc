#include "elf/process_files.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "base/error.h"
#include "proc/file_stamp.h"

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

// The GNU build IDs of the files asked for last, by their stamps.
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
    const std::optional<FileStamp> stamp = FileStamp::OfPath(candidate);
    if (!stamp) continue;
    if (std::optional<std::string> id = BuildIds().Find(*stamp)) return *id;
    // Not readable or not an ELF we read: try the next way.
    Expected<ElfFile> elf = ElfFile::TryOpen(candidate, file);
    if (!elf) continue;
    std::string id = elf->GnuBuildId();
    if (stamp->Settled()) BuildIds().Add(*stamp, id);
    return id;
  }
  return "";
}

}  // namespace goheap2pprof
