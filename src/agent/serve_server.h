// `goheap2pprof serve`: every Go process on the node as a pprof endpoint.
// An HTTP server (cpp-httplib) answering, for each process it may read,
// what that process's own net/http/pprof would answer for heap and allocs
// (same headers, status codes and error texts, ?seconds=N deltas, ?debug=1
// text), plus /targets (Prometheus HTTP service discovery), /metrics and an
// HTML index. Captures run in confined worker processes (serve_pool.h);
// discovery scans /proc (discovery.h).
//
//   ServeOptions o;  o.listen = "127.0.0.1:6061";
//   return RunServe(o, std::cerr);  // until SIGTERM or SIGINT
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "agent/discovery.h"
#include "agent/serve_worker.h"

namespace goheap2pprof {

struct ServeOptions {
  std::string listen = "127.0.0.1:6061";
  std::string token_file;        // bearer token required when set
  bool insecure_listen = false;  // allow a non-loopback address without a token
  ProcessFilter filter;
  int max_concurrent = 2;
  double timeout_seconds = 10;          // waiting for a worker (503 after)
  double capture_timeout_seconds = 10;  // a worker's answer (504 after)
  double discover_interval_seconds = 10;
  int64_t max_delta_seconds = 300;
  std::string service_name_from = "exe";  // exe | comm | cgroup | env:VAR
  bool verbose = false;
  WorkerLimits worker_limits;
};

// Checks the options (a non-loopback --listen needs --token-file or
// --insecure-listen); throws Error(kUsage) when they cannot work.
void ValidateServeOptions(const ServeOptions& options);

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);
// Splits "host:port" / "[v6]:port"; throws Error(kUsage).
std::pair<std::string, int> SplitListenAddress(const std::string& listen);

// Runs until SIGTERM/SIGINT; returns the exit code. Throws Error for a
// configuration that cannot start (kUsage, kIo for the token file, ...).
int RunServe(const ServeOptions& options, std::ostream& log);

// Constant-time comparison of a presented token with the configured one.
bool TokenMatches(const std::string& presented, const std::string& expected);

}  // namespace goheap2pprof
