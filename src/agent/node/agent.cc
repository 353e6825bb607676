#include "agent/node/agent.h"

#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "agent/common/metrics.h"
#include "agent/common/prometheus_text.h"
#include "agent/common/signals.h"
#include "agent/push/labels.h"
#include "agent/push/sender.h"
#include "agent/watch/files.h"
#include "base/error.h"
#include "base/unique_fd.h"

namespace goheap2pprof {
namespace {

// The agent's values in each role's options: one filter, one naming, one
// pool's limits, whatever the role's own defaults were.
AgentOptions WithSharedValues(const AgentOptions& in) {
  AgentOptions o = in;
  ServeOptions& s = o.serve;
  s.filter = o.filter;
  s.service_name_from = o.service_name_from;
  s.host_root = o.host_root;
  s.node_name = o.node_name;
  s.discover_interval_seconds = o.discover_interval_seconds;
  s.max_concurrent = o.max_concurrent;
  s.capture_timeout_seconds = o.capture_timeout_seconds;
  s.worker_limits = o.worker_limits;
  s.verbose = s.verbose || o.verbose;
  PushOptions& p = o.push;
  p.filter = o.filter;
  p.service_name_from = o.service_name_from;
  p.host_root = o.host_root;
  p.node_name = o.node_name;
  p.discover_interval_seconds = o.discover_interval_seconds;
  p.max_concurrent = o.max_concurrent;
  p.capture_timeout_seconds = o.capture_timeout_seconds;
  p.worker_limits = o.worker_limits;
  p.metrics_listen.clear();  // the one /metrics is serve's
  p.verbose = p.verbose || o.verbose;
  WatchOptions& w = o.watch;
  w.all = true;  // every process the one discovery admits
  w.filter = o.filter;
  w.host_root = o.host_root;
  w.node_name = o.node_name;
  w.pids.clear();
  w.capture_timeout_seconds = o.capture_timeout_seconds;
  w.worker_limits = o.worker_limits;
  w.verbose = w.verbose || o.verbose;
  return o;
}

void Validate(const AgentOptions& o) {
  if (!o.serve_on && !o.push_on && !o.watch_on) {
    throw Error(ErrorKind::kUsage,
                "agent needs a role: --listen (serve), --pyroscope or --parca (push), or -o or "
                "a trigger (watch)");
  }
  // serve's and push's checks cover the shared values; run serve's even
  // without the role, for those.
  ServeOptions s = o.serve;
  if (!o.serve_on) s.listen = "127.0.0.1:0";
  ValidateServeOptions(s);
  if (o.push_on) ValidatePushOptions(o.push);
  if (o.push_on && o.watch_on && o.push.labels.size() + kAgentLabels + 1 > kMaxLabelsPerSeries) {
    // A triggered profile's series carries one label more: trigger=.
    throw Error(ErrorKind::kUsage, "too many --label options: ", o.push.labels.size(), " plus the ",
                kAgentLabels, " the agent sets and trigger= is over Pyroscope's limit of ",
                kMaxLabelsPerSeries, " labels per series");
  }
  if (o.watch_on && o.watch.dir.empty() && !o.push_on) {
    throw Error(ErrorKind::kUsage,
                "a watch trigger needs somewhere to put its profiles: -o DIR or a push backend");
  }
  if (o.watch_on && o.watch.report && o.watch.dir.empty()) {
    throw Error(ErrorKind::kUsage, "--report needs an output directory (-o)");
  }
  if (o.watch_on && !o.watch.dir.empty()) OutputDir check(o.watch.dir);  // fails now, not later
}

// Runs f on a thread of its own; an Error that ends it is logged, and the
// agent is stopped (a role that cannot run is not silently missing).
std::thread RoleThread(const char* role, std::ostream& log, std::atomic<bool>& failed,
                       std::function<void()> f) {
  return std::thread([role, &log, &failed, f = std::move(f)] {
    try {
      f();
    } catch (const std::exception& e) {
      // Boundary of a role: the agent ends, with the reason and exit 1.
      log << "goheap2pprof agent: " << role << " stopped: " << e.what() << "\n" << std::flush;
      failed = true;
      kill(getpid(), SIGTERM);
    }
  });
}

// The agent's pool families, in the order PoolMetricsText writes them.
constexpr MetricFamily kPoolRequests{
    "goheap2pprof_pool_requests_total", "counter",
    "Requests to the agent's one pool of capture workers, by the role that made them."};
constexpr MetricFamily kPoolWorkers{"goheap2pprof_pool_workers", "gauge",
                                    "Worker slots of the agent's one pool (--max-concurrent)."};
constexpr MetricFamily kPoolWorkersStarted{
    "goheap2pprof_pool_workers_started_total", "counter",
    "Worker processes the pool started (first starts and replacements)."};

}  // namespace

std::string PoolMetricsText(const PoolStats& stats, int workers) {
  PrometheusWriter w;
  w.Family(kPoolRequests);
  for (const auto& [caller, n] : stats.requests) {
    w.Sample({{"role", caller.empty() ? "other" : caller}}, n);
  }
  w.Family(kPoolWorkers);
  w.Sample(workers);
  w.Family(kPoolWorkersStarted);
  w.Sample(stats.workers_started);
  return std::move(w).Text() + PoolUnreapedText(stats);
}

int RunAgent(const AgentOptions& options, std::ostream& log) {
  AgentOptions o = WithSharedValues(options);
  Validate(o);
  if (o.push_on) HttpClientGlobalInit();  // before the first thread
  sigset_t signals = BlockStopSignals();
  BlockReloadSignal(signals);

  // The shared parts: one pool (serve's requests wait at most --timeout for
  // a worker, push's and watch's wait their turn), one discovery whose
  // probes run in that pool, one set of capture metrics.
  ServeMetrics metrics;
  // With serve's clients in the pool, one worker is kept for push's rounds
  // and watch's triggers (PoolRole).
  WorkerPool pool(
      PoolOptions{.workers = o.max_concurrent,
                  .self_exe = "/proc/self/exe",
                  .queue_timeout_ms = static_cast<int64_t>(o.serve.timeout_seconds * 1000),
                  .capture_timeout_ms = static_cast<int64_t>(o.capture_timeout_seconds * 1000),
                  .limits = o.worker_limits,
                  .reserve_for_priority = o.serve_on && (o.push_on || o.watch_on)});
  Discovery::Options found =
      Discovery::Options::For(o.filter, o.discover_interval_seconds, o.service_name_from);
  found.host_root = o.host_root;
  found.node_name = o.node_name;
  Discovery discovery(found, [&](pid_t pid) { return ProbeInWorker(pool, metrics, pid); });
  SharedParts shared{&pool, &discovery, &metrics, {}};
  o.serve.shared = o.push.shared = o.watch.shared = &shared;

  std::unique_ptr<ServeRole> serve;
  if (o.serve_on) serve = std::make_unique<ServeRole>(o.serve, log);
  std::unique_ptr<PushRole> push;
  if (o.push_on) push = std::make_unique<PushRole>(o.push, log);
  shared.more_metrics = [&] {
    return (push ? push->PushMetricsText() : std::string()) +
           PoolMetricsText(pool.stats(), o.max_concurrent);
  };
  UniqueFd stop(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) throw Error(ErrorKind::kInternal, "eventfd: ", std::strerror(errno));
  o.watch.stop_fd = stop.get();
  if (push) {
    // A triggered profile goes to the backends with the labels of the
    // process as discovery knows it (the same as its periodic series).
    o.watch.on_profile = [&](pid_t pid, uint64_t start_time, const std::string& trigger,
                             const std::string& profile) {
      for (const GoProcess& p : discovery.Processes()) {
        if (p.facts.pid == pid && p.facts.start_time == start_time) {
          push->PushTriggered(p, profile, trigger);
          return;
        }
      }
      throw Error(ErrorKind::kNoSuchProcess, "process ", pid, " is no longer discovered");
    };
  }

  discovery.Start();
  std::atomic<bool> failed{false};
  std::vector<std::thread> roles;
  if (push) roles.push_back(RoleThread("push", log, failed, [&] { push->Run(); }));
  if (o.watch_on) {
    roles.push_back(RoleThread("watch", log, failed, [&] { RunWatch(o.watch, log); }));
  }
  std::thread signal_thread([&] {
    const int sig = WaitForStop(signals, [&] {
      if (serve) serve->Reload();
    });
    log << "goheap2pprof agent: signal " << sig << ", shutting down\n" << std::flush;
    if (serve) serve->Stop();
    if (push) push->Stop();
    const uint64_t one = 1;
    (void)!::write(stop.get(), &one, sizeof(one));
  });
  if (serve) {
    // The line serve prints, which scripts and probes wait for.
    log << "goheap2pprof agent: listening on " << serve->address()
        << (o.serve.tls.enabled() ? " (TLS)" : "") << "\n";
  }
  log << "goheap2pprof agent: roles:" << (serve ? " serve on " + serve->address() : "")
      << (push ? " push" : "") << (o.watch_on ? " watch" : "") << "; " << o.max_concurrent
      << " capture workers\n"
      << std::flush;
  std::exception_ptr serve_failure;
  if (serve) {
    try {
      serve->Run();
    } catch (...) {
      serve_failure = std::current_exception();
    }
    // Run returns after Stop, or by an exception: wake the signal thread.
    pthread_kill(signal_thread.native_handle(), SIGTERM);
  }
  signal_thread.join();
  for (std::thread& t : roles) t.join();
  if (serve_failure) std::rethrow_exception(serve_failure);
  return failed ? 1 : 0;
}

}  // namespace goheap2pprof
