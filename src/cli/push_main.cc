// `goheap2pprof push`: option parsing only; the agent is agent/push/agent.h.
#include "cli/push_main.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "agent/push/agent.h"
#include "cli/agent_flags.h"

namespace goheap2pprof {

void AddPushMetricsListenOptions(CLI::App& cmd, PushOptions& o) {
  ListenerFlags& listener = o.metrics_listener;
  cmd.add_option("--metrics-listen", listener.listen,
                 "address of the agent's /metrics (empty: none)")
      ->capture_default_str();
  cmd.add_option("--token-file", listener.token_file,
                 "require Authorization: Bearer <the first line of FILE> on --metrics-listen");
  cmd.add_flag("--insecure-listen", listener.insecure_listen,
               "allow a non-loopback --metrics-listen without TLS and a token or client "
               "certificates");
  AddListenerOptions(cmd, listener, " of --metrics-listen", /*with_pool=*/false);
}

Command AddPushCommand(CLI::App& root) {
  CLI::App* cmd = root.add_subcommand(
      "push",
      "goheap2pprof push: capture the heap profile of every Go process on this machine each "
      "--interval and push "
      "it to Grafana Pyroscope (push.v1.PusherService/Push; alloc_* as deltas since the "
      "previous push, inuse_* as they are), Parca (WriteRaw; the cumulative profile) and/or an "
      "OpenTelemetry Collector (OTLP profiles over HTTP, alloc_* as deltas as for Pyroscope). A "
      "process is pushed only when its heap profile changed (a garbage collection published a "
      "new profile cycle). The agent's own health is on --metrics-listen /metrics.");
  struct Args {
    PushOptions o;
    std::vector<std::string> labels;
  };
  auto a = std::make_shared<Args>();
  PushOptions& o = a->o;
  AddPushBackendOptions(*cmd, o, a->labels);
  AddPushMetricsListenOptions(*cmd, o);
  cmd->add_option("--pid", o.pids, "push only this process (repeatable; default: every one)");
  AddDiscoveryOptions(*cmd, o.discovery, "push");
  AddWorkerOptions(*cmd, {.settings = &o.workers,
                          .on_timeout = "the profile is not pushed",
                          .on_too_large = "are dropped"});
  cmd->add_flag("-v,--verbose", o.verbose, "log one line per push");
  return {cmd, [a] {
            FinishPushOptions(a->labels, a->o);
            return RunPush(a->o, std::cerr);
          }};
}

}  // namespace goheap2pprof
