// `goheap2pprof watch`: option parsing only; the watcher is agent/watch/watch.h.
#include "cli/watch_main.h"

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "agent/watch/watch.h"
#include "base/error.h"
#include "cli/agent_flags.h"
#include "cli/target_flags.h"
#include "proc/procfs.h"

namespace goheap2pprof {

Command AddWatchCommand(CLI::App& root) {
  CLI::App* cmd = root.add_subcommand(
      "watch",
      "capture heap profiles of Go processes when their memory runs short, before the OOM "
      "killer strikes; files go to DIR with one line per trigger in DIR/watch.jsonl");
  cmd->footer(
      "Exit codes: 0 when every watched process is gone (e.g. OOM-killed; how each ended is in "
      "watch.jsonl) or on SIGINT/SIGTERM; otherwise those of goheap2pprof --help.");
  struct Args {
    std::vector<std::string> pids;
    WatchArgs triggers;
    WatchOptions w;
    TargetFlags target;  // --exe and --force; the pids are watch's own
  };
  auto a = std::make_shared<Args>();
  WatchOptions& w = a->w;
  cmd->add_option("pids", a->pids, "process ids of the Go programs to watch");
  cmd->add_flag("--all", w.all, "watch every Go process we may read, found again every --poll");
  cmd->add_option("-o,--output", w.dir, "directory for the profiles and watch.jsonl")->required();
  AddWatchTriggerOptions(*cmd, a->triggers, w);
  AddExecutableFlags(*cmd, a->target, {.force_needs_exe = false});
  AddWorkerOptions(*cmd, {.settings = &w.workers,
                          .max_concurrent = false,
                          .on_timeout = "the capture recorded as failed",
                          .on_too_large = "are recorded as failed"});
  AddIdentityOptions(*cmd, w.discovery);
  cmd->add_flag("-v,--verbose", w.verbose, "report skipped triggers");
  return {cmd, [a] {
            WatchOptions& watch = a->w;
            watch.capture.executable = a->target.executable;
            for (const std::string& text : a->pids) {
              std::optional<pid_t> pid = ParsePid(text);
              if (!pid) throw Error(ErrorKind::kUsage, "\"", text, "\" is not a process id");
              watch.pids.push_back(*pid);
            }
            if (watch.all && !watch.pids.empty()) {
              throw Error(ErrorKind::kUsage, "give pids or --all, not both");
            }
            if (watch.workers.capture_timeout <= watch.workers.capture_timeout.zero()) {
              throw Error(ErrorKind::kUsage, "--capture-timeout must be positive");
            }
            FinishWatchTriggers(a->triggers, watch);
#if GOHEAP2PPROF_TEST_SEAMS
            // Tests point the cgroup and PSI files at a fake tree (cgroup v2
            // where the machine has v1); see tests/e2e/watch_test.sh.
            if (const char* r = std::getenv("GOHEAP2PPROF_TEST_CGROUP_ROOT")) watch.fs_root = r;
#endif
            return RunWatch(watch, std::cerr);
          }};
}

}  // namespace goheap2pprof
