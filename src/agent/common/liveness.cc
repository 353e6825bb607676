#include "agent/common/liveness.h"

#include <string>

#include "base/error.h"
#include "proc/procfs.h"

namespace goheap2pprof {

Liveness ProcessLiveness(pid_t pid, std::optional<uint64_t> start_time) {
  try {
    std::optional<std::string> text = ReadProcFileIfPresent(pid, "stat");
    if (!text) return Liveness::kGone;
    const ProcStat st = ParseProcStat(*text);
    if (start_time && st.start_time != *start_time) return Liveness::kGone;
    return st.state == 'Z' || st.state == 'X' ? Liveness::kGone : Liveness::kRunning;
  } catch (const Error&) {
    // Unreadable (permission, no descriptors) or unparsable: no verdict.
    return Liveness::kUnknown;
  }
}

}  // namespace goheap2pprof
