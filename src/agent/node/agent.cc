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

#include "agent/common/prometheus_text.h"
#include "agent/common/signals.h"
#include "agent/push/labels.h"
#include "agent/push/sender.h"
#include "agent/watch/files.h"
#include "agent/worker/capture_metrics.h"
#include "agent/worker/role_parts.h"
#include "base/error.h"
#include "base/unique_fd.h"

namespace goheap2pprof {
namespace {

// The agent's settings in one role's options.
template <typename Role>
void Share(const AgentOptions& agent, Role& role) {
  role.discovery = agent.discovery;
  role.workers = agent.workers;
  role.verbose = role.verbose || agent.verbose;
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
  if (!o.serve_on) s.listener.listen = "127.0.0.1:0";
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
      // Boundary: one role; the agent ends, with the reason and exit 1.
      log << "goheap2pprof agent: " << role << " stopped: " << e.what() << "\n" << std::flush;
      failed = true;
      kill(getpid(), SIGTERM);
    }
  });
}

// The agent's threads, joined however RunAgent ends (serve's Run returning
// or throwing): the signal thread first, woken when serve has ended (it then
// stops push and watch), then the roles.
struct AgentThreads {
  std::thread signal;
  std::vector<std::thread> roles;
  bool wake_signal = false;

  void Join() {
    if (wake_signal && signal.joinable()) pthread_kill(signal.native_handle(), SIGTERM);
    if (signal.joinable()) signal.join();
    for (std::thread& t : roles) {
      if (t.joinable()) t.join();
    }
  }
  // Left by an exception (a role or a thread that could not start): the
  // signal thread stops the roles that run, so that joining them ends.
  ~AgentThreads() {
    wake_signal = true;
    Join();
  }
};

// watch's on_profile in the agent: a triggered profile goes to the backends
// with the labels of the process as discovery knows it (the same as its
// periodic series).
auto PushTriggeredTo(PushRole& push, const Discovery& discovery) {
  return [&push, &discovery](pid_t pid, uint64_t start_time, const std::string& trigger,
                             const std::string& profile) {
    for (const GoProcess& p : discovery.Processes()) {
      if (p.facts.pid == pid && p.facts.start_time == start_time) {
        push.PushTriggered(p, profile, trigger);
        return;
      }
    }
    throw Error(ErrorKind::kNoSuchProcess, "process ", pid, " is no longer discovered");
  };
}

// Waits for SIGTERM or SIGINT (SIGHUP reloads serve's files), then stops
// the roles: serve and push by Stop, watch by its stop eventfd.
std::thread StopThread(const sigset_t& signals, std::ostream& log, ServeRole* serve, PushRole* push,
                       int stop_fd) {
  return std::thread([signals, &log, serve, push, stop_fd] {
    const int sig = WaitForStop(signals, [&] {
      if (serve) serve->Reload();
    });
    log << "goheap2pprof agent: signal " << sig << ", shutting down\n" << std::flush;
    if (serve) serve->Stop();
    if (push) push->Stop();
    const uint64_t one = 1;
    (void)!::write(stop_fd, &one, sizeof(one));
  });
}

void LogRoles(std::ostream& log, const AgentOptions& o, const ServeRole* serve,
              const PushRole* push) {
  if (serve) {
    // The line serve prints, which scripts and probes wait for.
    log << "goheap2pprof agent: listening on " << serve->address()
        << (o.serve.listener.tls.enabled() ? " (TLS)" : "") << "\n";
  }
  log << "goheap2pprof agent: roles:" << (serve ? " serve on " + serve->address() : "")
      << (push ? " push" : "") << (o.watch_on ? " watch" : "") << "; " << o.workers.max_concurrent
      << " capture workers\n"
      << std::flush;
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

AgentOptions RoleOptions(const AgentOptions& options) {
  AgentOptions o = options;
  Share(o, o.serve);
  Share(o, o.push);
  o.push.metrics_listener.listen.clear();  // the one /metrics is serve's
  Share(o, o.watch);
  o.watch.all = true;  // every process the one discovery admits
  o.watch.pids.clear();
  return o;
}

int RunAgent(const AgentOptions& options, std::ostream& log) {
  AgentOptions o = RoleOptions(options);
  Validate(o);
  if (o.push_on) HttpClientGlobalInit();  // before the first thread
  sigset_t signals = BlockStopSignals();
  BlockReloadSignal(signals);

  // The shared parts: one pool (serve's requests wait at most --timeout for
  // a worker, push's and watch's wait their turn), one discovery whose
  // probes run in that pool, one set of capture metrics. With serve's
  // clients in the pool, one worker is kept for push's rounds and watch's
  // triggers (PoolRole).
  RoleParts parts(nullptr, o.workers, o.serve.timeout, Discovery::Options::From(o.discovery),
                  /*reserve_for_priority=*/o.serve_on && (o.push_on || o.watch_on));
  WorkerPool& pool = parts.pool();
  Discovery& discovery = parts.discovery();
  SharedParts shared{&pool, &discovery, &parts.metrics(), {}};
  o.serve.shared = o.push.shared = o.watch.shared = &shared;

  std::unique_ptr<ServeRole> serve;
  if (o.serve_on) serve = std::make_unique<ServeRole>(o.serve, log);
  std::unique_ptr<PushRole> push;
  if (o.push_on) push = std::make_unique<PushRole>(o.push, log);
  shared.more_metrics = [&] {
    return (push ? push->PushMetricsText() : std::string()) +
           PoolMetricsText(pool.stats(), o.workers.max_concurrent);
  };
  UniqueFd stop(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) throw Error(ErrorKind::kInternal, "eventfd: ", std::strerror(errno));
  o.watch.stop_fd = stop.get();
  if (push) o.watch.on_profile = PushTriggeredTo(*push, discovery);

  discovery.Start();
  std::atomic<bool> failed{false};
  AgentThreads threads;
  // The signal thread first: should a role's thread fail to start, it is
  // there to stop those already running.
  threads.signal = StopThread(signals, log, serve.get(), push.get(), stop.get());
  if (push) threads.roles.push_back(RoleThread("push", log, failed, [&] { push->Run(); }));
  if (o.watch_on) {
    threads.roles.push_back(RoleThread("watch", log, failed, [&] { RunWatch(o.watch, log); }));
  }
  LogRoles(log, o, serve.get(), push.get());
  if (serve) {
    // Run returns after Stop, or by an exception: either way threads wakes
    // the signal thread and joins every thread before the exception goes on.
    threads.wake_signal = true;
    serve->Run();
  }
  threads.Join();  // before failed is read: a role may fail while it stops
  return failed ? 1 : 0;
}

}  // namespace goheap2pprof
