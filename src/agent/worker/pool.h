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
// No lock of the pool is held while a worker is started, killed, waited for
// or its stderr relay joined: a killed worker that does not end (stuck in
// uninterruptible sleep, e.g. reading an executable on a hung FUSE or NFS
// mount) is left to a reaper thread and counted as unreaped, and its slot
// gets a new worker (up to as many unreaped as there are slots; past that
// the slot waits for a reap). Statistics are atomics, so /metrics never
// waits on the pool. The node's own requests (push, watch, discovery) go
// first in the queue, and in the agent the last idle worker is kept for
// them (PoolRole).
//
//   WorkerPool pool({.workers = {.max_concurrent = 2}});
//   PoolResult r = pool.Run({WorkerOp::kHeap, pid, {}}, exe_key);
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
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
#include "agent/worker/capture_metrics.h"
#include "agent/worker/routing.h"
#include "agent/worker/stderr.h"
#include "agent/worker/worker.h"
#include "app/process_source.h"
#include "base/error.h"
#include "proc/cgroup.h"

namespace goheap2pprof {

// The confined capture workers as every role's options hold them
// (cli/agent_flags.h: --max-concurrent, --capture-timeout, --worker-memory,
// --worker-cpu, --max-capture-bytes, --worker-uid, --worker-gid), typed once.
struct WorkerSettings {
  int max_concurrent = 2;  // the pool's workers
  // A worker's answer; it is killed after this, and the capture fails.
  std::chrono::milliseconds capture_timeout{10000};
  WorkerLimits limits;
  std::string self_exe = "/proc/self/exe";  // what the workers run
  // watch's --exe and --force, given to every worker (serve and push leave
  // them empty: the running file is read).
  ExecutableOptions executable = {};
};

// The address-space limit each worker gets: at most `configured`
// (--worker-memory), and at most an equal share, among the pool's
// `max_concurrent` workers, of the room the memory cgroup this process runs
// in has left (its limit minus its usage now), so that a capture too large
// for the cgroup fails with "exceeded the worker's memory limit" instead of
// the kernel's OOM killer ending a worker (or the server beside it). Never
// below kMinWorkerAddressSpace, what a worker needs to start; without a
// finite limit, `configured`.
inline constexpr uint64_t kMinWorkerAddressSpace = uint64_t{96} << 20;
uint64_t WorkerMemoryInCgroup(uint64_t configured, int max_concurrent, const MemoryReading& own);

// Made in one place, RoleParts (agent/worker/role_parts.h).
struct PoolOptions {
  WorkerSettings workers;
  // How long a request waits for an idle worker, unless its PoolCall says.
  std::chrono::milliseconds queue_timeout{10000};
  // With two workers or more, keep one for push, watch and discovery
  // (PoolRole): set by the agent when serve's clients share the pool.
  bool reserve_for_priority = false;
};

enum class PoolOutcome {
  kReplied,   // the worker answered (maybe with an error kind)
  kBusy,      // no worker became free in time (or the executable hangs, detail): 503
  kCrashed,   // the worker died (signal, limit, seccomp): 500
  kTimedOut,  // the worker did not answer in time and was killed: 504
  // Every client that waited for it left before a worker took it
  // (PoolCall::cancelled): nobody reads the answer.
  kCancelled,
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
  // Killed workers that have not ended (uninterruptible sleep): reaped by
  // the reaper thread when they do.
  uint64_t workers_unreaped = 0;
  // Requests by the role that made them (PoolCall::role, by name): in the
  // agent, serve, push, watch and discovery share one pool, and this says so.
  std::map<std::string, uint64_t> requests;
};

// Who asks a worker of the pool. kPush, kWatch and kDiscovery are the node's
// own schedules, memory triggers and the probes that let them see a new
// process: they go first in the queue and, with two workers or more (and
// PoolOptions::reserve_for_priority), one worker is kept free for them, so
// that clients of serve cannot starve them.
enum class PoolRole : uint8_t { kOther, kServe, kPush, kWatch, kDiscovery };
inline constexpr size_t kPoolRoles = 5;
// "other", "serve", "push", "watch", "discovery".
const char* PoolRoleName(PoolRole role);
bool IsPriorityRole(PoolRole role);

// Who asks, and how long it may wait for a free worker: serve's requests
// give up after --timeout (503), while push's rounds and watch's triggers
// wait their turn. Unset: the pool's queue_timeout. `cancelled`, when
// set, is asked while the request waits for a worker: true once nobody
// waits for the answer (its clients disconnected), and the request leaves
// the queue (kCancelled).
struct PoolCall {
  PoolRole role = PoolRole::kOther;
  std::optional<std::chrono::milliseconds> queue_timeout;
  std::function<bool()> cancelled;
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

  // Lock-free: safe on the listener's I/O thread.
  PoolStats stats() const;
  // Pids of the live workers, for tests and the index page.
  std::vector<pid_t> worker_pids() const;

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
    bool busy = false;
    // No process, and out of routing (busy too): its killed worker did not
    // end and the pool already holds as many unreaped ones as slots. The
    // reaper frees the slot when one of them ends. park_pending: the same,
    // decided by the request that holds the slot, which parks it on release.
    bool parked = false;
    bool park_pending = false;
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
  // A killed worker that had not ended when its request gave up on it: its
  // process, stderr relay and what it was doing, until the reaper reaps it.
  struct Unreaped {
    pid_t pid = -1;
    int stderr_fd = -1;
    std::unique_ptr<WorkerStderr> stderr_relay;
    std::thread relay_thread;
    std::string request;
    std::string affinity;  // its request's executable: not captured again meanwhile
    std::chrono::steady_clock::time_point since;
  };
  // How long a request waits for the busy worker that holds its
  // executable before it takes another idle one: less than building the
  // tables afresh costs (about 100 ms more at 250k buckets), more than a
  // discovery probe takes (a few ms).
  static constexpr std::chrono::milliseconds kHolderWait{100};
  // How long a request waits for its killed worker to end before leaving
  // it to the reaper: a killed process ends in microseconds unless it is
  // in uninterruptible sleep.
  static constexpr int kReapWaitMs = 500;
  // The worker a request takes (RouteRequest), waiting for one at most
  // queue_timeout (nullptr then, *cancelled if call.cancelled said so);
  // called with mu_ held in `lock`.
  Worker* WaitForWorker(std::unique_lock<std::mutex>& lock, const std::string& affinity,
                        const PoolCall& call, bool* cancelled);
  // The worker this call takes (busy, counted), or nullptr with result's
  // outcome saying why (kBusy, kCancelled). Takes mu_.
  Worker* Acquire(const std::string& affinity, const PoolCall& call, PoolResult& result);
  // After a failed exchange with w: reaps it and says what happened.
  void Failed(Worker& w, ReplyReadError read_error, const std::string& label,
              const std::string& affinity, PoolResult& result);
  // Whether a request of `role` may take an idle worker now (priority and
  // the worker kept for push and watch); mu_ held.
  bool MayTake(PoolRole role) const;
  // Starts (or restarts) w, a slot the caller holds (busy); no lock needed.
  // A worker that cannot start is an outcome the callers handle (the
  // request fails, or the slot waits for the next one), so it is returned:
  // the Error saying why, or nullopt once w runs. w stays stopped (pid -1)
  // on failure: the next request that picks the slot starts it.
  std::optional<Error> Start(Worker& w);
  // Kills w if asked and waits at most wait_ms for it to end. Ended: its
  // slot is forgotten and how it ended is returned. Not ended: it is handed
  // to the reaper (and logged), and the slot is parked if too many are
  // unreaped already. No lock held; the slot is the caller's.
  std::string Reap(Worker& w, bool kill_first, int wait_ms, const std::string& request,
                   const std::string& affinity);
  // Whether a worker that served `affinity` is unreaped (mu_ held): its
  // executable's mount hangs, and another capture would only hang too.
  bool Stuck(const std::string& affinity) const;
  // After w's process ended: closes its socket, ends its stderr relay.
  void Forget(Worker& w);
  // Frees w's slot and says why this request failed.
  PoolResult StartFailed(Worker& w, PoolRole role, const Error& e);
  // Gives w back (mu_ taken here) and wakes the waiters: its keys forgotten
  // if its worker was restarted, else `served` remembered (if given).
  void Release(Worker& w, PoolRole role, const std::string* served, bool restarted);
  // The reaper thread: reaps unreaped workers as they end, then unparks a
  // slot.
  void ReapLoop();
  // Kills the workers, reaps those that end within a bound.
  void Shutdown();

  PoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::vector<Worker> workers_;
  uint64_t tick_ = 0;  // counts the requests served, for WorkerKeys
  // Routing state of the queue (mu_): push's and watch's requests waiting,
  // and the workers other roles hold.
  int priority_waiting_ = 0;
  int others_busy_ = 0;
  // Killed workers not yet ended (mu_), and the reaper's stop.
  std::vector<Unreaped> unreaped_;
  bool stopping_ = false;
  std::condition_variable reaper_wake_;
  std::thread reaper_;
  // Statistics, read without a lock (by /metrics on the I/O thread).
  std::atomic<uint64_t> workers_started_{0}, workers_crashed_{0}, workers_killed_{0};
  std::atomic<uint64_t> workers_unreaped_{0};
  std::array<std::atomic<uint64_t>, kPoolRoles> requests_{};
};

// What the roles of one `goheap2pprof agent` share (agent/node/agent.h):
// one worker pool, one discovery, one set of capture metrics. A role given
// none makes its own (serve, push and watch as commands of their own).
struct SharedParts {
  WorkerPool* pool = nullptr;
  Discovery* discovery = nullptr;
  CaptureMetrics* metrics = nullptr;
  // The other metric families of the one /metrics (push's, the pool's).
  std::function<std::string()> more_metrics;
};

// The pool's workers that were killed and have not ended, for /metrics (a
// gauge: a worker stuck in uninterruptible sleep shows here until it ends).
std::string PoolUnreapedText(const PoolStats& stats);

// The outcome of one pooled capture as /metrics names it ("ok", "busy",
// "worker_crash", "not_found", ...), the same for serve and push.
std::string PoolOutcomeName(const PoolResult& r);

// What /metrics counts of one pooled request, the same in every role: its
// outcome (a capture's with its duration and bytes read, or a
// memory-statistics read's), the analyses it needed, a worker restarted.
// A probe counts only the restart (discovery counts its analyses).
void CountPoolResult(CaptureMetrics& metrics, WorkerOp op, const PoolResult& r, double seconds);

// pool.Run, then CountPoolResult. `seconds`, when given, gets the round trip
// (waiting for a worker included).
PoolResult RunCounted(WorkerPool& pool, CaptureMetrics& metrics, const WorkerRequest& request,
                      const std::string& affinity, const PoolCall& call = {},
                      double* seconds = nullptr);

// RunCounted for the process discovery found (request.pid is facts.pid):
// routed by its executable, and the reply kept to that process
// (KeepToRequestedProcess) before it is counted, so that an answer from
// another process counts as what it becomes.
PoolResult RunForProcess(WorkerPool& pool, CaptureMetrics& metrics, const WorkerRequest& request,
                         const ProcessFacts& facts, const ProcessFilter& filter,
                         const PoolCall& call = {}, double* seconds = nullptr);

// Discovery's probe of one process, run in a worker (the executable is
// untrusted): Go version and build ID, or why not. A worker that crashed or
// hung on it is counted in `metrics` and the executable is not probed again.
ExeInfo ProbeInWorker(WorkerPool& pool, CaptureMetrics& metrics, pid_t pid);

}  // namespace goheap2pprof
