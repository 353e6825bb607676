// `goheap2pprof agent`: serve, push and watch in one process, in any
// combination, around one discovery (with one analysis cache), one pool of
// confined capture workers, one /metrics and one set of allow-lists. A
// capture a watch trigger fires goes through the pool like any other; it
// is written to the output directory if one is given and pushed at once to
// the configured backends with the process's labels plus trigger="<name>"
// (e.g. above90). serve, push and watch as commands of their own are the
// same roles, each with its own parts.
//
//   AgentOptions o;
//   o.serve_on = true;  o.serve.listener.listen = "127.0.0.1:6061";
//   o.push_on = true;   o.push.pyroscope_url = "http://pyroscope:4040";
//   o.watch_on = true;  o.watch.dir = "/var/lib/goheap2pprof";
//   return RunAgent(o, std::cerr);  // until SIGTERM or SIGINT
#pragma once

#include <iosfwd>
#include <string>

#include "agent/common/discovery.h"
#include "agent/push/agent.h"
#include "agent/serve/server.h"
#include "agent/watch/watch.h"
#include "agent/worker/pool.h"
#include "agent/worker/worker.h"

namespace goheap2pprof {

struct AgentOptions {
  // The roles: serve answers on serve.listener (which also carries the one
  // /metrics), push sends to push's backends, watch captures on its
  // triggers into watch.dir (optional: without it, triggered profiles are
  // only pushed).
  bool serve_on = false, push_on = false, watch_on = false;
  ServeOptions serve;
  PushOptions push;
  WatchOptions watch;
  // Shared by every role: RoleOptions gives each role these, whatever its
  // own were.
  DiscoverySettings discovery;
  WorkerSettings workers;
  bool verbose = false;
};

// The options each role runs with: its own, with the agent's discovery and
// worker settings (and verbose), and what sharing asks of each: push has no
// listener of its own (the one /metrics is serve's), watch watches every
// process the one discovery admits.
AgentOptions RoleOptions(const AgentOptions& options);

// The agent's pool in the text exposition format: the requests each role
// made of it, and the workers it started (the proof that the roles share it).
std::string PoolMetricsText(const PoolStats& stats, int workers);

// Runs until SIGTERM/SIGINT; returns the exit code. Throws Error for a
// configuration that cannot start (kUsage for no role, or a role's own).
int RunAgent(const AgentOptions& options, std::ostream& log);

}  // namespace goheap2pprof
