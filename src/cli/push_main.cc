// `goheap2pprof push`: option parsing only; the agent is agent/push_agent.h.
#include "cli/push_main.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "agent/push_agent.h"
#include "agent/watch_psi.h"
#include "base/error.h"
#include "cli/command.h"
#include "cli/identity_flags.h"
#include "cli/listener_flags.h"

namespace goheap2pprof {
namespace {

double Seconds(const std::string& option, const std::string& text) {
  std::optional<std::chrono::microseconds> d = ParseDuration(text);
  if (!d || d->count() <= 0) {
    throw Error(ErrorKind::kUsage, option, " ", text, ": expected a duration such as 15s, 500ms");
  }
  return static_cast<double>(d->count()) / 1e6;
}

}  // namespace

int PushMain(int argc, char** argv) {
  CLI::App app{
      "goheap2pprof push: capture the heap profile of every Go process on this machine each "
      "--interval and push it to Grafana Pyroscope (push.v1.PusherService/Push; alloc_* as "
      "deltas since the previous push, inuse_* as they are) and/or Parca (WriteRaw; the "
      "cumulative profile). A process is pushed only when its heap profile changed (a garbage "
      "collection published a new profile cycle). The agent's own health is on --metrics-listen "
      "/metrics.",
      "goheap2pprof push"};
  PushOptions o;
  std::string interval = "15s", push_timeout = "10s";
  std::vector<std::string> labels;
  app.add_option(
      "--pyroscope", o.pyroscope_url,
      "Pyroscope (or Alloy pyroscope.receive_http) base URL, e.g. http://pyroscope:4040");
  app.add_option("--parca", o.parca_url,
                 "Parca base URL, e.g. http://parca:7070 (its HTTP API under /api is used; give "
                 "a path to use another prefix)");
  app.add_option("--interval", interval, "time between captures of each process")
      ->capture_default_str();
  app.add_option("--label", labels, "extra series label NAME=VALUE (repeatable)");
  app.add_option("--tenant", o.tenant, "X-Scope-OrgID header for a multi-tenant Pyroscope");
  app.add_option("--ca-file", o.ca_file,
                 "PEM file of CA certificates for https URLs (default: the system store)");
  app.add_option("--pyroscope-token-file", o.pyroscope_token_file,
                 "send Authorization: Bearer <first line of FILE> to Pyroscope");
  app.add_option("--pyroscope-basic-auth-file", o.pyroscope_basic_auth_file,
                 "send HTTP basic auth to Pyroscope, user:password on the first line of FILE");
  app.add_option("--parca-token-file", o.parca_token_file,
                 "send Authorization: Bearer <first line of FILE> to Parca");
  app.add_option("--parca-basic-auth-file", o.parca_basic_auth_file,
                 "send HTTP basic auth to Parca, user:password on the first line of FILE");
  app.add_option("--push-timeout", push_timeout, "time limit of one push attempt")
      ->capture_default_str();
  app.add_option("--queue", o.queue_limit,
                 "profiles waiting per backend; when full the oldest is dropped")
      ->capture_default_str();
  app.add_option("--max-queue-bytes", o.queue_bytes_limit,
                 "request bytes waiting per backend; over it the oldest profiles are dropped")
      ->capture_default_str();
  app.add_option("--attempts", o.max_attempts,
                 "attempts per profile on 5xx, 408 and 429 answers and connection errors (other "
                 "4xx: one)")
      ->capture_default_str();
  app.add_option("--backoff-max", o.backoff_max_seconds, "longest wait between attempts, seconds")
      ->capture_default_str();
  app.add_option("--retry-after-max", o.retry_after_max_seconds,
                 "longest Retry-After of a 429, 408 or 5xx answer obeyed, seconds")
      ->capture_default_str();
  app.add_option("--metrics-listen", o.metrics_listen,
                 "address of the agent's /metrics (empty: none)")
      ->capture_default_str();
  app.add_option("--token-file", o.metrics_token_file,
                 "require Authorization: Bearer <the first line of FILE> on --metrics-listen");
  app.add_flag("--insecure-listen", o.insecure_listen,
               "allow a non-loopback --metrics-listen without TLS and a token or client "
               "certificates");
  AddListenerOptions(app, o.allowed_hosts, o.metrics_tls, o.metrics_limits, " of --metrics-listen",
                     /*with_pool=*/false);
  app.add_option("--pid", o.pids, "push only this process (repeatable; default: every one)");
  app.add_option("--allow-uid", o.filter.allow_uids,
                 "push only processes of these user ids (repeatable)");
  app.add_option(
      "--allow-cgroup", o.filter.allow_cgroups,
      "push only processes in this cgroup or below it (whole path elements; repeatable)");
  app.add_option("--deny-pid", o.filter.deny_pids, "never push this pid (repeatable)");
  app.add_option("--service-name-from", o.service_name_from,
                 "service_name label, as serve's /targets: auto (the pyroscope.io/service_name "
                 "annotation, else namespace/container, else the systemd unit, else exe), exe "
                 "(base name), comm, cgroup (last path element) or env:VAR (the process's "
                 "environment variable)")
      ->capture_default_str();
  AddIdentityOptions(app, o.host_root, o.node_name);
  app.add_option("--discover-interval", o.discover_interval_seconds,
                 "seconds between scans of /proc for Go processes")
      ->capture_default_str();
  app.add_option("--max-concurrent", o.max_concurrent, "capture worker processes")
      ->capture_default_str();
  app.add_option("--capture-timeout", o.capture_timeout_seconds,
                 "seconds a capture may take before its worker is stopped")
      ->capture_default_str();
  app.add_option("--worker-memory", o.worker_limits.address_space_bytes,
                 "address-space limit of a capture worker, bytes")
      ->capture_default_str();
  app.add_option("--worker-cpu", o.worker_limits.cpu_seconds,
                 "CPU-time limit of a capture worker over its life, seconds")
      ->capture_default_str();
  app.add_option("--max-capture-bytes", o.worker_limits.max_reply_bytes,
                 "largest gzipped profile a capture may produce (larger ones are dropped)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{64} << 10, uint64_t{1} << 31));
  app.add_option("--max-samples", o.limits.max_samples,
                 "trim Pyroscope profiles to this many samples (the server's default limit)")
      ->capture_default_str();
  app.add_option("--max-profile-bytes", o.limits.max_bytes,
                 "trim Pyroscope profiles to this uncompressed size (the server's default limit)")
      ->capture_default_str();
  app.add_flag("-v,--verbose", o.verbose, "log one line per push");
  return ParseAndRun(app, argc, argv, "goheap2pprof push", [&] {
    o.interval_seconds = Seconds("--interval", interval);
    o.push_timeout_seconds = Seconds("--push-timeout", push_timeout);
    for (const std::string& l : labels) o.labels.push_back(ParseLabelOption(l));
    return RunPush(o, std::cerr);
  });
}

}  // namespace goheap2pprof
