#include "proc/memory_writer.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace goheap2pprof {

void ProcessWordWriter::WriteU64(uint64_t addr, uint64_t value) {
  if (addr % 8 != 0) {
    throw Error(ErrorKind::kInternal, "refusing to write an unaligned word at ", Hex(addr),
                " of process ", pid_);
  }
  // One iovec of 8 bytes on each side. The kernel copies it with
  // copy_to_user into the target's page; it does not document that copy as
  // one store (docs/enable-sampling.md, "Risk").
  iovec local{&value, sizeof value};
  iovec remote{reinterpret_cast<void*>(addr), sizeof value};
  const ssize_t n = process_vm_writev(pid_, &local, 1, &remote, 1, 0);
  if (n == static_cast<ssize_t>(sizeof value)) return;
  const int err = n < 0 ? errno : 0;
  if (err == ESRCH) {
    throw Error(ErrorKind::kNoSuchProcess, "process ", pid_, " exited before the write at ",
                Hex(addr));
  }
  if (err == EPERM || err == EACCES) {
    throw Error(ErrorKind::kPermission, "not permitted to write memory of process ", pid_, " (",
                std::strerror(err), ")");
  }
  if (err == EFAULT) {
    throw Error(ErrorKind::kMalformed, Hex(addr), " is not mapped writable in process ", pid_);
  }
  if (n >= 0) {
    throw Error(ErrorKind::kIo, "wrote ", n, " of 8 bytes at ", Hex(addr), " of process ", pid_);
  }
  throw Error(ErrorKind::kIo, "writing 8 bytes at ", Hex(addr), " of process ", pid_, ": ",
              std::strerror(err));
}

}  // namespace goheap2pprof
