// The server's side of the capture workers (agent/worker/worker.h): a fixed pool of
// --max-concurrent long-lived worker processes, each confined, each keeping
// what it learnt about executables between requests. A request waits for an
// idle worker at most `queue_timeout` (then the caller answers 503) and the
// worker's answer at most `capture_timeout`; a worker that overruns is
// killed (504), one that dies is reaped (500), and both are replaced, so the
// server goes on. A request goes to the worker that served its executable
// most recently, so that its cached analysis and capture states are reused
// (agent/worker/routing.h).
//
//   WorkerPool pool({.workers = 2, .self_exe = "/proc/self/exe"});
//   PoolResult r = pool.Run({WorkerOp::kHeap, pid, {}}, exe_key);
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/common/discovery.h"
#include "agent/common/metrics.h"
#include "agent/worker/routing.h"
#include "agent/worker/stderr.h"
#include "agent/worker/worker.h"
#include "app/process_source.h"
#include "base/error.h"

namespace goheap2pprof {

struct PoolOptions {
  int workers = 2;
  std::string self_exe = "/proc/self/exe";
  int64_t queue_timeout_ms = 10000;
  int64_t capture_timeout_ms = 10000;
  WorkerLimits limits;
  // watch's --exe and --force, given to every worker (serve and push leave
  // them empty: the running file is read).
  ExecutableOptions executable = {};
};

enum class PoolOutcome {
  kReplied,   // the worker answered (maybe with an error kind)
  kBusy,      // no worker became free in time: 503
  kCrashed,   // the worker died (signal, limit, seccomp): 500
  kTimedOut,  // the worker did not answer in time and was killed: 504
};

struct PoolResult {
  PoolOutcome outcome = PoolOutcome::kReplied;
  WorkerReply reply;
  std::string detail;  // for kCrashed: how the worker ended
  // kCrashed because no worker could be started (out of descriptors or
  // processes): says nothing about the request.
  bool not_started = false;
};

struct PoolStats {
  uint64_t workers_started = 0;
  uint64_t workers_crashed = 0;
  uint64_t workers_killed = 0;  // overran the capture timeout
  // Requests by the caller that made them (PoolCall::caller): in the agent,
  // serve, push, watch and discovery share one pool, and this says so.
  std::map<std::string, uint64_t> requests;
};

// Who asks, and how long it may wait for a free worker: serve's requests
// give up after --timeout (503), while push's rounds and watch's triggers
// wait their turn. Unset: the pool's queue_timeout_ms.
struct PoolCall {
  std::string caller;
  std::optional<int64_t> queue_timeout_ms;
};

class WorkerPool {
 public:
  explicit WorkerPool(PoolOptions options);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Thread-safe. `affinity` names the executable (any stable string; empty
  // for none).
  PoolResult Run(const WorkerRequest& request, const std::string& affinity,
                 const PoolCall& call = {});

  PoolStats stats() const;
  // Pids of the live workers, for tests and the index page.
  std::vector<pid_t> worker_pids() const;

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
    bool busy = false;
    WorkerKeys keys;  // the executables it served, for routing
    // The worker's stderr (its one diagnostic channel): a pipe of its own,
    // read by a relay thread that prints each line to the server's stderr
    // with the worker's pid and request (agent/worker/stderr.h). Not the
    // server's own stderr: that may be a regular file, which RLIMIT_FSIZE 0
    // forbids a worker to grow (SIGXFSZ).
    int stderr_fd = -1;
    std::unique_ptr<WorkerStderr> stderr_relay;
    std::thread relay_thread;
  };
  // How long a request waits for the busy worker that holds its
  // executable before it takes another idle one: less than building the
  // tables afresh costs (about 100 ms more at 250k buckets), more than a
  // discovery probe takes (a few ms).
  static constexpr std::chrono::milliseconds kHolderWait{100};
  // The worker a request takes (RouteRequest), waiting for one at most
  // queue_timeout (nullptr then); called with mu_ held in `lock`.
  Worker* WaitForWorker(std::unique_lock<std::mutex>& lock, const std::string& affinity,
                        std::chrono::milliseconds queue_timeout);
  // Starts (or restarts) worker i; called with mu_ held.
  void Start(Worker& w);
  // Kills if needed and reaps w, returning how it ended.
  std::string Reap(Worker& w, bool kill_first);
  // After w's process ended: closes its socket, ends its stderr relay.
  void Forget(Worker& w);
  // Frees w's slot (mu_ held) and says why this request failed.
  PoolResult StartFailed(Worker& w, const Error& e);
  // Kills and reaps the workers.
  void Shutdown();

  PoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::vector<Worker> workers_;
  uint64_t tick_ = 0;  // counts the requests served, for WorkerKeys
  PoolStats stats_;
};

// What the roles of one `goheap2pprof agent` share (agent/node_agent.h):
// one worker pool, one discovery, one set of capture metrics. A role given
// none makes its own (serve, push and watch as commands of their own).
struct SharedParts {
  WorkerPool* pool = nullptr;
  Discovery* discovery = nullptr;
  ServeMetrics* metrics = nullptr;
  // The other metric families of the one /metrics (push's, the pool's).
  std::function<std::string()> more_metrics;
};

// The outcome of one pooled capture as /metrics names it ("ok", "busy",
// "worker_crash", "not_found", ...), the same for serve and push.
std::string PoolOutcomeName(const PoolResult& r);

// What /metrics counts of one pooled request, the same in every role: its
// outcome (a capture's with its duration and bytes read, or a
// memory-statistics read's), the analyses it needed, a worker restarted.
// A probe counts only the restart (discovery counts its analyses).
void CountPoolResult(ServeMetrics& metrics, WorkerOp op, const PoolResult& r, double seconds);

// pool.Run, then CountPoolResult. `seconds`, when given, gets the round trip
// (waiting for a worker included).
PoolResult RunCounted(WorkerPool& pool, ServeMetrics& metrics, const WorkerRequest& request,
                      const std::string& affinity, const PoolCall& call = {},
                      double* seconds = nullptr);

// RunCounted for the process discovery found (request.pid is facts.pid):
// routed by its executable, and the reply kept to that process
// (KeepToRequestedProcess) before it is counted, so that an answer from
// another process counts as what it becomes.
PoolResult RunForProcess(WorkerPool& pool, ServeMetrics& metrics, const WorkerRequest& request,
                         const ProcessFacts& facts, const ProcessFilter& filter,
                         const PoolCall& call = {}, double* seconds = nullptr);

// Discovery's probe of one process, run in a worker (the executable is
// untrusted): Go version and build ID, or why not. A worker that crashed or
// hung on it is counted in `metrics` and the executable is not probed again.
ExeInfo ProbeInWorker(WorkerPool& pool, ServeMetrics& metrics, pid_t pid);

}  // namespace goheap2pprof
