#include "cli/agent_flags.h"

#include <cstdlib>

#include "agent/push/labels.h"
#include "agent/watch/psi.h"
#include "base/error.h"
#include "cli/command.h"

namespace goheap2pprof {

void AddListenerOptions(CLI::App& app, ListenerFlags& flags, const std::string& what,
                        bool with_pool) {
  TlsFiles& tls = flags.tls;
  ListenerLimits& limits = flags.limits;
  app.add_option("--allowed-host", flags.allowed_hosts,
                 "on a loopback listener" + what +
                     ", a Host header (name or name:port) accepted besides the listen address, "
                     "localhost and IP literals; others get 421 (DNS rebinding) (repeatable)");
  app.add_option("--tls-cert-file", tls.cert_file,
                 "serve HTTPS" + what + " with this PEM certificate chain");
  app.add_option("--tls-key-file", tls.key_file, "the PEM private key of --tls-cert-file");
  app.add_option("--tls-client-ca-file", tls.client_ca_file,
                 "require client certificates signed by these PEM CAs (mutual TLS)");
  app.add_option("--tls-client-allowed-name", tls.client_allowed_names,
                 "with --tls-client-ca-file, accept only client certificates that carry this "
                 "name as a subjectAltName DNS or URI entry or as their subject CN (repeatable; "
                 "none: any certificate the CAs signed)");
  app.add_option("--probe-path", flags.probe_path,
                 "a path" + what +
                     " (e.g. /healthz) the listener answers 200 without a token, for liveness "
                     "probes; it gets through while clients without credentials fill the "
                     "connection caps");
  app.add_option("--max-connections", limits.max_connections,
                 "open connections" + what + "; more are answered 503 and closed")
      ->capture_default_str();
  app.add_option("--max-connections-per-address", limits.max_connections_per_address,
                 "open connections" + what +
                     " from one source (all of loopback is one, IPv6 counts by /64); at a cap "
                     "the oldest connection not yet authenticated is closed to make room")
      ->capture_default_str();
  AddDurationOption(app, "--header-timeout", limits.header_timeout,
                    "time from a connection (or a request's first byte) to its whole request "
                    "head, TLS handshake included");
  AddDurationOption(app, "--idle-timeout", limits.idle_timeout,
                    "time a keep-alive connection may wait for its next request");
  AddDurationOption(app, "--write-timeout", limits.write_timeout,
                    "time to write one reply, fixed when its write begins (a client that reads "
                    "slowly does not extend it)");
  AddSizeOption(app, "--max-reply-bytes-in-flight", limits.max_reply_bytes_in_flight,
                "bytes of replies" + what +
                    " waiting for clients to read them (a reply shared by several clients "
                    "counted once); more get 503 with Retry-After")
      ->check(CLI::Range(kMinReplyBytesInFlight, uint64_t{1} << 40));
  if (!with_pool) return;
  app.add_option("--handler-threads", limits.handler_threads,
                 "requests that wait for a capture, served at once")
      ->capture_default_str();
  app.add_option("--handler-queue", limits.handler_queue,
                 "requests waiting for a handler thread; more get 503 with Retry-After")
      ->capture_default_str();
}

void AddIdentityOptions(CLI::App& app, DiscoverySettings& settings) {
  app.add_option("--host-root", settings.host_root,
                 "the node's root filesystem, where the container runtimes' state "
                 "(/run/containerd, /run/containers) is read for pod names")
      ->capture_default_str();
  app.add_option("--node-name", settings.node_name,
                 "the node label of every process (default: $NODE_NAME, if set)");
}

void AddDiscoveryOptions(CLI::App& app, DiscoverySettings& settings, const std::string& verb) {
  ProcessFilter& filter = settings.filter;
  app.add_option("--allow-uid", filter.allow_uids,
                 verb + " only processes of these user ids (repeatable)");
  app.add_option("--allow-cgroup", filter.allow_cgroups,
                 verb +
                     " only processes in this cgroup or below it (whole path elements; "
                     "repeatable)");
  app.add_option("--deny-pid", filter.deny_pids, "never " + verb + " this pid (repeatable)");
  app.add_option("--service-name-from", settings.service_name_from,
                 "service_name label of /targets and pushes: auto (the pyroscope.io/service_name "
                 "annotation, else namespace/container, else the systemd unit, else exe), exe "
                 "(base name), comm, cgroup (last path element) or env:VAR (the process's "
                 "environment variable)")
      ->capture_default_str();
  AddIdentityOptions(app, settings);
  AddDurationOption(app, "--discover-interval", settings.interval,
                    "time between scans of /proc for Go processes");
}

void AddWorkerOptions(CLI::App& app, const WorkerFlags& flags) {
  WorkerSettings& settings = *flags.settings;
  if (flags.max_concurrent) {
    app.add_option("--max-concurrent", settings.max_concurrent,
                   "captures running at once (one confined worker process each)")
        ->capture_default_str();
  }
  AddDurationOption(
      app, "--capture-timeout", settings.capture_timeout,
      "time a capture may take; its confined worker is then stopped and " + flags.on_timeout);
  WorkerLimits& limits = settings.limits;
  AddSizeOption(app, "--worker-memory", limits.address_space_bytes,
                "address-space limit of a capture worker");
  AddWholeSecondsOption(app, "--worker-cpu", limits.cpu_seconds,
                        "CPU-time limit of a capture worker over its life (it is replaced after "
                        "using half)");
  AddSizeOption(
      app, "--max-capture-bytes", limits.max_reply_bytes,
      "largest gzipped profile a capture may produce (larger ones " + flags.on_too_large + ")")
      ->check(CLI::Range(uint64_t{64} << 10, uint64_t{1} << 31));
  app.add_option("--worker-uid", limits.uid,
                 "started as root, a capture worker becomes this user, keeping only "
                 "CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (0: it stays root)")
      ->capture_default_str();
  app.add_option("--worker-gid", limits.gid, "the group of --worker-uid")->capture_default_str();
}

namespace {

// Each backend's token and basic auth files, and the one flag that lets
// them travel in clear text.
void AddPushCredentialOptions(CLI::App& app, PushOptions& o) {
  app.add_option("--pyroscope-token-file", o.pyroscope_token_file,
                 "send Authorization: Bearer <first line of FILE> to Pyroscope");
  app.add_option("--pyroscope-basic-auth-file", o.pyroscope_basic_auth_file,
                 "send HTTP basic auth to Pyroscope, user:password on the first line of FILE");
  app.add_option("--parca-token-file", o.parca_token_file,
                 "send Authorization: Bearer <first line of FILE> to Parca");
  app.add_option("--parca-basic-auth-file", o.parca_basic_auth_file,
                 "send HTTP basic auth to Parca, user:password on the first line of FILE");
  app.add_option("--otlp-token-file", o.otlp_token_file,
                 "send Authorization: Bearer <first line of FILE> to the OTLP receiver");
  app.add_option("--otlp-basic-auth-file", o.otlp_basic_auth_file,
                 "send HTTP basic auth to the OTLP receiver, user:password on the first line of "
                 "FILE");
  app.add_flag("--allow-insecure-credentials", o.allow_insecure_credentials,
               "send a token or basic auth over an http:// URL to a host other than loopback, "
               "in clear text (refused without it)");
}

}  // namespace

void AddPushBackendOptions(CLI::App& app, PushOptions& o, std::vector<std::string>& labels) {
  app.add_option(
      "--pyroscope", o.pyroscope_url,
      "Pyroscope (or Alloy pyroscope.receive_http) base URL, e.g. http://pyroscope:4040");
  app.add_option("--parca", o.parca_url,
                 "Parca base URL, e.g. http://parca:7070 (its HTTP API under /api is used; give "
                 "a path to use another prefix)");
  app.add_option("--otlp", o.otlp_url,
                 "OpenTelemetry Collector (or any OTLP profiles receiver) base URL, e.g. "
                 "http://otelcol:4318: OTLP profiles over HTTP/protobuf to <URL>/v1development/"
                 "profiles, or over gRPC with --otlp-protocol grpc (docs/opentelemetry.md)");
  app.add_option("--otlp-metrics", o.otlp_metrics_url,
                 "OpenTelemetry OTLP base URL (e.g. http://collector:4318, or :4317 with "
                 "--otlp-protocol grpc) to send each Go process's runtime metrics to, under the "
                 "semantic conventions' go.* names (OTLP/HTTP: POST <URL>/v1/metrics)");
  app.add_option("--otlp-protocol", o.otlp_protocol,
                 "how OTLP (--otlp and --otlp-metrics) is sent, as OTEL_EXPORTER_OTLP_PROTOCOL "
                 "names it: http/protobuf or grpc")
      ->check(CLI::IsMember({"http/protobuf", "grpc"}))
      ->capture_default_str();
  AddDurationOption(app, "--interval", o.interval, "time between captures of each process");
  app.add_option("--profiles", o.profiles,
                 "profiles to push each --interval, comma-separated: heap (__name__=memory, "
                 "when its profile cycle advanced) and goroutine (__name__=goroutine, every "
                 "interval)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--label", labels, "extra series label NAME=VALUE (repeatable)");
  app.add_option("--tenant", o.tenant, "X-Scope-OrgID header for a multi-tenant Pyroscope");
  app.add_option("--ca-file", o.delivery.ca_file,
                 "PEM file of CA certificates for https URLs (default: the system store)");
  AddPushCredentialOptions(app, o);
  AddDurationOption(app, "--push-timeout", o.delivery.timeout, "time limit of one push attempt");
  app.add_option("--queue", o.delivery.queue_limit,
                 "profiles waiting per backend; when full the oldest is dropped")
      ->capture_default_str();
  AddSizeOption(app, "--max-queue-bytes", o.delivery.queue_bytes_limit,
                "request bytes waiting per backend; over it the oldest profiles are dropped");
  app.add_option("--attempts", o.delivery.max_attempts,
                 "attempts per profile on 5xx, 408 and 429 answers and connection errors (other "
                 "4xx: one)")
      ->capture_default_str();
  AddDurationOption(app, "--backoff-max", o.delivery.backoff_max, "longest wait between attempts");
  AddDurationOption(app, "--retry-after-max", o.delivery.retry_after_max,
                    "longest Retry-After of a 429, 408 or 5xx answer obeyed");
  app.add_option("--max-samples", o.limits.max_samples,
                 "trim Pyroscope profiles to this many samples (the server's default limit)")
      ->capture_default_str();
  AddSizeOption(app, "--max-profile-bytes", o.limits.max_bytes,
                "trim Pyroscope profiles to this uncompressed size (the server's default limit)");
}

void FinishPushOptions(const std::vector<std::string>& labels, PushOptions& o) {
  for (const std::string& l : labels) o.labels.push_back(ParseLabelOption(l));
#if GOHEAP2PPROF_TEST_SEAMS
  if (const char* v = std::getenv("GOHEAP2PPROF_TEST_OTLP_PROFILES_VERSION")) {
    o.otlp_profiles_version = v;
  }
#endif
}

void AddWatchTriggerOptions(CLI::App& app, WatchArgs& args, WatchOptions& w) {
  app.add_option("--above", args.above,
                 "PCT[,PCT...] of the memory limit of the process's cgroup (nearest ancestor with "
                 "a finite limit); each fires once per upward crossing (default 90% when no "
                 "other trigger is given)");
  app.add_option("--hysteresis", w.triggers.hysteresis_pct,
                 "points (or percent of an --rss-above size) to fall below a level before it "
                 "fires again")
      ->check(CLI::Range(0.0, 50.0))
      ->capture_default_str();
  app.add_flag("--working-set", w.triggers.working_set,
               "compare usage minus inactive file pages, as the kubelet does");
  app.add_option("--rss-above", args.rss_above, "SIZE[,SIZE...] of the process's resident set");
  app.add_option("--on-event", args.on_event,
                 "max,oom: the cgroup's memory.events counters (v2; the kernel wakes us)");
  app.add_option("--psi", args.psi,
                 "some|full:STALL/WINDOW, e.g. some:150ms/1s: a PSI trigger on the cgroup's "
                 "memory.pressure, or /proc/pressure/memory");
  app.add_option("--psi-scope", args.psi_scope,
                 "cgroup (system when the cgroup has none) or system")
      ->check(CLI::IsMember({"cgroup", "system"}))
      ->capture_default_str();
  AddDurationOption(app, "--every", args.every, "also capture periodically, e.g. 5m (0: never)");
  AddDurationOption(app, "--poll", args.poll, "how often usage and RSS are sampled");
  AddDurationOption(app, "--cooldown", args.cooldown,
                    "minimum time between triggered captures; one higher level or memory event "
                    "may fire inside it");
  app.add_option("--max-files", w.max_files,
                 "keep the newest N profiles this watch wrote (it deletes no other file)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--no-baseline", args.no_baseline,
               "skip the snapshot at start (kept for go tool pprof -base)");
  app.add_flag("--report", w.report,
               "when a process (or the watch) ends, write the growth report of its profiles "
               "beside them: <program>-<pid>-growth.txt, .json and .pb.gz (docs/growth.md)");
}

namespace {

// A watch time: at least a millisecond (the trigger clock's unit).
WatchMillis Millis(const std::string& option, std::chrono::milliseconds d) {
  if (d < std::chrono::milliseconds(1)) {
    throw Error(ErrorKind::kUsage, option, " must be at least 1ms");
  }
  return d;
}

}  // namespace

void FinishWatchTriggers(const WatchArgs& args, WatchOptions& w) {
  TriggerConfig& t = w.triggers;
  if (!args.above.empty()) t.above_pct = ParsePercentList(args.above);
  if (!args.rss_above.empty()) t.rss_above = ParseSizeList(args.rss_above);
  if (!args.on_event.empty()) ParseEventList(args.on_event, t);
  if (!args.psi.empty()) {
    w.psi = ParsePsiSpec(args.psi);
    t.psi = true;
  }
  w.psi_system = args.psi_scope == "system";
  if (args.every != args.every.zero()) t.every = Millis("--every", args.every);
  w.poll = Millis("--poll", args.poll);
  t.cooldown = Millis("--cooldown", args.cooldown);
  if (args.above.empty() && t.rss_above.empty() && !t.on_max && !t.on_oom && !t.psi && !t.every) {
    t.above_pct = {90};
  }
  w.baseline = !args.no_baseline;
}

}  // namespace goheap2pprof
