// `goheap2pprof watch`: keeps an eye on Go processes and captures their heap
// profile when memory runs short, so the profile that explains an OOM kill
// is on disk before the kill. One event loop, one capture at a time (which
// also bounds our own memory to one capture's worth): it sleeps in poll()
// on the processes' pidfds, the memory.events files (inotify), PSI triggers
// and a signalfd, and samples the cgroup counters every --poll. The captures
// themselves run in a confined worker process (agent/worker/worker.h), as serve's
// and push's do: the target's memory is hostile input, and a target that
// crashes or hangs its worker costs that one capture (--capture-timeout).
//
//   WatchOptions opt;
//   opt.pids = {1234};
//   opt.dir = "/var/tmp/heap";
//   opt.triggers.above_pct = {70, 90};
//   return RunWatch(opt, std::cerr);   // 0 when every process is gone
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/common/discovery.h"
#include "agent/watch/psi.h"
#include "agent/watch/trigger.h"
#include "agent/worker/pool.h"
#include "agent/worker/worker.h"
#include "app/run.h"

namespace goheap2pprof {

struct WatchOptions {
  std::vector<pid_t> pids;
  bool all = false;  // every Go process we may read, re-discovered each poll
  std::string dir;   // where profiles and watch.jsonl go
  TriggerConfig triggers;
  std::optional<PsiSpec> psi;
  bool psi_system = false;  // /proc/pressure/memory even when the cgroup has one
  WatchMillis poll{1000};
  bool baseline = true;
  size_t max_files = 10;
  bool verbose = false;
  // --report: write each process's growth report beside its profiles when it
  // or the watch ends (agent/watch/report.h).
  bool report = false;
  // Template for each capture (pid and output are filled in): --exe, --force.
  RunOptions capture;
  // The capture worker (one: captures run one at a time; its
  // capture_timeout fails a capture that overruns it). The executable is
  // capture's (--exe, --force).
  WorkerSettings workers;
  // Prefix of the cgroup and PSI paths (tests); "" is the real filesystem.
  std::string fs_root;
  // Read by watch: the Kubernetes identity's sources (pod_identity.h:
  // --host-root, --node-name), and the allow-list (the agent's --allow-uid,
  // --allow-cgroup, --deny-pid), judged on the process each capture read, as
  // serve and push judge it (docs/security/allow-list.md): a process admitted
  // when discovery found it and refused since (an exec of a set-uid program
  // in place) is not captured. An empty filter admits every process.
  DiscoverySettings discovery;
  // In `goheap2pprof agent`: its pool, discovery (for all) and capture
  // metrics instead of watch's own; dir may then be empty (no files, no
  // watch.jsonl); the watch ends when stop_fd (an eventfd) becomes
  // readable rather than on SIGINT/SIGTERM; and each profile a trigger
  // (not the baseline) captured is given to on_profile as well.
  const SharedParts* shared = nullptr;
  int stop_fd = -1;
  std::function<void(pid_t pid, uint64_t start_time, const std::string& trigger,
                     const std::string& profile_gz)>
      on_profile;
};

// Runs until every watched process is gone (never with --all) or SIGINT /
// SIGTERM arrives; returns 0 then. Throws Error for what prevents watching
// at all (no such pid, not a Go program, unwritable DIR, PSI refused).
int RunWatch(const WatchOptions& options, std::ostream& log);

// Command-line values, parsed strictly; each throws kUsage naming the option.
//   "70%,90" -> {70, 90}
std::vector<double> ParsePercentList(std::string_view text);
//   "512M,1.5G" -> bytes (ParseByteSize's units; zero refused)
std::vector<uint64_t> ParseSizeList(std::string_view text);
//   "max,oom"
void ParseEventList(std::string_view text, TriggerConfig& config);

}  // namespace goheap2pprof
