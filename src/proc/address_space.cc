#include "proc/address_space.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "proc/procfs.h"

namespace goheap2pprof {

std::optional<AddressSpaceAnchor> AddressSpaceAnchor::TryOpen(pid_t pid) {
  UniqueFd fd(open(ProcPath(pid, "mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  return AddressSpaceAnchor(std::move(fd));
}

AddressSpaceAnchor AddressSpaceAnchor::Open(pid_t pid) {
  const std::string path = ProcPath(pid, "mem");
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT || err == ESRCH) {
      throw Error(ErrorKind::kNoSuchProcess, "no process with pid ", pid, " (", path, ")");
    }
    if (err == EACCES || err == EPERM) {
      throw Error(ErrorKind::kPermission, "not permitted to read the memory of process ", pid,
                  " (opening ", path, ": ", std::strerror(err), ")");
    }
    throw Error(ErrorKind::kIo, "cannot open ", path, ": ", std::strerror(err));
  }
  return AddressSpaceAnchor(std::move(fd));
}

bool AddressSpaceAnchor::StillLive() const {
  char byte;
  ssize_t n;
  do {
    n = pread(fd_.get(), &byte, 1, 0);
  } while (n < 0 && errno == EINTR);
  // 0: the kernel found no user of the address space (mem_rw's
  // mmget_not_zero failed). Anything else, an error included, was answered
  // from the live address space.
  return n != 0;
}

}  // namespace goheap2pprof
