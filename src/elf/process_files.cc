#include "elf/process_files.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/error.h"

namespace goheap2pprof {

namespace {

// ElfFile::Open reports why a file cannot be used by throwing Error. The
// callers here treat any such reason as an expected outcome, so this is the
// one place that turns it into a value.
// TODO(engine): drop once ElfFile has a non-throwing open.
template <typename OpenFn>
std::optional<ElfFile> OpenAsValue(OpenFn open, std::string* why) {
  try {
    return open();
  } catch (const Error& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
}

}  // namespace

ElfFile OpenProcessExecutable(pid_t pid) {
  const std::string path = ProcPath(pid, "exe");
  char target[4096];
  ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  if (n < 0) {
    int err = errno;
    if (err == ENOENT) {
      throw Error(ErrorKind::kNotGo, "process ", pid, " has no executable (", path,
                  " is empty): it is a kernel thread or exiting");
    }
    if (err == EACCES || err == EPERM) {
      throw Error(ErrorKind::kPermission, "not permitted to inspect process ", pid, " (reading ",
                  path, ": ", std::strerror(err), ")");
    }
    throw Error(ErrorKind::kIo, "cannot read ", path, ": ", std::strerror(err));
  }
  target[n] = '\0';
  return ElfFile::Open(path, std::string(target) + " (pid " + std::to_string(pid) + ")");
}

std::optional<ElfFile> TryOpenProcessExecutable(pid_t pid, std::string* why) {
  return OpenAsValue([&] { return OpenProcessExecutable(pid); }, why);
}

std::optional<ElfFile> OpenMappedFile(pid_t pid, const MapsEntry& e) {
  const std::string file = StripDeleted(e.path);
  for (const std::string& candidate : MappedFilePaths(pid, e)) {
    // Not readable or not an ELF we read: try the next way.
    std::optional<ElfFile> elf =
        OpenAsValue([&] { return ElfFile::Open(candidate, file); }, nullptr);
    if (elf) return elf;
  }
  return std::nullopt;
}

}  // namespace goheap2pprof
