#include "agent/worker/pool.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/huge_pages.h"

extern char** environ;

namespace goheap2pprof {

namespace {

// The server's environment, with glibc's malloc asked for huge pages: a
// worker fills and keeps the large buffers of repeated captures (the
// records, the sample values, the encoded profile), and the one-shot CLI's
// owners-only advice (base/huge_pages.h) leaves those small-paged. glibc
// reads the tunable only at start, which a worker's exec is anyway.
std::vector<std::string> WorkerEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "GLIBC_TUNABLES=", 15) != 0) env.emplace_back(*e);
  }
  env.push_back("GLIBC_TUNABLES=" + TunablesWithMallocHugePages(std::getenv("GLIBC_TUNABLES")));
  return env;
}

// How a request is named in the worker's stderr lines.
std::string RequestLabel(const WorkerRequest& request) {
  std::string op;
  switch (request.op) {
    case WorkerOp::kProbe:
      op = "probe";
      break;
    case WorkerOp::kHeap:
      op = "heap";
      break;
    case WorkerOp::kAllocs:
      op = "allocs";
      break;
    case WorkerOp::kHeapDebugText:
      op = "heap debug=1";
      break;
    case WorkerOp::kRuntimeStats:
      op = "memory statistics";
      break;
    case WorkerOp::kFlamegraph:
      op = "flamegraph " + request.payload.substr(0, 32);
      break;
    case WorkerOp::kPush:
      op = "push";
      break;
    case WorkerOp::kPushConvert:
      op = "push of a trigger's capture";
      break;
    default:
      op = "op " + std::to_string(static_cast<uint32_t>(request.op));
  }
  return op + " of pid " + std::to_string(request.pid);
}

}  // namespace

WorkerPool::WorkerPool(PoolOptions options) : options_(std::move(options)) {
  // The server process relays profiles of up to --max-capture-bytes from
  // many handler threads. glibc's default raises its mmap threshold to the
  // size of any large block freed, after which such blocks come from the
  // threads' arenas, which keep them once freed: the server's RSS would
  // creep towards one profile per thread and arena. A fixed threshold
  // (which also fixes the trim threshold) keeps every buffer of 256 KiB or
  // more in its own mapping, returned to the system when it is freed.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  workers_.resize(static_cast<size_t>(std::max(1, options_.workers)));
  try {
    std::lock_guard<std::mutex> lock(mu_);
    for (Worker& w : workers_) Start(w);
  } catch (const Error&) {
    Shutdown();
    throw;
  }
}

WorkerPool::~WorkerPool() { Shutdown(); }

void WorkerPool::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Worker& w : workers_) {
    if (w.pid > 0) Reap(w, true);
  }
}

void WorkerPool::Start(Worker& w) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    throw Error(ErrorKind::kInternal, "socketpair: ", std::strerror(errno));
  }
  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(sv[0]);
    close(sv[1]);
    throw Error(ErrorKind::kInternal, "pipe2: ", std::strerror(errno));
  }
  // The worker's end becomes its fd 3 and the pipe its stderr (dup2 clears
  // close-on-exec); every other descriptor of the server (client sockets,
  // the listener, other workers' pipes) is closed before the exec, whether
  // close-on-exec or not, and once more by the worker itself.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
#endif
  std::string fd_arg = "--fd=3";
  std::string as_arg = "--address-space=" + std::to_string(options_.limits.address_space_bytes);
  std::string cpu_arg = "--cpu-seconds=" + std::to_string(options_.limits.cpu_seconds);
  std::string exe_arg = "--exe=" + options_.executable.path;
  std::string reply_arg = "--max-reply-bytes=" + std::to_string(options_.limits.max_reply_bytes);
  std::string uid_arg = "--uid=" + std::to_string(options_.limits.uid);
  std::string gid_arg = "--gid=" + std::to_string(options_.limits.gid);
  std::vector<char*> argv = {const_cast<char*>("goheap2pprof"),
                             const_cast<char*>("__serve-worker"),
                             fd_arg.data(),
                             as_arg.data(),
                             cpu_arg.data(),
                             reply_arg.data(),
                             uid_arg.data(),
                             gid_arg.data()};
  if (!options_.executable.path.empty()) argv.push_back(exe_arg.data());
  if (options_.executable.force) argv.push_back(const_cast<char*>("--force"));
  argv.push_back(nullptr);
  pid_t pid = -1;
  std::vector<std::string> env_strings = WorkerEnvironment();
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  int rc =
      posix_spawn(&pid, options_.self_exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(sv[1]);
  close(err[1]);
  if (rc != 0) {
    close(sv[0]);
    close(err[0]);
    throw Error(ErrorKind::kInternal, "cannot start a capture worker (", options_.self_exe,
                "): ", std::strerror(rc));
  }
  w.pid = pid;
  w.fd = sv[0];
  // Not w.busy: the slot stays with the Run that (re)starts it. Marking it
  // idle here let a second Run take a worker the first was still using,
  // and each read the other's reply (a profile of another pid).
  w.keys.Clear();
  w.stderr_fd = err[0];
  w.stderr_relay = std::make_unique<WorkerStderr>(pid, STDERR_FILENO);
  w.relay_thread = std::thread(RelayWorkerStderr, err[0], std::ref(*w.stderr_relay));
  ++stats_.workers_started;
}

void WorkerPool::Forget(Worker& w) {
  close(w.fd);
  w.fd = -1;
  w.pid = -1;
  // The worker is dead, so its stderr reaches EOF (no other process holds
  // the pipe: it was close-on-exec here and closed in every other worker).
  if (w.relay_thread.joinable()) w.relay_thread.join();
  close(w.stderr_fd);
  w.stderr_fd = -1;
  w.stderr_relay.reset();
}

std::string WorkerPool::Reap(Worker& w, bool kill_first) {
  if (kill_first) kill(w.pid, SIGKILL);  // our own child, never a target
  int status = 0;
  pid_t r;
  do {
    r = waitpid(w.pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  Forget(w);
  if (r < 0) return "the worker could not be reaped";
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    std::string how = std::string("the capture worker was killed by signal ") +
                      std::to_string(sig) + " (" + strsignal(sig) + ")";
    if (sig == SIGSYS) how += ": a system call outside its seccomp filter";
    if (sig == SIGXCPU || sig == SIGKILL) how += ": it may have exceeded its CPU time limit";
    return how;
  }
  return "the capture worker exited with status " + std::to_string(WEXITSTATUS(status));
}

PoolResult WorkerPool::StartFailed(Worker& w, const Error& e) {
  // One request's boundary: a worker that cannot start fails this request,
  // not the server; its slot is free for the next.
  w.busy = false;
  idle_.notify_one();
  PoolResult result;
  result.outcome = PoolOutcome::kCrashed;
  result.detail = e.what();
  result.not_started = true;
  return result;
}

WorkerPool::Worker* WorkerPool::WaitForWorker(std::unique_lock<std::mutex>& lock,
                                              const std::string& affinity,
                                              std::chrono::milliseconds queue_timeout) {
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = now + queue_timeout;
  const auto holder_deadline = std::min(deadline, now + kHolderWait);
  while (true) {
    std::vector<WorkerView> views;
    for (const Worker& c : workers_) views.push_back({c.busy, &c.keys});
    const Route route = RouteRequest(views, affinity);
    const bool wait_for_holder =
        route.holder_busy && std::chrono::steady_clock::now() < holder_deadline;
    if (route.worker && !wait_for_holder) return &workers_[*route.worker];
    if (std::chrono::steady_clock::now() >= deadline) return nullptr;
    idle_.wait_until(lock, wait_for_holder ? holder_deadline : deadline);
  }
}

PoolResult WorkerPool::Run(const WorkerRequest& request, const std::string& affinity,
                           const PoolCall& call) {
  PoolResult result;
  Worker* w = nullptr;
  {
    std::unique_lock<std::mutex> lock(mu_);
    ++stats_.requests[call.caller];
    w = WaitForWorker(
        lock, affinity,
        std::chrono::milliseconds(call.queue_timeout_ms.value_or(options_.queue_timeout_ms)));
    if (!w) {
      result.outcome = PoolOutcome::kBusy;
      return result;
    }
    w->busy = true;
    if (w->pid < 0) {
      try {
        Start(*w);
      } catch (const Error& e) {
        return StartFailed(*w, e);
      }
    }
  }

  // The worker is ours until released; talk to it without the lock. A
  // worker that died while idle (killed from outside) is replaced before it
  // gets the request, so only the capture it was running fails.
  int status = 0;
  if (waitpid(w->pid, &status, WNOHANG) == w->pid) {
    std::lock_guard<std::mutex> lock(mu_);
    Forget(*w);
    ++stats_.workers_crashed;
    try {
      Start(*w);
    } catch (const Error& e) {
      return StartFailed(*w, e);
    }
  }
  w->stderr_relay->BeginRequest(RequestLabel(request), w->stderr_fd);
  ReplyReadError read_error = ReplyReadError::kBroken;
  if (WriteWorkerRequest(w->fd, request)) {
    read_error =
        ReadWorkerReply(w->fd, result.reply, MonotonicMillis() + options_.capture_timeout_ms,
                        options_.limits.max_reply_bytes);
  }
  const bool ok = read_error == ReplyReadError::kNone;

  std::lock_guard<std::mutex> lock(mu_);
  if (ok) {
    w->keys.Remember(affinity, ++tick_);
  } else {
    result.detail = Reap(*w, true);
    if (read_error == ReplyReadError::kTooLarge) {
      // A worker refuses to send more itself: this one misbehaves.
      result.detail = "its reply was larger than the limit of " +
                      std::to_string(options_.limits.max_reply_bytes) +
                      " bytes (--max-capture-bytes); the worker was stopped";
    }
    if (read_error == ReplyReadError::kTimedOut) {
      result.outcome = PoolOutcome::kTimedOut;
      ++stats_.workers_killed;
    } else {
      result.outcome = PoolOutcome::kCrashed;
      ++stats_.workers_crashed;
    }
    try {
      Start(*w);
    } catch (const Error&) {
      // Boundary of this request's worker slot: started again on the next
      // request that picks it.
    }
  }
  if (ok && result.reply.retiring) {
    Reap(*w, false);
    try {
      Start(*w);
    } catch (const Error&) {
      // As above: the next request that picks this slot starts it.
    }
  }
  w->busy = false;
  // All: a waiter for the worker that holds its executable (WaitForWorker)
  // must not take the only wake-up another waiter could use.
  idle_.notify_all();
  return result;
}

PoolStats WorkerPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::vector<pid_t> WorkerPool::worker_pids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> pids;
  for (const Worker& w : workers_) {
    if (w.pid > 0) pids.push_back(w.pid);
  }
  return pids;
}

std::string PoolOutcomeName(const PoolResult& r) {
  switch (r.outcome) {
    case PoolOutcome::kBusy:
      return "busy";
    case PoolOutcome::kCrashed:
      return "worker_crash";
    case PoolOutcome::kTimedOut:
      return "worker_timeout";
    case PoolOutcome::kReplied:
      break;
  }
  switch (static_cast<ErrorKind>(r.reply.error_kind)) {
    case ErrorKind::kSamplingDisabled:
      return "sampling_off";
    case ErrorKind::kNoSuchProcess:
    case ErrorKind::kNotGo:
      return "not_found";
    case ErrorKind::kPermission:
      return "forbidden";
    default:
      return r.reply.error_kind == 0 ? "ok" : "error";
  }
}

namespace {

PoolResult TimedRun(WorkerPool& pool, const WorkerRequest& request, const std::string& affinity,
                    const PoolCall& call, double& seconds) {
  const auto started = std::chrono::steady_clock::now();
  PoolResult r = pool.Run(request, affinity, call);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

}  // namespace

void CountPoolResult(ServeMetrics& metrics, WorkerOp op, const PoolResult& r, double seconds) {
  if (op == WorkerOp::kRuntimeStats) {
    metrics.MemoryStatsRead(PoolOutcomeName(r));
  } else if (op != WorkerOp::kProbe && op != WorkerOp::kPushConvert) {
    metrics.CaptureDone(PoolOutcomeName(r), seconds, r.reply.bytes_read);
  }
  if (r.outcome == PoolOutcome::kReplied && op != WorkerOp::kProbe) {
    metrics.CaptureAnalyses(r.reply.analyses);
  }
  // A worker that could not be started was not restarted.
  if (r.not_started) return;
  if (r.outcome == PoolOutcome::kCrashed) metrics.WorkerRestarted("crash");
  if (r.outcome == PoolOutcome::kTimedOut) metrics.WorkerRestarted("timeout");
}

PoolResult RunCounted(WorkerPool& pool, ServeMetrics& metrics, const WorkerRequest& request,
                      const std::string& affinity, const PoolCall& call, double* seconds) {
  double took = 0;
  PoolResult r = TimedRun(pool, request, affinity, call, took);
  CountPoolResult(metrics, request.op, r, took);
  if (seconds) *seconds = took;
  return r;
}

PoolResult RunForProcess(WorkerPool& pool, ServeMetrics& metrics, const WorkerRequest& request,
                         const ProcessFacts& facts, const ProcessFilter& filter,
                         const PoolCall& call, double* seconds) {
  double took = 0;
  PoolResult r = TimedRun(pool, request, facts.key.ToString(), call, took);
  if (r.outcome == PoolOutcome::kReplied) KeepToRequestedProcess(facts, filter, r.reply);
  CountPoolResult(metrics, request.op, r, took);
  if (seconds) *seconds = took;
  return r;
}

ExeInfo ProbeInWorker(WorkerPool& pool, ServeMetrics& metrics, pid_t pid) {
  PoolResult r = RunCounted(pool, metrics, {WorkerOp::kProbe, pid, {}}, "",
                            {.caller = "discovery", .queue_timeout_ms = std::nullopt});
  ExeInfo info;
  if (r.outcome != PoolOutcome::kReplied) {
    // A worker that could not start (no descriptors left) is no verdict on
    // the executable: not cached, probed again at the next scan.
    if (r.not_started) return info;
    // A hostile executable (its worker crashed or hung) is not probed again.
    if (r.outcome == PoolOutcome::kCrashed || r.outcome == PoolOutcome::kTimedOut) {
      info.error = r.detail;
    }
    return info;
  }
  if (r.reply.error_kind != 0) {
    return ExeInfoForFailure(r.reply.error_kind == static_cast<int>(ErrorKind::kNoSuchProcess),
                             r.reply.message);
  }
  std::istringstream lines(r.reply.body);
  std::string line;
  while (std::getline(lines, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "go_version") info.go_version = value;
    if (key == "build_id") info.build_id = value;
  }
  info.is_go = !info.go_version.empty();
  return info;
}

}  // namespace goheap2pprof
