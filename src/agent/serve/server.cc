#include "agent/serve/server.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "agent/common/discovery.h"
#include "agent/common/http_listener.h"
#include "agent/common/service_name.h"
#include "agent/common/signals.h"
#include "agent/serve/go_metrics_text.h"
#include "agent/serve/query.h"
#include "agent/worker/capture_metrics.h"
#include "agent/worker/pool.h"
#include "agent/worker/role_parts.h"
#include "agent/worker/runtime_stats_wire.h"
#include "app/capture.h"
#include "base/duration.h"
#include "base/error.h"
#include "base/utf8.h"
#include "pprof/flame_graph/flame_graph.h"
#include "pprof/output.h"
#include "proc/address_space.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

// The worker's word for how it came by the profile's tables (a worker is
// not trusted: an unknown value is said as such).
std::string TablesName(uint32_t tables) {
  if (tables > static_cast<uint32_t>(ProfileTablesOrigin::kContinued)) {
    return "(unknown " + std::to_string(tables) + ")";
  }
  return ProfileTablesOriginName(static_cast<ProfileTablesOrigin>(tables));
}

// net/http/pprof's serveError.
void ServeError(HttpReply& res, int status, const std::string& text) {
  res.status = status;
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.headers.emplace_back("X-Go-Pprof", "1");
  res.content_type = "text/plain; charset=utf-8";
  // The text may name the process (its executable's path, from the target).
  res.SetBody(ValidUtf8(text) + "\n");
}

void SetContent(HttpReply& res, std::string body, const char* content_type) {
  res.SetBody(std::move(body));
  res.content_type = content_type;
}

void SetContent(HttpReply& res, std::shared_ptr<const std::string> body, const char* content_type) {
  res.body = std::move(body);
  res.content_type = content_type;
}

// A counted slot, taken if fewer than max are held; given back on
// destruction.
class DeltaSlot {
 public:
  DeltaSlot(std::atomic<int>& count, int max) : count_(count) {
    held_ = count_.fetch_add(1) < max;
    if (!held_) count_.fetch_sub(1);
  }
  ~DeltaSlot() {
    if (held_) count_.fetch_sub(1);
  }
  DeltaSlot(const DeltaSlot&) = delete;
  DeltaSlot& operator=(const DeltaSlot&) = delete;
  bool held() const { return held_; }

 private:
  std::atomic<int>& count_;
  bool held_ = false;
};

// A capture's outcome as the requests that share it see it: the result
// without its body, and the body, immutable, which every one of them (and
// every connection that writes it) holds as one copy.
struct Captured {
  PoolResult result;
  std::shared_ptr<const std::string> body;
};
// What a request's client may still read: HttpRequest::client_gone.
using ClientGone = std::function<bool()>;

struct Flight {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Captured captured;
  // The leader's and each joiner's client: the capture is dropped from the
  // pool's queue once every one of them is gone (one that cannot tell
  // keeps it).
  std::vector<ClientGone> clients;

  bool AllClientsGone() {
    std::lock_guard<std::mutex> lock(mu);
    return std::all_of(clients.begin(), clients.end(),
                       [](const ClientGone& gone) { return gone && gone(); });
  }
};

class Service {
 public:
  Service(const ServeOptions& options, std::ostream& log, std::string listen_address)
      : options_(options),
        log_(log),
        listen_address_(std::move(listen_address)),
        parts_(options.shared, options.workers, options.timeout,
               Discovery::Options::From(options.discovery)),
        boot_time_(BootTimeSeconds()),
        clock_ticks_(sysconf(_SC_CLK_TCK)) {}

  // The agent starts its shared discovery itself.
  void Start() {
    if (Discovery* own = parts_.own_discovery()) own->Start();
  }

  // Whether a request may wait for a capture or a delta window.
  bool Blocks(const HttpRequest& req) const {
    ServeRoute route = ParseServeTarget(req.target, QueryLimits());
    return !route.error &&
           (route.endpoint == Endpoint::kProfile || route.endpoint == Endpoint::kProcessMetrics ||
            route.endpoint == Endpoint::kFlamegraph);
  }

  void Handle(const HttpRequest& req, HttpReply& res) {
    ServeRoute route = ParseServeTarget(req.target, QueryLimits());
    if (route.error) {
      ServeError(res, route.error->status, route.error->text);
      return;
    }
    switch (route.endpoint) {
      case Endpoint::kIndex:
        return Index(res);
      case Endpoint::kTargets:
        return Targets(res);
      case Endpoint::kMetrics:
        discovery_stats_to_metrics();
        // Lock-free reads only: this runs on the listener's I/O thread.
        SetContent(res,
                   metrics_.Render() + (options_.shared && options_.shared->more_metrics
                                            ? options_.shared->more_metrics()
                                            : PoolUnreapedText(pool_.stats())),
                   "text/plain; version=0.0.4; charset=utf-8");
        return;
      case Endpoint::kProfile:
        return Profile(route.profile, req.client_gone, res);
      case Endpoint::kProcessMetrics:
        return ProcessMetrics(route.profile.pid, route.metric_names, req.client_gone, res);
      case Endpoint::kFlamegraph:
        return Flamegraph(route.flamegraph, req.client_gone, res);
    }
  }

  CaptureMetrics& metrics() { return metrics_; }
  // One whole line at a time: requests are handled on many threads.
  void Log(const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu_);
    log_ << line << std::flush;
  }
  void Stop() { stopping_ = true; }

 private:
  ServeQueryLimits QueryLimits() const {
    ServeQueryLimits limits;
    limits.max_seconds = options_.max_delta_seconds;
    return limits;
  }

  void discovery_stats_to_metrics() {
    // Processes first: the scan count read after it is never smaller than
    // the scan that found them.
    uint64_t processes = discovery_.Processes().size();
    metrics_.SetDiscovery(processes, discovery_.scans(), discovery_.analyses(),
                          discovery_.cache_hits());
    metrics_.SetDiscoveryHealth(discovery_.scan_errors(), discovery_.last_success_seconds());
    metrics_.SetIdentityFailures(discovery_.identity_failures());
  }

  // With -v: what isolation costs, the round trip to the worker minus its
  // own time, and whether the worker's state of the process spared the
  // build.
  void LogCaptureCost(pid_t pid, WorkerOp op, double seconds, const PoolResult& result) {
    std::ostringstream line;
    line << std::fixed << std::setprecision(2) << "goheap2pprof serve: capture pid " << pid
         << " op " << static_cast<int>(op) << ": " << seconds * 1000 << " ms, "
         << static_cast<double>(result.reply.worker_ns) / 1e6 << " ms in the worker, "
         << result.reply.body.size() << (result.reply.inflated_size ? " bytes gzipped" : " bytes");
    if (result.reply.error_kind == 0) line << ", tables " << TablesName(result.reply.tables);
    line << "\n";
    Log(line.str());
  }

  // One capture per (pid, op) at a time (per sample index for a flame
  // graph): later requests wait for the running one and share its answer.
  // With may_join false the caller gets a capture of its own, begun now,
  // which others may join. `base` is the payload of a delta op, which never
  // joins (may_join false), or a flame graph's sample index. While the
  // capture waits for a worker it is dropped if all its clients have gone.
  Captured SharedCapture(const ProcessFacts& facts, WorkerOp op, bool may_join, std::string base,
                         const ClientGone& gone) {
    const pid_t pid = facts.pid;
    std::shared_ptr<Flight> flight;
    bool leader = false;
    const auto key =
        std::make_tuple(pid, static_cast<int>(op), op == WorkerOp::kFlamegraph ? base : "");
    {
      std::lock_guard<std::mutex> lock(flights_mu_);
      auto it = flights_.find(key);
      if (it != flights_.end() && may_join) {
        flight = it->second;
      } else {
        flight = std::make_shared<Flight>();
        flights_[key] = flight;
        leader = true;
      }
      std::lock_guard<std::mutex> flight_lock(flight->mu);
      flight->clients.push_back(gone);
    }
    if (!leader) {
      std::unique_lock<std::mutex> lock(flight->mu);
      flight->cv.wait(lock, [&] { return flight->done; });
      return flight->captured;
    }
    double seconds = 0;
    PoolResult result =
        RunForProcess(pool_, metrics_, {op, pid, std::move(base)}, facts, options_.discovery.filter,
                      {.role = PoolRole::kServe,
                       .queue_timeout = options_.timeout,
                       .cancelled = [flight] { return flight->AllClientsGone(); }},
                      &seconds);
    if (options_.verbose) LogCaptureCost(pid, op, seconds, result);
    {
      std::lock_guard<std::mutex> lock(flights_mu_);
      auto it = flights_.find(key);
      if (it != flights_.end() && it->second == flight) flights_.erase(it);
    }
    Captured captured;
    captured.body = std::make_shared<const std::string>(std::move(result.reply.body));
    result.reply.body = {};
    captured.result = std::move(result);
    {
      std::lock_guard<std::mutex> lock(flight->mu);
      flight->captured = captured;
      flight->done = true;
    }
    flight->cv.notify_all();
    return captured;
  }

  // A capture of the process the request was for, as discovery found it
  // (facts), and nothing else: a reply from whatever held the pid later, or
  // from a process the filter refuses as the worker found it, is turned
  // into the 410 or 404 it deserves (KeepToRequestedProcess).
  Captured CaptureOf(const ProcessFacts& facts, WorkerOp op, const ClientGone& gone,
                     bool may_join = true, std::string base = {}) {
    Captured c = SharedCapture(facts, op, may_join, std::move(base), gone);
    // A joiner's process is the leader's (same pid); kept again to its own.
    PoolResult& r = c.result;
    if (r.outcome == PoolOutcome::kReplied)
      KeepToRequestedProcess(facts, options_.discovery.filter, r.reply);
    // The body only goes with a success.
    if (r.outcome != PoolOutcome::kReplied || r.reply.error_kind != 0) {
      c.body = std::make_shared<const std::string>();
    }
    return c;
  }

  // Answers a failed capture; false if r is a success.
  bool ServeFailure(const PoolResult& r, pid_t pid, HttpReply& res) {
    switch (r.outcome) {
      case PoolOutcome::kBusy:
        res.headers.emplace_back(
            "Retry-After", std::to_string(static_cast<int>(std::ceil(Seconds(options_.timeout)))));
        ServeError(res, 503,
                   "busy: " + (r.detail.empty() ? std::to_string(options_.workers.max_concurrent) +
                                                      " captures are running and none finished "
                                                      "within the timeout; retry later"
                                                : r.detail));
        return true;
      case PoolOutcome::kCrashed:
        ServeError(res, 500, "capture of process " + std::to_string(pid) + " failed: " + r.detail);
        return true;
      case PoolOutcome::kCancelled:
        // Every client of it left: this answer goes nowhere.
        ServeError(res, 503, "the capture was cancelled: its clients disconnected");
        return true;
      case PoolOutcome::kTimedOut:
        ServeError(res, 504,
                   "capture of process " + std::to_string(pid) + " did not finish in " +
                       std::to_string(Seconds(options_.workers.capture_timeout)) +
                       " s; its worker was stopped");
        return true;
      case PoolOutcome::kReplied:
        break;
    }
    if (r.reply.error_kind == 0) return false;
    int status = 500;
    switch (static_cast<ErrorKind>(r.reply.error_kind)) {
      case ErrorKind::kNoSuchProcess:
        // Exited: 404, as for a pid that never existed. Replaced under the
        // same pid (reused, or an exec in place): 410, the process the
        // request was for is gone for good and the pid means another now.
        if (r.reply.replaced) {
          ServeError(res, 410,
                     "process " + std::to_string(pid) +
                         " was replaced by another process under the same pid: " + r.reply.message);
          return true;
        }
        status = 404;
        break;
      case ErrorKind::kNotGo:
        status = 404;
        break;
      case ErrorKind::kPermission:
        status = 403;
        break;
      case ErrorKind::kSamplingDisabled:
        status = 409;
        break;
      default:
        break;
    }
    ServeError(res, status, r.reply.message);
    return true;
  }

  // The process discovery found under pid, or nullopt with res answered
  // (403, or 404 for an absent or filtered one).
  std::optional<ProcessFacts> VisibleOrAnswer(pid_t pid, HttpReply& res) {
    bool forbidden = false;
    std::optional<ProcessFacts> facts = discovery_.Visible(pid, &forbidden);
    if (!facts && forbidden) {
      ServeError(res, 403,
                 "permission denied: this server may not read process " + std::to_string(pid) +
                     " (ptrace access to it is not allowed)");
    } else if (!facts) {
      // Filtered processes are answered exactly like absent ones.
      ServeError(res, 404, "no such process: " + std::to_string(pid));
    }
    return facts;
  }

  // The Go runtime's metrics of one process, as its own client_golang
  // would export them, or under OpenTelemetry's names. Read in a worker like
  // a capture, with the same identity and allow-list checks; the reply is
  // decoded as untrusted.
  void ProcessMetrics(pid_t pid, MetricNames names, const ClientGone& gone, HttpReply& res) {
    std::optional<ProcessFacts> facts = VisibleOrAnswer(pid, res);
    if (!facts) return;
    const Captured c = CaptureOf(*facts, WorkerOp::kRuntimeStats, gone);
    if (ServeFailure(c.result, pid, res)) return;
    const Expected<GoRuntimeStats> stats = TryDecodeRuntimeStats(*c.body);
    if (!stats) {
      // A worker's bad reply fails this answer only.
      ServeError(
          res, 500,
          "memory statistics of process " + std::to_string(pid) + ": " + stats.error().what());
      return;
    }
    SetContent(
        res,
        names == MetricNames::kOpenTelemetry ? OtelGoMetricsText(*stats) : GoCollectorText(*stats),
        "text/plain; version=0.0.4; charset=utf-8");
  }

  // The page is made in the worker from a capture of its own; requests for
  // the same page (pid and sample index) join it. The page's policy is sent
  // as a header too, which also covers what a meta element cannot (framing).
  void Flamegraph(const FlamegraphRequest& f, const ClientGone& gone, HttpReply& res) {
    std::optional<ProcessFacts> facts = VisibleOrAnswer(f.pid, res);
    if (!facts) return;
    Captured c = CaptureOf(*facts, WorkerOp::kFlamegraph, gone, /*may_join=*/true, f.sample_index);
    NoteSampling(f.pid, c.result);
    if (ServeFailure(c.result, f.pid, res)) return;
    res.headers.emplace_back("X-Content-Type-Options", "nosniff");
    res.headers.emplace_back("Content-Security-Policy",
                             FlameGraphContentSecurityPolicy() + "; frame-ancestors 'none'");
    res.headers.emplace_back("Cache-Control", "no-store");
    SetContent(res, std::move(c.body), "text/html; charset=utf-8");
  }

  // A profile's name and the worker ops of its forms: the profile, its text
  // at debug=1 and at debug>=2 (goroutine's dump; heap's text again, as
  // before), and its ?seconds=N delta.
  struct ProfileOps {
    const char* name;
    WorkerOp profile, debug1, debug2, delta;
  };
  static ProfileOps OpsOf(ProfileName name) {
    switch (name) {
      case ProfileName::kAllocs:
        return {"allocs", WorkerOp::kAllocs, WorkerOp::kHeapDebugText, WorkerOp::kHeapDebugText,
                WorkerOp::kAllocsDelta};
      case ProfileName::kGoroutine:
        return {"goroutine", WorkerOp::kGoroutine, WorkerOp::kGoroutineDebug1,
                WorkerOp::kGoroutineDebug2, WorkerOp::kGoroutineDelta};
      case ProfileName::kHeap:
        break;
    }
    return {"heap", WorkerOp::kHeap, WorkerOp::kHeapDebugText, WorkerOp::kHeapDebugText,
            WorkerOp::kHeapDelta};
  }

  void Profile(const ProfileRequest& p, const ClientGone& gone, HttpReply& res) {
    std::optional<ProcessFacts> facts = VisibleOrAnswer(p.pid, res);
    if (!facts) return;
    const ProfileOps ops = OpsOf(p.name);
    if (p.seconds > 0) return Delta(p, ops, *facts, gone, res);
    if (p.debug != 0) {
      return DebugText(p.pid, p.debug >= 2 ? ops.debug2 : ops.debug1, *facts, gone, res);
    }
    Captured c = CaptureOf(*facts, ops.profile, gone);
    // Whether heap profiling is on: a goroutine capture does not say.
    if (p.name != ProfileName::kGoroutine) NoteSampling(p.pid, c.result);
    if (ServeFailure(c.result, p.pid, res)) return;
    SetProfileHeaders(res, ops.name);
    SetContent(res, std::move(c.body), "application/octet-stream");
  }

  // The worker sends the text gzipped (it is many times the profile: 184 MB
  // at 131k buckets, past --max-capture-bytes), and the connection inflates
  // it as the client reads, with the length the worker gave.
  void DebugText(pid_t pid, WorkerOp op, const ProcessFacts& facts, const ClientGone& gone,
                 HttpReply& res) {
    Captured c = CaptureOf(facts, op, gone);
    if (ServeFailure(c.result, pid, res)) return;
    if (!c.result.reply.inflated_size) {
      ServeError(res, 500,
                 "capture of process " + std::to_string(pid) +
                     " failed: the worker's text came without its length");
      return;
    }
    res.headers.emplace_back("X-Content-Type-Options", "nosniff");
    SetContent(res, std::move(c.body), "text/plain; charset=utf-8");
    res.inflated_length = c.result.reply.inflated_size;
  }

  void NoteSampling(pid_t pid, const PoolResult& r) {
    if (r.outcome != PoolOutcome::kReplied) return;
    if (r.reply.error_kind == 0) discovery_.NoteSampling(pid, r.reply.start_time, "on");
    if (r.reply.error_kind == static_cast<int>(ErrorKind::kSamplingDisabled)) {
      if (std::optional<ProcessFacts> f = discovery_.Visible(pid)) {
        discovery_.NoteSampling(pid, f->start_time, "off");
      }
    }
  }

  static void SetProfileHeaders(HttpReply& res, const std::string& filename) {
    res.headers.emplace_back("X-Content-Type-Options", "nosniff");
    res.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + filename + "\"");
  }

  // net/http/pprof's serveDeltaProfile. The server keeps only the first
  // capture's gzipped bytes over the window; the worker that makes the
  // second capture subtracts them (WorkerOp::kHeapDelta and the like), so that no
  // profile is ever parsed here.
  void Delta(const ProfileRequest& p, const ProfileOps& ops, const ProcessFacts& facts,
             const ClientGone& gone, HttpReply& res) {
    // At most max_deltas windows at once: each holds a handler thread for
    // its whole window.
    DeltaSlot slot(active_deltas_, options_.max_deltas);
    if (!slot.held()) {
      res.headers.emplace_back("Retry-After", std::to_string(p.seconds));
      ServeError(res, 503,
                 "busy: " + std::to_string(options_.max_deltas) +
                     " delta windows (?seconds=N) are open; retry later");
      return;
    }
    // Anchored before the first capture starts: an exec in place between
    // the two captures keeps pid and start time, and only the address
    // space tells (proc/address_space.h). Not opened: the capture says why.
    const std::optional<AddressSpaceAnchor> anchor = AddressSpaceAnchor::TryOpen(p.pid);
    // The first capture must begin after the anchor: it joins no capture
    // that is already running.
    const Captured c0 = CaptureOf(facts, ops.profile, gone, /*may_join=*/false);
    if (ServeFailure(c0.result, p.pid, res)) return;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(p.seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (stopping_) {
        ServeError(res, 503, "the server is shutting down");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    Captured c1 = CaptureOf(facts, ops.delta, gone, /*may_join=*/false, *c0.body);
    if (ServeFailure(c1.result, p.pid, res)) return;
    if (!anchor) {
      ServeError(res, 500,
                 "cannot open /proc/" + std::to_string(p.pid) +
                     "/mem, so a replacement of the process during the delta window could not "
                     "be ruled out");
      return;
    }
    if (c0.result.reply.start_time != c1.result.reply.start_time || !anchor->StillLive()) {
      ServeError(res, 410,
                 "process " + std::to_string(p.pid) +
                     " was replaced by another process during the delta window");
      return;
    }
    SetProfileHeaders(res, std::string(ops.name) + "-delta");
    SetContent(res, std::move(c1.body), "application/octet-stream");
  }

  std::string ServiceName(const GoProcess& p) const {
    return ValidUtf8(ServiceNameOf(p.facts, options_.discovery.service_name_from));
  }

  std::string StartTime(const GoProcess& p) const {
    if (clock_ticks_ <= 0) return std::to_string(p.facts.start_time);
    return std::to_string(boot_time_ + p.facts.start_time / static_cast<uint64_t>(clock_ticks_));
  }

  void Targets(HttpReply& res) {
    nlohmann::json groups = nlohmann::json::array();
    for (const GoProcess& p : discovery_.Processes()) {
      nlohmann::json labels = {
          {"__param_pid", std::to_string(p.facts.pid)},
          {"pid", std::to_string(p.facts.pid)},
          {"service_name", ServiceName(p)},
          {"exe", p.facts.exe},
          {"comm", p.facts.comm},
          {"go_version", p.exe.go_version},
          {"build_id", p.exe.build_id},
          {"start_time", StartTime(p)},
      };
      if (!p.facts.cgroup.empty()) labels["cgroup"] = p.facts.cgroup;
      // The Kubernetes identity; a container id the identity parser did not
      // recognize is still given as the cgroup shows it.
      if (!p.facts.container_id.empty()) labels["container_id"] = p.facts.container_id;
      for (const auto& [name, value] : IdentityLabels(p.facts.identity)) labels[name] = value;
      groups.push_back({{"targets", {listen_address_}}, {"labels", labels}});
    }
    // Label values come from the targets (exe, comm, cgroup, ...): bytes that
    // are not UTF-8 become U+FFFD instead of failing the whole answer.
    SetContent(res, JsonText(groups), "application/json");
  }

  // "namespace/pod container (container_id)", or as much of it as is known.
  static std::string PodCell(const PodIdentity& id) {
    std::string cell;
    if (!id.names.pod.empty()) cell = id.names.pod_namespace + "/" + id.names.pod;
    if (!id.names.container.empty()) cell += (cell.empty() ? "" : " ") + id.names.container;
    const std::string cid = id.PrefixedContainerId();
    if (!cid.empty()) cell += (cell.empty() ? "" : " ") + ("(" + cid + ")");
    return cell;
  }

  void Index(HttpReply& res) {
    std::string html =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>goheap2pprof serve</title>"
        "</head><body>\n<h1>goheap2pprof serve</h1>\n<p>Go processes this server may read "
        "(rescanned every " +
        EscapeHtml(std::to_string(Seconds(options_.discovery.interval))) +
        " s). <a href=\"/targets\">/targets</a> (Prometheus HTTP SD), "
        "<a href=\"/metrics\">/metrics</a>.</p>\n<table border=\"1\" cellpadding=\"4\">\n"
        "<tr><th>pid</th><th>service</th><th>pod</th><th>executable</th><th>Go</th>"
        "<th>heap sampling</th><th>profiles</th></tr>\n";
    for (const GoProcess& p : discovery_.Processes()) {
      std::string pid = std::to_string(p.facts.pid);
      std::string sampling = p.sampling.empty()    ? "not captured yet"
                             : p.sampling == "off" ? "off (409)"
                                                   : "on";
      html += "<tr><td>" + pid + "</td><td>" + EscapeHtml(ServiceName(p)) + "</td><td>" +
              EscapeHtml(ValidUtf8(PodCell(p.facts.identity))) + "</td><td>" +
              EscapeHtml(ValidUtf8(p.facts.exe)) + "</td><td>" +
              EscapeHtml(ValidUtf8(p.exe.go_version)) + "</td><td>" + sampling +
              "</td><td><a href=\"/debug/pprof/heap?pid=" + pid +
              "\">heap</a> <a href=\"/debug/pprof/allocs?pid=" + pid +
              "\">allocs</a> <a href=\"/debug/pprof/heap?pid=" + pid +
              "&amp;debug=1\">heap?debug=1</a> <a href=\"/debug/pprof/goroutine?pid=" + pid +
              "\">goroutine</a> <a href=\"/debug/pprof/goroutine?pid=" + pid +
              "&amp;debug=2\">goroutine?debug=2</a> <a href=\"/pid/" + pid +
              "/metrics\">metrics</a> <a href=\"/pid/" + pid +
              "/flamegraph?sample_index=inuse_space\">flame graph</a></td></tr>\n";
    }
    html += "</table>\n</body></html>\n";
    SetContent(res, std::move(html), "text/html; charset=utf-8");
  }

  const ServeOptions& options_;
  std::ostream& log_;
  std::string listen_address_;
  // Serve's own parts, or the agent's (options_.shared).
  RoleParts parts_;
  CaptureMetrics& metrics_ = parts_.metrics();
  WorkerPool& pool_ = parts_.pool();
  Discovery& discovery_ = parts_.discovery();
  uint64_t boot_time_;
  long clock_ticks_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_deltas_{0};
  std::mutex flights_mu_;
  std::mutex log_mu_;
  std::map<std::tuple<pid_t, int, std::string>, std::shared_ptr<Flight>> flights_;
};

// The listener's view of the service: routes, errors in net/http/pprof's
// form, and one metric and log line per answer.
class ServeHandler : public HttpHandler {
 public:
  ServeHandler(Service& service, bool verbose) : service_(service), verbose_(verbose) {}
  bool Blocks(const HttpRequest& req) const override { return service_.Blocks(req); }
  HttpReply Handle(const HttpRequest& req) override {
    HttpReply res;
    service_.Handle(req, res);
    return res;
  }
  HttpReply Error(int status, const std::string& text) const override {
    HttpReply res;
    ServeError(res, status, text);
    return res;
  }
  void Served(const HttpRequest& req, const HttpReply& res) override {
    service_.metrics().RequestServed(res.status);
    if (!verbose_) return;
    std::ostringstream line;
    line << "goheap2pprof serve: " << req.peer << " \"" << req.method << " "
         << req.target.substr(0, 512) << "\" " << res.status << " " << res.length() << "\n";
    service_.Log(line.str());
  }

 private:
  Service& service_;
  bool verbose_;
};

}  // namespace

void ValidateServeOptions(const ServeOptions& o) {
  o.listener.Validate();
  if (o.workers.max_concurrent < 1 || o.workers.max_concurrent > 64) {
    throw Error(ErrorKind::kUsage, "--max-concurrent must be 1..64");
  }
  if (o.timeout <= o.timeout.zero() || o.discovery.interval <= o.discovery.interval.zero() ||
      o.workers.capture_timeout <= o.workers.capture_timeout.zero()) {
    throw Error(ErrorKind::kUsage, "--timeout and --discover-interval must be positive");
  }
  ValidateServiceNameFrom(o.discovery.service_name_from);
  if (o.max_deltas < 1) throw Error(ErrorKind::kUsage, "--max-deltas must be at least 1");
}

struct ServeRole::Impl {
  Impl(const ServeOptions& options, std::ostream& log)
      : server(options.listener.Options()),
        service(options, log, server.address()),
        handler(service, options.verbose) {}

  // Bound first: with port 0 the kernel picks the port, and /targets must
  // name the address clients really reach.
  HttpListener server;
  Service service;
  ServeHandler handler;
};

ServeRole::ServeRole(const ServeOptions& options, std::ostream& log)
    : impl_(std::make_unique<Impl>(options, log)) {}
ServeRole::~ServeRole() = default;
std::string ServeRole::address() const { return impl_->server.address(); }

void ServeRole::Run() {
  impl_->service.Start();
  impl_->server.Run(impl_->handler);
}

void ServeRole::Stop() {
  impl_->service.Stop();
  impl_->server.Stop();
}

void ServeRole::Reload() {
  impl_->service.Log(ReloadOnSignal(impl_->server, "goheap2pprof serve") + "\n");
}

int RunServe(const ServeOptions& options, std::ostream& log) {
  ValidateServeOptions(options);

  // Signals are taken by one thread with sigwait; blocked before any
  // thread exists so every thread inherits the mask.
  sigset_t signals = BlockStopSignals();
  BlockReloadSignal(signals);

  ServeRole role(options, log);
  std::thread signal_thread([&] {
    const int sig = WaitForStop(signals, [&] { role.Reload(); });
    log << "goheap2pprof serve: signal " << sig << ", shutting down\n" << std::flush;
    role.Stop();
  });
  log << "goheap2pprof serve: listening on " << role.address()
      << (options.listener.tls.enabled() ? " (TLS)" : "") << "\n"
      << std::flush;
  role.Run();
  // Run returns after Stop, or by an exception; wake the signal thread
  // so it can be joined.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  return 0;
}

}  // namespace goheap2pprof
