// `goheap2pprof __capture-worker`: option parsing only; the worker is
// agent/worker/worker.h, and its command line is written by pool.cc.
#include "cli/capture_worker_main.h"

#include <memory>

#include "agent/worker/worker.h"
#include "cli/target_flags.h"

namespace goheap2pprof {

Command AddCaptureWorkerCommand(CLI::App& root) {
  CLI::App* cmd =
      root.add_subcommand("__capture-worker", "capture worker of the agents (started by them)");
  cmd->group("");  // not for people: hidden from --help
  struct Args {
    int fd = -1;
    WorkerLimits limits;
    TargetFlags target;  // --exe and --force, as the agent passes them on
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--fd", a->fd)->required();
  cmd->add_option("--address-space", a->limits.address_space_bytes);
  cmd->add_option("--cpu-seconds", a->limits.cpu_seconds);
  AddExecutableFlags(*cmd, a->target, {.exe = "", .force = "", .force_needs_exe = false});
  cmd->add_option("--max-reply-bytes", a->limits.max_reply_bytes);
  cmd->add_option("--uid", a->limits.uid);
  cmd->add_option("--gid", a->limits.gid);
  return {cmd, [a] { return RunCaptureWorker(a->fd, a->limits, a->target.executable); }};
}

}  // namespace goheap2pprof
