// `goheap2pprof serve` and the hidden `goheap2pprof __serve-worker` that the
// server starts for its captures: option parsing only; the server is
// agent/serve_server.h, the worker agent/serve_worker.h.
#include "cli/serve_main.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "agent/serve_server.h"
#include "agent/serve_worker.h"
#include "base/error.h"
#include "cli/command.h"
#include "cli/identity_flags.h"
#include "cli/listener_flags.h"

namespace goheap2pprof {

int ServeMain(int argc, char** argv) {
  CLI::App app{
      "goheap2pprof serve: every Go process on this machine as a pprof endpoint. "
      "GET /debug/pprof/heap?pid=N and /debug/pprof/allocs?pid=N (also /pid/N/debug/pprof/...) "
      "answer what the process's own net/http/pprof would; /targets lists the processes for "
      "Prometheus-style HTTP service discovery (Parca, Grafana Alloy); /metrics is the "
      "server's own health.",
      "goheap2pprof serve"};
  ServeOptions o;
  app.add_option("--listen", o.listen, "address to listen on")->capture_default_str();
  app.add_option("--token-file", o.token_file,
                 "require Authorization: Bearer <the first line of FILE> on every request");
  app.add_flag("--insecure-listen", o.insecure_listen,
               "allow a non-loopback --listen without TLS and a token or client certificates");
  AddListenerOptions(app, o.allowed_hosts, o.tls, o.limits, "", /*with_pool=*/true);
  app.add_option("--max-deltas", o.max_deltas,
                 "?seconds=N delta windows open at once; more get 503 with Retry-After")
      ->capture_default_str();
  std::vector<uid_t> uids;
  app.add_option("--allow-uid", o.filter.allow_uids,
                 "serve only processes of these user ids (repeatable)");
  app.add_option(
      "--allow-cgroup", o.filter.allow_cgroups,
      "serve only processes in this cgroup or below it (whole path elements; repeatable)");
  app.add_option("--deny-pid", o.filter.deny_pids, "never serve this pid (repeatable)");
  app.add_option("--max-concurrent", o.max_concurrent,
                 "captures running at once (one worker process each)")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_seconds,
                 "seconds a request may wait for a free worker before 503 with Retry-After")
      ->capture_default_str();
  app.add_option("--capture-timeout", o.capture_timeout_seconds,
                 "seconds a capture may take before its worker is stopped and 504 is answered")
      ->capture_default_str();
  app.add_option("--discover-interval", o.discover_interval_seconds,
                 "seconds between scans of /proc for Go processes")
      ->capture_default_str();
  app.add_option("--max-delta-seconds", o.max_delta_seconds, "largest ?seconds=N accepted")
      ->capture_default_str();
  app.add_option("--service-name-from", o.service_name_from,
                 "service_name label of /targets: auto (the pyroscope.io/service_name "
                 "annotation, else namespace/container, else the systemd unit, else exe), exe "
                 "(base name), comm, cgroup (last path element) or env:VAR (the process's "
                 "environment variable)")
      ->capture_default_str();
  AddIdentityOptions(app, o.host_root, o.node_name);
  app.add_option("--worker-memory", o.worker_limits.address_space_bytes,
                 "address-space limit of a capture worker, bytes")
      ->capture_default_str();
  app.add_option("--worker-cpu", o.worker_limits.cpu_seconds,
                 "CPU-time limit of a capture worker over its life, seconds (it is replaced "
                 "after using half)")
      ->capture_default_str();
  app.add_option("--max-capture-bytes", o.worker_limits.max_reply_bytes,
                 "largest gzipped profile a capture may produce (larger ones fail with 500); "
                 "the server holds at most two per running capture")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{64} << 10, uint64_t{1} << 31));
  app.add_flag("-v,--verbose", o.verbose, "log one line per request");
  return ParseAndRun(app, argc, argv, "goheap2pprof serve", [&] { return RunServe(o, std::cerr); });
}

int ServeWorkerMain(int argc, char** argv) {
  CLI::App app{"capture worker of goheap2pprof serve (started by the server)"};
  int fd = -1;
  WorkerLimits limits;
  app.add_option("--fd", fd)->required();
  app.add_option("--address-space", limits.address_space_bytes);
  app.add_option("--cpu-seconds", limits.cpu_seconds);
  ExecutableOptions executable;
  app.add_option("--exe", executable.path);
  app.add_flag("--force", executable.force);
  app.add_option("--max-reply-bytes", limits.max_reply_bytes);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return RunServeWorker(fd, limits, executable);
}

}  // namespace goheap2pprof
