#include "agent/push/agent.h"

#include <google/protobuf/util/json_util.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "agent/common/http_listener.h"
#include "agent/common/liveness.h"
#include "agent/common/service_name.h"
#include "agent/common/signals.h"
#include "agent/push/metrics.h"
#include "agent/push/otlp_metrics.h"
#include "agent/push/otlp_resource.h"
#include "agent/push/sender.h"
#include "agent/worker/capture_metrics.h"
#include "agent/worker/pool.h"
#include "agent/worker/push_wire.h"
#include "agent/worker/role_parts.h"
#include "agent/worker/runtime_stats_wire.h"
#include "agent/worker/wire_codec.h"
#include "base/duration.h"
#include "base/error.h"
#include "base/expected.h"
#include "base/utf8.h"
#include "pprof/otlp_profile.h"
#include "proc/procfs.h"
#include "proto/parca_profilestore.pb.h"
#include "proto/pyroscope_push.pb.h"

namespace goheap2pprof {
namespace {

// What the agent remembers of one process between intervals.
struct ProcessState {
  explicit ProcessState(bool new_process) : from_zero(new_process) {}
  // Pyroscope's delta state (agent/worker/push_profile.h): none yet, to
  // start from zero or from a baseline; then the bytes the last push's
  // worker returned, which only the next push's worker reads.
  bool from_zero;
  std::string delta_state;
  std::optional<uint32_t> pushed_cycle;
  bool pushed = false;
  std::string last_error;  // logged once until it changes
  std::string last_goroutine_error;
  std::string last_metrics_error;
};

class Agent {
 public:
  Agent(const PushOptions& options, std::ostream& log)
      : options_(options),
        log_(log),
        parts_(options.shared, options.workers, WaitTurnTimeout(options.workers),
               Discovery::Options::From(options.discovery)),
        own_start_(ReadProcStat(getpid()).start_time) {
    auto log_line = [this](const std::string& line) { Log("goheap2pprof push: " + line); };
    if (!options.pyroscope_url.empty()) {
      BackendOptions b = Backend(options, "pyroscope", options.pyroscope_url);
      b.route = "/push.v1.PusherService/Push";
      b.content_type = "application/proto";
      b.headers.emplace_back("Connect-Protocol-Version", "1");
      if (!options.tenant.empty()) b.headers.emplace_back("X-Scope-OrgID", options.tenant);
      b.token_file = options.pyroscope_token_file;
      b.basic_auth_file = options.pyroscope_basic_auth_file;
      pyroscope_ = std::make_unique<BackendSender>(b, push_metrics_, log_line);
    }
    if (!options.parca_url.empty()) {
      BackendOptions b = Backend(options, "parca", ParcaApiBase(options.parca_url));
      b.route = "/profiles/writeraw";
      b.content_type = "application/json";
      b.token_file = options.parca_token_file;
      b.basic_auth_file = options.parca_basic_auth_file;
      parca_ = std::make_unique<BackendSender>(b, push_metrics_, log_line);
    }
    if (!options.otlp_url.empty()) {
      otlp_ =
          std::make_unique<BackendSender>(OtlpProfilesBackend(options), push_metrics_, log_line);
    }
    if (!options.otlp_metrics_url.empty()) {
      otlp_metrics_ = std::make_unique<BackendSender>(
          OtlpBackend(options, "otlp-metrics", options.otlp_metrics_url, "/v1/metrics",
                      "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"),
          push_metrics_, log_line);
    }
  }

  // The agent starts its shared discovery itself.
  void Start() {
    if (Discovery* own = parts_.own_discovery()) own->Start();
  }

  // push's own families, for the agent's one /metrics.
  std::string PushMetricsText() const { return push_metrics_.Render(); }

  std::string Metrics() {
    uint64_t processes = discovery_.Processes().size();
    capture_metrics_.SetDiscovery(processes, discovery_.scans(), discovery_.analyses(),
                                  discovery_.cache_hits());
    capture_metrics_.SetDiscoveryHealth(discovery_.scan_errors(),
                                        discovery_.last_success_seconds());
    capture_metrics_.SetIdentityFailures(discovery_.identity_failures());
    // Lock-free reads only (--metrics-listen's I/O thread), the pool's too.
    return capture_metrics_.Render() + push_metrics_.Render() + PoolUnreapedText(pool_.stats());
  }

  // A line names processes (their service name), which may hold terminal controls.
  void Log(const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu_);
    log_ << LogSafeUtf8(line) << "\n" << std::flush;
  }

  // One round: every visible process captured once.
  void Round() {
    std::map<std::pair<pid_t, uint64_t>, bool> seen;
    std::vector<GoProcess> todo;
    for (GoProcess& p : discovery_.Processes()) {
      if (!options_.pids.empty() && std::find(options_.pids.begin(), options_.pids.end(),
                                              p.facts.pid) == options_.pids.end()) {
        continue;
      }
      seen[{p.facts.pid, p.facts.start_time}] = true;
      todo.push_back(std::move(p));
    }
    // As many captures at once as there are workers; each process is
    // captured by one thread, and its state is only touched by that thread.
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < todo.size() && !stop_; i = next++) {
        // Boundary: one process. Its failure (a /proc read that fails, a
        // library's exception) is logged and the round goes on: the agent serves every other
        // process on the node. On a thread of its own, an exception let through would end the
        // agent.
        try {
          CaptureAndPush(todo[i]);
        } catch (const std::exception& e) {
          Log("goheap2pprof push: pid " + std::to_string(todo[i].facts.pid) + ": " + e.what());
        }
      }
    };
    std::vector<std::thread> threads;
    const size_t wanted =
        std::min(todo.size(), static_cast<size_t>(options_.workers.max_concurrent));
    for (size_t t = 1; t < wanted; ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
    // Forget processes that are gone (or were replaced under their pid). One
    // that a scan missed but still runs keeps its state: forgetting it would
    // make its next push a second copy of allocations already pushed.
    for (auto it = states_.begin(); it != states_.end();) {
      it = seen.count(it->first) || StillRunning(it->first) ? std::next(it) : states_.erase(it);
    }
  }

  // A profile a watch trigger captured (gzipped, from a worker), pushed at
  // once to every backend as a series of its own: the process's labels plus
  // trigger=<the trigger's name>, as parca-agent labels its OOM profiles.
  // Its alloc_* values are the process's totals (a series with one profile
  // has no previous one to subtract).
  void PushTriggered(const GoProcess& p, const std::string& profile_gz,
                     const std::string& trigger) {
    const std::string what = "pid " + std::to_string(p.facts.pid) + " (" + ServiceNameOfProcess(p) +
                             ") trigger " + trigger;
    // A series with one profile has no previous one to subtract.
    PushWork work = Work();
    work.from_zero = true;
    work.profile_gz = profile_gz;
    PoolResult r =
        RunCounted(pool_, capture_metrics_,
                   {WorkerOp::kPushConvert, p.facts.pid, EncodePushWork(work)}, "", Call());
    if (PoolOutcomeName(r) != "ok") {
      throw Error(ErrorKind::kInternal, "no profile to push: ",
                  r.outcome == PoolOutcome::kReplied ? r.reply.message : r.detail);
    }
    const PushMade made = DecodePushMade(r.reply.body, r.reply.body.size());
    std::vector<PushLabel> extras;
    for (const PushLabel& l : options_.labels) {
      if (l.first != "trigger") extras.push_back(l);
    }
    extras.emplace_back("trigger", trigger);
    if (pyroscope_) PushPyroscope(p, what, made, extras);
    if (parca_) PushParca(p, what, made, extras);
    if (otlp_) PushOtlp(p, what, made, extras);
  }

  void Stop(double drain_seconds) {
    stop_ = true;
    if (pyroscope_) pyroscope_->Stop(drain_seconds);
    if (parca_) parca_->Stop(drain_seconds);
    if (otlp_) otlp_->Stop(drain_seconds);
    if (otlp_metrics_) otlp_metrics_->Stop(drain_seconds);
  }

 private:
  // Unknown counts as running: keeping the state can never push an
  // allocation twice.
  static bool StillRunning(const std::pair<pid_t, uint64_t>& process) {
    return ProcessLiveness(process.first, process.second) != Liveness::kGone;
  }

  // The loop waits its turn for a worker; no capture is refused as busy.
  PoolCall Call() const {
    return {.role = PoolRole::kPush,
            .queue_timeout = WaitTurnTimeout(options_.workers),
            .cancelled = {}};
  }

  // What every push asks its worker to make.
  PushWork Work() const {
    PushWork work;
    work.limits = options_.limits;
    work.pyroscope = pyroscope_ != nullptr;
    work.parca = parca_ != nullptr;
    work.otlp = otlp_ != nullptr;
    return work;
  }

  // An OTLP signal's backend, as --otlp-protocol says: OTLP/HTTP's POST of
  // the protobuf message to <url><http_path>, or the gRPC call
  // <grpc_method> (/package.Service/Method) with it.
  static BackendOptions OtlpBackend(const PushOptions& o, const char* name, const std::string& url,
                                    const char* http_path, const char* grpc_method) {
    BackendOptions b = Backend(o, name, url);
    b.grpc = o.otlp_protocol == "grpc";
    b.route = b.grpc ? grpc_method : http_path;
    b.content_type = b.grpc ? "application/grpc" : "application/x-protobuf";
    return b;
  }

  static BackendOptions Backend(const PushOptions& o, const char* name, const std::string& url) {
    BackendOptions b;
    b.name = name;
    b.url = url;
    b.delivery = o.delivery;
    return b;
  }

  ProcessState& StateOf(const GoProcess& p) {
    // std::map keeps references valid across inserts; erasing happens only
    // between rounds.
    std::lock_guard<std::mutex> lock(states_mu_);
    auto it = states_.find({p.facts.pid, p.facts.start_time});
    if (it == states_.end()) {
      // A process that started after the agent has had all its
      // allocations while we were watching: its first profile's alloc
      // values are new.
      it = states_
               .emplace(std::make_pair(p.facts.pid, p.facts.start_time),
                        ProcessState(p.facts.start_time >= own_start_))
               .first;
    }
    return it->second;
  }

  // The profiles --profiles names, each on its own: a goroutine capture
  // that fails costs only the goroutine push.
  void CaptureAndPush(const GoProcess& p) {
    const std::string what =
        "pid " + std::to_string(p.facts.pid) + " (" + ServiceNameOfProcess(p) + ")";
    ProcessState& state = StateOf(p);
    if (pyroscope_ || parca_ || otlp_) {
      if (PushesProfile(options_, "heap")) PushHeap(p, what, state);
      if (PushesProfile(options_, "goroutine")) PushGoroutines(p, what, state);
    }
    if (otlp_metrics_) PushOtelMetrics(p, what, state);
  }

  // The runtime metrics of one process, every round (gauges and cumulative
  // sums: each push stands alone), read in a worker as `mem` reads them.
  void PushOtelMetrics(const GoProcess& p, const std::string& what, ProcessState& state) {
    PoolResult r =
        RunForProcess(pool_, capture_metrics_, {WorkerOp::kRuntimeStats, p.facts.pid, {}}, p.facts,
                      options_.discovery.filter, Call());
    if (PoolOutcomeName(r) != "ok") {
      LogFailure(r, "the runtime metrics of " + what, state.last_metrics_error);
      return;
    }
    state.last_metrics_error.clear();
    if (r.reply.start_time != p.facts.start_time) return;  // pid reused since the scan
    // The names the process gives itself (OTEL_CTX), read with the
    // statistics: its metrics carry them whether or not its profiles are
    // pushed too.
    OtelProcessIdentity own;
    const Expected<GoRuntimeStats> stats = TryDecodeRuntimeStats(r.reply.body, &own);
    if (!stats) {
      Log("goheap2pprof push: runtime metrics of " + what + ": " + stats.error().what());
      return;
    }
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    std::string body = OtlpMetricsRequest(
        OtelGoMetrics(*stats),
        EncodeOtlpResource(
            OtlpResourceAttributes(p, ServiceNameOfProcess(p), host_name_, options_.labels, own)),
        ProcessStartUnixNano(p.facts.start_time),
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
    if (options_.verbose) {
      Log("goheap2pprof push: otlp-metrics: " + what + ": request " + std::to_string(body.size()) +
          " bytes");
    }
    otlp_metrics_->Enqueue({std::move(body), what});
  }

  // A capture's outcome other than "ok", logged once until it changes; the
  // state's last_error is per profile.
  void LogFailure(const PoolResult& r, const std::string& what, std::string& last_error) {
    std::string why = r.outcome == PoolOutcome::kReplied ? r.reply.message : r.detail;
    if (why.empty()) why = PoolOutcomeName(r);
    if (why != last_error) Log("goheap2pprof push: capture of " + what + ": " + why);
    last_error = why;
  }

  // The goroutine profile, every round (a gauge: no delta, no cycle), to
  // every backend under __name__=goroutine.
  void PushGoroutines(const GoProcess& p, const std::string& what, ProcessState& state) {
    PoolResult r = RunForProcess(pool_, capture_metrics_,
                                 {WorkerOp::kPushGoroutine, p.facts.pid, EncodePushWork(Work())},
                                 p.facts, options_.discovery.filter, Call());
    if (PoolOutcomeName(r) != "ok") {
      LogFailure(r, "the goroutines of " + what, state.last_goroutine_error);
      return;
    }
    state.last_goroutine_error.clear();
    if (r.reply.start_time != p.facts.start_time) return;  // pid reused since the scan
    Expected<PushMade> made =
        TryDecodeReply([&r] { return DecodePushMade(r.reply.body, r.reply.body.size()); });
    if (!made) {
      Log("goheap2pprof push: goroutines of " + what + ": " + made.error().what());
      return;
    }
    if (pyroscope_) PushPyroscope(p, what, *made, options_.labels, "goroutine");
    if (parca_) PushParca(p, what, *made, options_.labels, "goroutine");
    if (otlp_) PushOtlp(p, what, *made, options_.labels, "goroutine");
  }

  void PushHeap(const GoProcess& p, const std::string& what, ProcessState& state) {
    const pid_t pid = p.facts.pid;
    // A state too large for a request (it came in a reply of at most the
    // same limit, with the profiles beside it) would fail every push of the
    // process: it starts again from a baseline instead.
    if (state.delta_state.size() + 4096 > options_.workers.limits.max_reply_bytes) {
      state.from_zero = false;
      state.delta_state.clear();
    }
    PushWork work = Work();
    work.from_zero = state.from_zero;
    work.state = state.delta_state;
    // Only a profile of the process the scan found and the filter admits,
    // as the worker found it, is pushed. The worker makes what is pushed:
    // this process decodes no profile.
    PoolResult r =
        RunForProcess(pool_, capture_metrics_, {WorkerOp::kPush, pid, EncodePushWork(work)},
                      p.facts, options_.discovery.filter, Call());
    if (PoolOutcomeName(r) != "ok") {
      LogFailure(r, what, state.last_error);
      // A state the worker could not read (a compromised worker wrote it)
      // is dropped: the next push is a baseline, which never pushes an
      // allocation twice.
      if (r.outcome == PoolOutcome::kReplied &&
          r.reply.error_kind == static_cast<int32_t>(ErrorKind::kMalformed)) {
        state.from_zero = false;
        state.delta_state.clear();
      }
      return;
    }
    state.last_error.clear();
    if (r.reply.start_time != p.facts.start_time) return;  // pid reused since the scan
    if (state.pushed && r.reply.cycle && state.pushed_cycle == r.reply.cycle) {
      push_metrics_.Unchanged();
      return;
    }
    Expected<PushMade> made =
        TryDecodeReply([&r] { return DecodePushMade(r.reply.body, r.reply.body.size()); });
    if (!made) {
      Log("goheap2pprof push: " + what + ": " + made.error().what());
      return;
    }
    state.delta_state = std::move(made->state);
    if (pyroscope_) PushPyroscope(p, what, *made, options_.labels);
    if (otlp_) PushOtlp(p, what, *made, options_.labels);
    if (parca_ && !PushParca(p, what, *made, options_.labels)) return;
    state.pushed = true;
    state.pushed_cycle = r.reply.cycle;
    ReadMemoryStats(p, what);
  }

  // With each pushed profile, the process's Go memory statistics: nothing
  // is attached to the profile (the backends have no place for it); the
  // reads are counted on /metrics and, with -v, summed up in the log.
  void ReadMemoryStats(const GoProcess& p, const std::string& what) {
    PoolResult r =
        RunForProcess(pool_, capture_metrics_, {WorkerOp::kRuntimeStats, p.facts.pid, {}}, p.facts,
                      options_.discovery.filter, Call());
    if (PoolOutcomeName(r) != "ok") return;
    const Expected<GoRuntimeStats> stats = TryDecodeRuntimeStats(r.reply.body);
    if (!stats) {
      // Logged, the round goes on. Counted as the worker answered, as
      // serve counts it.
      Log("goheap2pprof push: memory statistics of " + what + ": " + stats.error().what());
      return;
    }
    if (!options_.verbose) return;
    Log("goheap2pprof push: " + what + ": Go runtime total " +
        std::to_string(stats->Uint("/memory/classes/total:bytes").value_or(0)) +
        " bytes, heap objects " +
        std::to_string(stats->Uint("/memory/classes/heap/objects:bytes").value_or(0)) +
        " bytes, goal " + std::to_string(stats->Uint("/gc/heap/goal:bytes").value_or(0)));
  }

  std::string ServiceNameOfProcess(const GoProcess& p) const {
    for (const PushLabel& l :
         PushSeriesLabels(p, options_.discovery.service_name_from, {}, false)) {
      if (l.first == "service_name") return l.second;
    }
    return "";
  }

  void PushPyroscope(const GoProcess& p, const std::string& what, const PushMade& made,
                     const std::vector<PushLabel>& extras, std::string_view name = "memory") {
    if (made.trimmed > 0) {
      push_metrics_.Trimmed(made.trimmed);
      Log("goheap2pprof push: " + what + (name == "memory" ? "" : " " + std::string(name)) +
          ": trimmed " + std::to_string(made.trimmed) + " of " + std::to_string(made.nonzero) +
          " samples to fit Pyroscope's limits");
    }
    if (made.resets > 0) push_metrics_.Resets(made.resets);
    if (made.baseline) push_metrics_.Baseline();
    if (made.pyroscope.empty()) return;
    goheap2pprof::pyroscope::push::PushRequest request;
    auto* series = request.add_series();
    for (const PushLabel& l : PushSeriesLabels(p, options_.discovery.service_name_from, extras,
                                               /*pyroscope=*/true, name)) {
      auto* pair = series->add_labels();
      pair->set_name(l.first);
      pair->set_value(l.second);
    }
    auto* sample = series->add_samples();
    sample->set_raw_profile(made.pyroscope);
    sample->set_id(RandomUuid());
    std::string body;
    request.SerializeToString(&body);
    if (options_.verbose) {
      Log("goheap2pprof push: pyroscope: " + what + ": " + std::string(name) + ", " +
          std::to_string(made.pyroscope_samples) + " samples, " +
          std::to_string(sample->raw_profile().size()) + " bytes gzipped, request " +
          std::to_string(body.size()) + " bytes");
    }
    pyroscope_->Enqueue({std::move(body), what});
  }

  // False, said in the log, if the request cannot be made.
  bool PushParca(const GoProcess& p, const std::string& what, const PushMade& made,
                 const std::vector<PushLabel>& extras, std::string_view name = "memory") {
    goheap2pprof::parca::WriteRawRequest request;
    // Parca's scraper sends normalized_addresses (false by default) for a
    // raw Go pprof: addresses are the process's own PCs.
    request.set_normalized(false);
    auto* series = request.add_series();
    for (const PushLabel& l : PushSeriesLabels(p, options_.discovery.service_name_from, extras,
                                               /*pyroscope=*/false, name)) {
      auto* label = series->mutable_labels()->add_labels();
      label->set_name(l.first);
      label->set_value(l.second);
    }
    // The cumulative profile as the runtime serves it (the worker made sure
    // duration_nanos is 0: Parca stores it as a snapshot, not a rate).
    series->add_samples()->set_raw_profile(made.parca);
    std::string body;
    google::protobuf::util::JsonPrintOptions json;
    json.always_print_primitive_fields = true;
    if (!google::protobuf::util::MessageToJsonString(request, &body, json).ok()) {
      Log("goheap2pprof push: " + what + ": cannot encode a WriteRaw request as JSON");
      return false;
    }
    if (options_.verbose) {
      Log("goheap2pprof push: parca: " + what + ": " + std::string(name) + ", " +
          std::to_string(made.parca_samples) + " samples, request " + std::to_string(body.size()) +
          " bytes");
    }
    parca_->Enqueue({std::move(body), what});
    return true;
  }

  // OTLP profiles over HTTP or gRPC (agent/push/otlp_resource.h), with the
  // version header (pprof/otlp_profile.h; gRPC metadata over gRPC); a server
  // that speaks another version is said once.
  static BackendOptions OtlpProfilesBackend(const PushOptions& o) {
    BackendOptions b =
        OtlpBackend(o, "otlp", o.otlp_url, "/v1development/profiles",
                    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export");
    b.headers.emplace_back(kOtlpProfilesVersionHeader, o.otlp_profiles_version);
    b.token_file = o.otlp_token_file;
    b.basic_auth_file = o.otlp_basic_auth_file;
    b.explain_rejection = [version = o.otlp_profiles_version](const std::string& why) {
      return ExplainOtlpProfilesRejection(why, kOtlpProfilesVersionHeader, version,
                                          kOtlpProfilesRelease);
    };
    return b;
  }

  // One ResourceProfiles: the process's resource (made here: the agent
  // knows the process; the names it gives itself, if any, the worker read)
  // around what the worker made (never decoded here).
  void PushOtlp(const GoProcess& p, const std::string& what, const PushMade& made,
                const std::vector<PushLabel>& extras, std::string_view name = "memory") {
    if (made.otlp_resource_profiles.empty()) return;
    const std::string resource = EncodeOtlpResource(
        OtlpResourceAttributes(p, ServiceNameOfProcess(p), host_name_, extras, made.otel));
    std::string body =
        JoinOtlpProfilesRequest(resource, {made.otlp_resource_profiles, made.otlp_dictionary});
    if (options_.verbose) {
      Log("goheap2pprof push: otlp: " + what + ": " + std::string(name) + ", " +
          std::to_string(made.otlp_samples) + " samples, request " + std::to_string(body.size()) +
          " bytes");
    }
    otlp_->Enqueue({std::move(body), what});
  }

  const PushOptions& options_;
  std::ostream& log_;
  std::mutex log_mu_;
  PushMetrics push_metrics_;
  // push's own parts, or the agent's (options_.shared).
  RoleParts parts_;
  CaptureMetrics& capture_metrics_ = parts_.metrics();
  WorkerPool& pool_ = parts_.pool();
  Discovery& discovery_ = parts_.discovery();
  uint64_t own_start_;
  std::unique_ptr<BackendSender> pyroscope_, parca_, otlp_, otlp_metrics_;
  const std::string host_name_ = HostName();
  std::mutex states_mu_;
  std::map<std::pair<pid_t, uint64_t>, ProcessState> states_;
  std::atomic<bool> stop_{false};
};

}  // namespace

std::string ParcaApiBase(const std::string& url) {
  ParsedUrl parsed = ParsePushUrl(url);
  return parsed.path.empty() ? parsed.scheme_host_port + "/api" : url;
}

std::string RandomUuid() {
  unsigned char b[16];
  size_t got = 0;
  while (got < sizeof(b)) {
    ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(ErrorKind::kIo, "getrandom failed");
    got += static_cast<size_t>(n);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 15];
  }
  return out;
}

namespace {

// The host of a URL ParsePushUrl accepted: "h" of http://h:port, "v6" of
// http://[v6]:port.
std::string UrlHost(const std::string& url) {
  const std::string rest = ParsePushUrl(url).scheme_host_port.substr(url.find("://") + 3);
  if (rest.starts_with('[')) return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.rfind(':'));
}

// A token or basic auth sent over http:// crosses the network in clear text,
// where anyone on the path can read and replay it: refused unless asked
// for. A loopback URL (a local Alloy, a port-forward) never leaves the host.
void CheckCredentialsInClear(const PushOptions& o, const std::string& url, const char* backend,
                             const std::string& token_file, const std::string& basic_file) {
  if (url.empty() || (token_file.empty() && basic_file.empty())) return;
  if (!url.starts_with("http://") || IsLoopbackHost(UrlHost(url)) || o.allow_insecure_credentials) {
    return;
  }
  throw Error(ErrorKind::kUsage, "--", backend,
              token_file.empty() ? "-basic-auth-file" : "-token-file",
              " would send its credentials in clear text to ", url)
      .WithHint(
          "use an https:// URL (with --ca-file for a private CA), or give "
          "--allow-insecure-credentials if the path to the backend is trusted; a loopback "
          "URL needs neither");
}

}  // namespace

bool PushesProfile(const PushOptions& o, std::string_view profile) {
  return std::find(o.profiles.begin(), o.profiles.end(), profile) != o.profiles.end();
}

void ValidatePushOptions(const PushOptions& o) {
  if (o.pyroscope_url.empty() && o.parca_url.empty() && o.otlp_url.empty() &&
      o.otlp_metrics_url.empty()) {
    throw Error(ErrorKind::kUsage,
                "push needs --pyroscope URL, --parca URL, --otlp URL or --otlp-metrics URL (or "
                "several)");
  }
  if (o.otlp_protocol != "http/protobuf" && o.otlp_protocol != "grpc") {
    throw Error(ErrorKind::kUsage, "--otlp-protocol ", o.otlp_protocol, ": unknown protocol")
        .WithHint("give http/protobuf or grpc");
  }
  if (!o.otlp_metrics_url.empty()) ParsePushUrl(o.otlp_metrics_url);
  if (o.profiles.empty()) throw Error(ErrorKind::kUsage, "--profiles names no profile");
  for (const std::string& name : o.profiles) {
    if (name != "heap" && name != "goroutine") {
      throw Error(ErrorKind::kUsage, "--profiles ", name, ": unknown profile")
          .WithHint("give heap, goroutine or heap,goroutine");
    }
  }
  if (!o.pyroscope_url.empty()) ParsePushUrl(o.pyroscope_url);
  if (!o.parca_url.empty()) ParsePushUrl(o.parca_url);
  if (!o.otlp_url.empty()) ParsePushUrl(o.otlp_url);
  CheckCredentialsInClear(o, o.pyroscope_url, "pyroscope", o.pyroscope_token_file,
                          o.pyroscope_basic_auth_file);
  CheckCredentialsInClear(o, o.parca_url, "parca", o.parca_token_file, o.parca_basic_auth_file);
  CheckCredentialsInClear(o, o.otlp_url, "otlp", o.otlp_token_file, o.otlp_basic_auth_file);
  if (o.interval < std::chrono::milliseconds(100))
    throw Error(ErrorKind::kUsage, "--interval must be >= 100ms");
  if (o.delivery.timeout <= o.delivery.timeout.zero() ||
      o.discovery.interval <= o.discovery.interval.zero() ||
      o.workers.capture_timeout <= o.workers.capture_timeout.zero()) {
    throw Error(ErrorKind::kUsage,
                "--push-timeout, --discover-interval and --capture-timeout must be positive");
  }
  if (o.delivery.queue_limit < 1) throw Error(ErrorKind::kUsage, "--queue must be at least 1");
  if (o.delivery.queue_bytes_limit < 1) {
    throw Error(ErrorKind::kUsage, "--max-queue-bytes must be at least 1");
  }
  if (o.delivery.retry_after_max < o.delivery.retry_after_max.zero()) {
    throw Error(ErrorKind::kUsage, "--retry-after-max must not be negative");
  }
  if (o.delivery.max_attempts < 1) throw Error(ErrorKind::kUsage, "--attempts must be at least 1");
  if (o.workers.max_concurrent < 1 || o.workers.max_concurrent > 64) {
    throw Error(ErrorKind::kUsage, "--max-concurrent must be 1..64");
  }
  CheckExtraLabels(o.labels);
  ValidateServiceNameFrom(o.discovery.service_name_from);
  if (!o.metrics_listener.listen.empty()) o.metrics_listener.Validate();
}

namespace {

// The agent's own /metrics; every other path is net/http's 404.
class MetricsHandler : public HttpHandler {
 public:
  explicit MetricsHandler(PushRole& role) : role_(role) {}
  bool Blocks(const HttpRequest&) const override { return false; }
  HttpReply Handle(const HttpRequest& req) override {
    std::string_view path = std::string_view(req.target).substr(0, req.target.find('?'));
    if (path != "/metrics") return Error(404, "404 page not found");
    HttpReply res;
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.SetBody(role_.Metrics());
    return res;
  }

 private:
  PushRole& role_;
};

}  // namespace

struct PushRole::Impl {
  Impl(const PushOptions& o, std::ostream& log) : options(o), agent(o, log) {}
  const PushOptions& options;
  Agent agent;
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
};

PushRole::PushRole(const PushOptions& options, std::ostream& log)
    : impl_(std::make_unique<Impl>(options, log)) {}
PushRole::~PushRole() = default;

void PushRole::Run() {
  Agent& agent = impl_->agent;
  agent.Start();
  const std::chrono::steady_clock::duration interval = impl_->options.interval;
  auto next = std::chrono::steady_clock::now() + interval;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(impl_->mu);
      if (impl_->wake.wait_until(lock, next, [&] { return impl_->stop; })) break;
    }
    agent.Round();
    // A round parses and builds large profiles (a process with 100,000
    // buckets takes tens of MB) and frees them all; give the memory back
    // rather than keep the peak for the agent's life.
    malloc_trim(0);
    next += interval;
    // A round longer than the interval skips the ticks it overran.
    auto now = std::chrono::steady_clock::now();
    while (next <= now) next += interval;
  }
  agent.Stop(Seconds(impl_->options.delivery.timeout));
}

void PushRole::Stop() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stop = true;
  impl_->wake.notify_all();
}

std::string PushRole::Metrics() { return impl_->agent.Metrics(); }
std::string PushRole::PushMetricsText() const { return impl_->agent.PushMetricsText(); }
void PushRole::Log(const std::string& line) { impl_->agent.Log(line); }

void PushRole::PushTriggered(const GoProcess& p, const std::string& profile_gz,
                             const std::string& trigger) {
  impl_->agent.PushTriggered(p, profile_gz, trigger);
}

int RunPush(const PushOptions& options, std::ostream& log) {
  ValidatePushOptions(options);
  HttpClientGlobalInit();  // before the first thread
  sigset_t signals = BlockStopSignals();
  BlockReloadSignal(signals);

  std::unique_ptr<HttpListener> metrics_server;
  std::string metrics_address;
  if (!options.metrics_listener.listen.empty()) {
    HttpListenerOptions listen = options.metrics_listener.Options();
    // /metrics never blocks: one handler thread that stays idle.
    listen.limits.handler_threads = 1;
    listen.limits.handler_queue = 0;
    metrics_server = std::make_unique<HttpListener>(listen);
    metrics_address = metrics_server->address();
  }
  PushRole role(options, log);
  MetricsHandler metrics_handler(role);
  std::thread metrics_thread;
  if (metrics_server) {
    metrics_thread = std::thread([&] { metrics_server->Run(metrics_handler); });
  }
  std::thread signal_thread([&] {
    const int sig = WaitForStop(signals, [&] {
      if (metrics_server) role.Log(ReloadOnSignal(*metrics_server, "goheap2pprof push"));
    });
    role.Log("goheap2pprof push: signal " + std::to_string(sig) + ", shutting down");
    role.Stop();
  });

  role.Log("goheap2pprof push: pushing every " + std::to_string(Seconds(options.interval)) + " s" +
           (options.pyroscope_url.empty() ? "" : " to Pyroscope " + options.pyroscope_url) +
           (options.parca_url.empty() ? "" : " to Parca " + options.parca_url) +
           (options.otlp_url.empty()
                ? ""
                : " to OTLP " + options.otlp_url + " (" + options.otlp_protocol + ")") +
           (options.otlp_metrics_url.empty()
                ? ""
                : " runtime metrics to OTLP " + options.otlp_metrics_url + " (" +
                      options.otlp_protocol + ")") +
           (metrics_address.empty() ? "" : "; metrics on " + metrics_address));
  role.Run();
  signal_thread.join();
  if (metrics_thread.joinable()) {
    metrics_server->Stop();
    metrics_thread.join();
  }
  return 0;
}

}  // namespace goheap2pprof
