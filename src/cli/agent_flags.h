// The option groups the node agent's commands share, each defined once:
// serve, push, watch and agent add the groups of their roles, so one option
// means and reads the same in every command (parca-agent keeps one flags
// struct of embedded groups the same way).
//
//   AddDiscoveryOptions(*cmd, o.discovery, "serve");
//   AddWorkerOptions(*cmd, {.settings = &o.workers, ...});
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "agent/common/discovery.h"
#include "agent/common/http_listener.h"
#include "agent/push/agent.h"
#include "agent/watch/watch.h"
#include "agent/worker/pool.h"
#include "agent/worker/worker.h"

namespace goheap2pprof {

// Adds --allowed-host, --probe-path, the --tls-* files and the connection
// limits; what names the listener in the help ("" for serve's --listen).
// with_pool adds --handler-threads and --handler-queue (only serve has
// blocking handlers).
void AddListenerOptions(CLI::App& app, ListenerFlags& flags, const std::string& what,
                        bool with_pool);

// Which processes are found and how they are named: --allow-uid,
// --allow-cgroup, --deny-pid, --service-name-from, --discover-interval, and the
// Kubernetes identity's --host-root and --node-name.
// verb says what the command does with them ("serve", "push").
void AddDiscoveryOptions(CLI::App& app, DiscoverySettings& settings, const std::string& verb);

// --host-root: where the node's filesystem is mounted when the agent runs in
// a container (the runtimes' bundles are read below it); --node-name: the
// node label (else $NODE_NAME, which a DaemonSet sets from the downward API).
// Part of AddDiscoveryOptions; watch, which has no discovery options, adds
// them alone.
void AddIdentityOptions(CLI::App& app, DiscoverySettings& settings);

// The confined capture workers: --max-concurrent (unless watch, which runs
// one), --capture-timeout, and the limits; sizes take units (AddSizeOption).
struct WorkerFlags {
  WorkerSettings* settings = nullptr;
  bool max_concurrent = true;
  std::string on_timeout;    // what a capture over --capture-timeout costs
  std::string on_too_large;  // what a profile over --max-capture-bytes costs
};
void AddWorkerOptions(CLI::App& app, const WorkerFlags& flags);

// Where push sends and how: --pyroscope, --parca, --interval, --label, the
// credentials, the queue and retry limits, the profile size limits. The
// --label texts are parsed by FinishPushOptions.
void AddPushBackendOptions(CLI::App& app, PushOptions& o, std::vector<std::string>& labels);
void FinishPushOptions(const std::vector<std::string>& labels, PushOptions& o);

// The watch triggers' options as text until parsed by the agent's strict
// parsers (which name the option in their errors).
struct WatchArgs {
  std::string above, rss_above, on_event, psi;
  std::chrono::milliseconds every{0}, poll{1000}, cooldown{30000};
  std::string psi_scope = "cgroup";
  bool no_baseline = false;
};

// When a capture fires and what is kept: --above, --hysteresis,
// --working-set, --rss-above, --on-event, --psi, --psi-scope, --every,
// --poll, --cooldown, --max-files, --no-baseline, --report.
void AddWatchTriggerOptions(CLI::App& app, WatchArgs& args, WatchOptions& w);
// Parses the texts into w; with no trigger given, --above 90.
void FinishWatchTriggers(const WatchArgs& args, WatchOptions& w);

}  // namespace goheap2pprof
