// "Is the process I knew still running?", the one way serve, push, watch and
// the worker ask it: a process is its pid and its start time (a pid alone is
// reused), and a zombie has ended already.
//
//   if (ProcessLiveness(pid, start_time) == Liveness::kGone) Forget(pid);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace goheap2pprof {

enum class Liveness {
  kRunning,  // a process that has not exited holds the pid (with start_time, that very one)
  kGone,     // no process holds the pid, only a zombie, or (with start_time) another process
  kUnknown,  // its stat could not be read or parsed: the caller decides which side is safe
};

// With start_time nullopt: whether any live process holds the pid.
Liveness ProcessLiveness(pid_t pid, std::optional<uint64_t> start_time);

}  // namespace goheap2pprof
