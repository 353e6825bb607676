// How a watched process ended, learned from outside: `watch` is usually not
// the target's parent, so waitid() cannot report the status. What the
// kernel does expose is used instead, and the record says how sure it is:
//  - a pidfd (pidfd_open) tells the moment the process exits, for any
//    process we may see, without polling;
//  - right then the process is a zombie until its parent reaps it, and
//    /proc/<pid>/stat field 52 holds its wait status; if the parent was
//    faster, the status is gone and the record says "unknown";
//  - the cgroup's oom_kill counter (v1 memory.oom_control, v2
//    memory.events), read when watching began and at the end, says whether
//    the OOM killer killed a process of that cgroup meanwhile (with SIGKILL
//    as the status, that process was this one).
//
//   ProcessEndObserver end(pid, stat.start_time);   // at start
//   poll(end.fd(), POLLIN) ...                      // readable: it exited
//   ProcessEnd e = end.Observe();                   // right away
//   EndSummary s = DescribeEnd(e, oom_kills_at_start, oom_kills_now);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/unique_fd.h"

namespace goheap2pprof {

struct ProcessEnd {
  // The wait status (as waitpid reports it) when it could be read.
  std::optional<int> wait_status;
  // Why not, when it could not.
  std::string status_unknown_because;
};

// Field 52 of a /proc/<pid>/stat line (exit_code, since Linux 3.5), and the
// state (field 3) and start time (field 22) to check it is the same process
// and a zombie. nullopt if the line is malformed or too short.
struct ZombieStat {
  char state = '?';
  uint64_t start_time = 0;
  int exit_code = 0;
};
std::optional<ZombieStat> ParseZombieStat(std::string_view stat_line);

class ProcessEndObserver {
 public:
  // Opens a pidfd for pid; throws kNoSuchProcess if it is already gone.
  ProcessEndObserver(pid_t pid, uint64_t start_time);
  // Readable (POLLIN) once the process has exited.
  int fd() const { return pidfd_.get(); }
  // True if the process is gone now (exited, zombie included, or replaced).
  bool Exited() const;
  // Reads the wait status from the zombie if it is still there.
  ProcessEnd Observe() const;

 private:
  pid_t pid_;
  uint64_t start_time_;
  UniqueFd pidfd_;
};

// For watch.jsonl: "exited with code 3", "killed by signal 9 (SIGKILL)",
// with what the oom_kill counter says.
struct EndSummary {
  std::string how;  // "exit", "signal", "unknown"
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::optional<bool> oom_kill_rose;  // nullopt: counter not readable
  std::string text;
};
EndSummary DescribeEnd(const ProcessEnd& end, std::optional<uint64_t> oom_kills_before,
                       std::optional<uint64_t> oom_kills_after);

}  // namespace goheap2pprof
