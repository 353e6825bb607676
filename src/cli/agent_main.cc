// `goheap2pprof agent`: option parsing only; the agent is agent/node/agent.h.
// Its options are the option groups of serve, push and watch (cli/agent_flags.h),
// each defined once; which roles run follows from the options given.
#include "cli/agent_main.h"

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "agent/node/agent.h"
#include "cli/agent_flags.h"
#include "cli/push_main.h"
#include "cli/serve_main.h"

namespace goheap2pprof {

Command AddAgentCommand(CLI::App& root) {
  CLI::App* cmd = root.add_subcommand(
      "agent",
      "goheap2pprof agent: serve, push and watch in one process, in any combination: one "
      "discovery of the node's Go processes, one pool of confined capture workers, one "
      "/metrics, one set of allow-lists. --listen turns serve on (and carries /metrics), "
      "--pyroscope or --parca push, -o or a trigger (--above, --rss-above, --on-event, --psi, "
      "--every) watch; a capture a trigger fires is written to -o DIR if given and pushed at "
      "once with the process's labels plus trigger=\"<name>\" (e.g. above90). Durations are "
      "written 10s, 5m, 250ms (or seconds), sizes 64MiB, 512KiB, 1.5G (or bytes). docs/agent.md");
  cmd->footer("Exit codes: 0 on SIGINT/SIGTERM; otherwise those of goheap2pprof --help.");
  struct Args {
    AgentOptions o;
    std::vector<std::string> labels;
    WatchArgs triggers;
  };
  auto a = std::make_shared<Args>();
  AgentOptions& o = a->o;
  o.serve.listener.listen.clear();  // serve is on only when --listen is given
  AddServeListenOptions(*cmd, o.serve);
  AddPushBackendOptions(*cmd, o.push, a->labels);
  cmd->add_option("-o,--output", o.watch.dir,
                  "directory for the profiles the triggers capture and watch.jsonl");
  std::vector<CLI::Option*> triggers;
  AddWatchTriggerOptions(*cmd, a->triggers, o.watch);
  for (const char* name : {"--above", "--rss-above", "--on-event", "--psi", "--every"}) {
    triggers.push_back(cmd->get_option(name));
  }
  AddDiscoveryOptions(*cmd, o.discovery, "capture");
  AddWorkerOptions(*cmd, {.settings = &o.workers,
                          .on_timeout = "the capture fails (serve answers 504)",
                          .on_too_large = "fail"});
  cmd->add_flag("-v,--verbose", o.verbose, "log one line per request, push and skipped trigger");
  return {cmd, [a, triggers] {
            AgentOptions& agent = a->o;
            agent.serve_on = !agent.serve.listener.listen.empty();
            agent.push_on = !agent.push.pyroscope_url.empty() || !agent.push.parca_url.empty() ||
                            !agent.push.otlp_url.empty() || !agent.push.otlp_metrics_url.empty();
            agent.watch_on = !agent.watch.dir.empty();
            for (const CLI::Option* t : triggers) agent.watch_on = agent.watch_on || t->count() > 0;
            FinishPushOptions(a->labels, agent.push);
            FinishWatchTriggers(a->triggers, agent.watch);
#if GOHEAP2PPROF_TEST_SEAMS
            // As for watch: the cgroup and PSI files of a fake tree.
            if (const char* r = std::getenv("GOHEAP2PPROF_TEST_CGROUP_ROOT"))
              agent.watch.fs_root = r;
#endif
            return RunAgent(agent, std::cerr);
          }};
}

}  // namespace goheap2pprof
