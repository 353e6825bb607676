// `goheap2pprof serve`: option parsing only; the server is
// agent/serve/server.h.
#include "cli/serve_main.h"

#include <iostream>
#include <memory>
#include <string>

#include "agent/serve/server.h"
#include "base/error.h"
#include "cli/agent_flags.h"

namespace goheap2pprof {

void AddServeListenOptions(CLI::App& cmd, ServeOptions& o) {
  cmd.add_option("--listen", o.listener.listen, "address to listen on")->capture_default_str();
  cmd.add_option("--token-file", o.listener.token_file,
                 "require Authorization: Bearer <the first line of FILE> on every request");
  cmd.add_flag("--insecure-listen", o.listener.insecure_listen,
               "allow a non-loopback --listen without TLS and a token or client certificates");
  AddListenerOptions(cmd, o.listener, "", /*with_pool=*/true);
  cmd.add_option("--max-deltas", o.max_deltas,
                 "?seconds=N delta windows open at once; more get 503 with Retry-After")
      ->capture_default_str();
  AddDurationOption(cmd, "--timeout", o.timeout,
                    "time a request may wait for a free worker before 503 with Retry-After");
  cmd.add_option("--max-delta-seconds", o.max_delta_seconds, "largest ?seconds=N accepted")
      ->capture_default_str();
}

Command AddServeCommand(CLI::App& root) {
  CLI::App* cmd = root.add_subcommand(
      "serve",
      "goheap2pprof serve: every Go process on this machine as a pprof endpoint. GET "
      "/debug/pprof/heap?pid=N and "
      "/debug/pprof/allocs?pid=N (also /pid/N/debug/pprof/...) answer what the process's own "
      "net/http/pprof would; /targets lists the processes for Prometheus-style HTTP service "
      "discovery (Parca, Grafana Alloy); /metrics is the server's own health.");
  auto o = std::make_shared<ServeOptions>();
  AddServeListenOptions(*cmd, *o);
  AddDiscoveryOptions(*cmd, o->discovery, "serve");
  AddWorkerOptions(*cmd, {.settings = &o->workers,
                          .on_timeout = "504 is answered",
                          .on_too_large = "fail with 500; the server holds at most two per "
                                          "running capture"});
  cmd->add_flag("-v,--verbose", o->verbose, "log one line per request");
  return {cmd, [o] { return RunServe(*o, std::cerr); }};
}

}  // namespace goheap2pprof
