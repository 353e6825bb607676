// `goheap2pprof serve`: every Go process on the node as a pprof endpoint.
// An HTTP server (agent/common/http_listener.h) answering, for each process it may read,
// what that process's own net/http/pprof would answer for heap and allocs
// (same headers, status codes and error texts, ?seconds=N deltas, ?debug=1
// text), plus /targets (Prometheus HTTP service discovery), /metrics, an
// HTML index and a flame graph page per process (/pid/N/flamegraph). Captures run in confined
// worker processes (agent/worker/pool.h); discovery scans /proc (agent/common/discovery.h).
//
//   ServeOptions o;  o.listener.listen = "127.0.0.1:6061";
//   return RunServe(o, std::cerr);  // until SIGTERM or SIGINT
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "agent/common/discovery.h"
#include "agent/common/http_listener.h"
#include "agent/worker/pool.h"
#include "agent/worker/worker.h"

namespace goheap2pprof {

struct ServeOptions {
  // --listen and its clients' rules: a bearer token when token_file is set;
  // insecure_listen allows a non-loopback address without authentication
  // over TLS; probe_path is answered without a token.
  ListenerFlags listener = ListenerFlags::Named("--listen", "127.0.0.1:6061");
  int max_deltas = 4;                        // ?seconds=N windows open at once; more get 503
  std::chrono::milliseconds timeout{10000};  // waiting for a worker (503 after)
  int64_t max_delta_seconds = 300;
  DiscoverySettings discovery;
  WorkerSettings workers;  // capture_timeout: a worker's answer (504 after)
  bool verbose = false;
  // In `goheap2pprof agent`: the pool, discovery and metrics of the agent,
  // used instead of serve's own (RoleParts; then workers and discovery are
  // the agent's, read for messages only).
  const SharedParts* shared = nullptr;
};

// Checks the options (a non-loopback --listen needs TLS with a token or
// client certificates, or --insecure-listen: ValidateListenSecurity);
// throws Error(kUsage) when they cannot work.
void ValidateServeOptions(const ServeOptions& options);

// Runs until SIGTERM/SIGINT; returns the exit code. Throws Error for a
// configuration that cannot start (kUsage, kIo for the token file, ...).
int RunServe(const ServeOptions& options, std::ostream& log);

// serve as one role of the agent: the listener is bound at construction
// (address() is the real one, for port 0); Run answers requests until Stop.
// The caller handles signals.
class ServeRole {
 public:
  ServeRole(const ServeOptions& options, std::ostream& log);
  ~ServeRole();
  std::string address() const;
  void Run();
  void Stop();
  // Reloads the listener's token and TLS files (SIGHUP) and logs it; a
  // failure keeps the old ones.
  void Reload();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace goheap2pprof
