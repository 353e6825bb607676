#include "agent/common/liveness.h"

#include <cerrno>
#include <string>

#include "proc/procfs.h"

namespace goheap2pprof {

Liveness ProcessLiveness(pid_t pid, std::optional<uint64_t> start_time) {
  int err = 0;
  std::optional<std::string> text = ReadSmallFile(ProcPath(pid, "stat"), 4096, &err);
  if (!text) {
    // Gone, or unreadable (permission, no descriptors): no verdict then.
    return err == ENOENT || err == ESRCH ? Liveness::kGone : Liveness::kUnknown;
  }
  Expected<ProcStat> st = TryParseProcStat(*text);
  if (!st) return Liveness::kUnknown;  // unparsable: no verdict
  if (start_time && st->start_time != *start_time) return Liveness::kGone;
  return st->state == 'Z' || st->state == 'X' ? Liveness::kGone : Liveness::kRunning;
}

}  // namespace goheap2pprof
