#include "elf/process_files.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

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

}  // namespace goheap2pprof
