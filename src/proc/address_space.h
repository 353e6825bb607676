// Whether a live process still has the address space it had when we began
// to look at it. Neither the pid nor the start time in /proc/<pid>/stat
// changes when a process executes another program (execve keeps both), yet
// everything a capture reads (maps, executable, memory) then belongs to the
// new program. An open /proc/<pid>/mem stays bound to the address space (the
// kernel's mm) it was opened on, and once no task uses that address space
// any more (the process exited, or its pid executed something else) a read
// through it returns end of file instead of data or EIO. The anchor is that
// descriptor and that one-byte read; it keeps nothing of the target alive
// but the kernel's small mm bookkeeping.
//
//   std::optional<AddressSpaceAnchor> a = AddressSpaceAnchor::TryOpen(pid);
//   ... read the process ...
//   if (a && !a->StillLive()) ... the process exited or executed another program
#pragma once

#include <sys/types.h>

#include <optional>

#include "base/unique_fd.h"

namespace goheap2pprof {

class AddressSpaceAnchor {
 public:
  // nullopt when /proc/<pid>/mem cannot be opened (no such process, or no
  // ptrace access to it): the caller's next read of the process says why.
  static std::optional<AddressSpaceAnchor> TryOpen(pid_t pid);
  // As TryOpen, but throws kNoSuchProcess, kPermission or kIo.
  static AddressSpaceAnchor Open(pid_t pid);

  // False once the address space the anchor was opened on has no user: the
  // process exited or executed another program. Reads address 0, which is
  // never data we use: EIO (unmapped, the usual answer) or a byte both mean
  // the address space is still in use.
  bool StillLive() const;

 private:
  explicit AddressSpaceAnchor(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace goheap2pprof
