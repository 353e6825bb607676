// `goheap2pprof push`: a long-running node agent that captures the heap
// profile of every discovered Go process each --interval and pushes it to
// Grafana Pyroscope (Connect unary push.v1.PusherService/Push, binary
// protobuf), Parca (WriteRaw through its HTTP gateway, JSON) and/or an
// OpenTelemetry Collector (OTLP profiles over HTTP/protobuf, one
// ResourceProfiles per process, alloc_* as deltas as for Pyroscope;
// docs/opentelemetry.md). It uses
// serve's discovery, filters, service names and confined capture workers
// (agent/common/discovery.h, agent/worker/pool.h); a process is pushed only when its profile
// cycle advanced since its last push. Pyroscope gets alloc_* as deltas
// (agent/worker/push_profile.h), Parca the cumulative profile; with
// --profiles goroutine, each process's goroutine profile too, as both
// backends' goroutine profile type. All are made in
// the capture worker (agent/worker/push_wire.h): push itself decodes no
// profile. With --otlp-metrics, each process's Go runtime metrics go to an
// OTLP receiver under OpenTelemetry's names (agent/push/otlp_metrics.h),
// every round. Delivery is per backend
// (agent/push/sender.h). The agent's own health is on a loopback /metrics.
//
//   PushOptions o;  o.pyroscope_url = "http://pyroscope:4040";
//   return RunPush(o, std::cerr);  // until SIGTERM or SIGINT
#pragma once

#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/common/discovery.h"
#include "agent/common/http_listener.h"
#include "agent/push/labels.h"
#include "agent/push/sender.h"
#include "agent/worker/pool.h"
#include "agent/worker/push_profile.h"
#include "agent/worker/worker.h"
#include "pprof/otlp_profile.h"

namespace goheap2pprof {

struct PushOptions {
  std::string pyroscope_url;
  std::string parca_url;
  std::string otlp_url;  // --otlp: OTLP profiles (agent/push/otlp_resource.h)
  // The version announced (pprof/otlp_profile.h); another one only in tests
  // (GOHEAP2PPROF_TEST_OTLP_PROFILES_VERSION), to show a server's refusal.
  std::string otlp_profiles_version{kOtlpProfilesVersion};
  // --otlp-metrics: an OTLP receiver's base URL, for the runtime metrics
  // (agent/push/otlp_metrics.h); --otlp-protocol (both OTLP signals):
  // "http/protobuf" or "grpc".
  std::string otlp_metrics_url;
  std::string otlp_protocol = "http/protobuf";
  std::chrono::milliseconds interval{15000};
  // --profiles: which profiles each round pushes, "heap" (__name__=memory)
  // and "goroutine" (__name__=goroutine, pushed every round: its counts
  // change without a garbage collection). Only the heap by default: a
  // goroutine capture walks every goroutine of every process each interval.
  std::vector<std::string> profiles = {"heap"};
  std::vector<PushLabel> labels;  // --label extras
  std::string tenant;             // X-Scope-OrgID
  std::string pyroscope_token_file, pyroscope_basic_auth_file;
  std::string parca_token_file, parca_basic_auth_file;
  std::string otlp_token_file, otlp_basic_auth_file;
  // --allow-insecure-credentials: send a token or basic auth over http://
  // to a host that is not loopback (refused otherwise: clear text).
  bool allow_insecure_credentials = false;
  DeliverySettings delivery;
  // --metrics-listen (empty: no listener) and its clients' rules, serve's
  // (ValidateListenSecurity).
  ListenerFlags metrics_listener = ListenerFlags::Named("--metrics-listen", "127.0.0.1:6062");
  std::vector<pid_t> pids;  // empty: every discovered process
  DiscoverySettings discovery;
  WorkerSettings workers;
  PushLimits limits;
  bool verbose = false;
  // In `goheap2pprof agent`: the pool, discovery and metrics of the agent,
  // used instead of push's own (RoleParts; then workers and discovery are
  // the agent's, read for the round's width and the labels only).
  const SharedParts* shared = nullptr;
};

// Throws Error(kUsage) for options that cannot work.
void ValidatePushOptions(const PushOptions& options);

// Whether --profiles names `profile`.
bool PushesProfile(const PushOptions& options, std::string_view profile);

// The base URL of a Parca server's HTTP API: Parca serves its grpc-gateway
// under /api, so a URL without a path gets it.
std::string ParcaApiBase(const std::string& url);

// A random (version 4) UUID, for the ID field of a Pyroscope sample.
std::string RandomUuid();

// Runs until SIGTERM/SIGINT; returns the exit code.
int RunPush(const PushOptions& options, std::ostream& log);

// push as one role of the agent: Run pushes every process each --interval
// until Stop (then drains the queues for up to --push-timeout). The caller
// handles signals and serves the metrics.
class PushRole {
 public:
  PushRole(const PushOptions& options, std::ostream& log);
  ~PushRole();
  void Run();
  void Stop();
  // The capture metrics and push's own (push's /metrics).
  std::string Metrics();
  // push's own families only (the agent renders the shared ones once).
  std::string PushMetricsText() const;
  void Log(const std::string& line);
  // A profile a watch trigger captured, pushed at once with the process's
  // labels plus trigger=<trigger>. Throws Error for an unparsable profile.
  void PushTriggered(const GoProcess& p, const std::string& profile_gz, const std::string& trigger);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace goheap2pprof
