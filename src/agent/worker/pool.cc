#include "agent/worker/pool.h"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/common/prometheus_text.h"
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

// A worker's command line: what __capture-worker reads (cli/serve_main.cc).
std::vector<std::string> WorkerArguments(const WorkerSettings& w) {
  std::vector<std::string> args = {
      "goheap2pprof",
      "__capture-worker",
      "--fd=3",
      "--address-space=" + std::to_string(w.limits.address_space_bytes),
      "--cpu-seconds=" + std::to_string(w.limits.cpu_seconds),
      "--max-reply-bytes=" + std::to_string(w.limits.max_reply_bytes),
      "--uid=" + std::to_string(w.limits.uid),
      "--gid=" + std::to_string(w.limits.gid)};
  if (!w.executable.path.empty()) args.push_back("--exe=" + w.executable.path);
  if (w.executable.force) args.push_back("--force");
  return args;
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
    case WorkerOp::kGoroutine:
      op = "goroutine";
      break;
    case WorkerOp::kGoroutineDebug1:
      op = "goroutine debug=1";
      break;
    case WorkerOp::kGoroutineDebug2:
      op = "goroutine debug=2";
      break;
    case WorkerOp::kPushGoroutine:
      op = "goroutine push";
      break;
    default:
      op = "op " + std::to_string(static_cast<uint32_t>(request.op));
  }
  return op + " of pid " + std::to_string(request.pid);
}

// Waits at most wait_ms for pid (our child) to end and reaps it into
// *status; false if it has not ended. A pidfd wakes the wait as it ends;
// without one (old kernels, a filter that refuses pidfd_open) it polls.
bool WaitForExit(pid_t pid, int wait_ms, int* status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  while (true) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      if (pidfd >= 0) close(pidfd);
      return false;
    }
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      (void)poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(left, 5)));
    }
  }
  if (pidfd >= 0) close(pidfd);
  return true;
}

// How a reaped worker ended, from its wait status.
std::string HowItEnded(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    std::string how = std::string("the capture worker was killed by signal ") +
                      std::to_string(sig) + " (" + strsignal(sig) + ")";
    if (sig == SIGSYS) how += ": a system call outside its seccomp filter";
    if (sig == SIGXCPU) how += ": it exceeded its CPU time limit";
    if (sig == SIGKILL) {
      how += ": it may have exceeded its CPU time limit, or the kernel's OOM killer ended it";
    }
    return how;
  }
  return "the capture worker exited with status " + std::to_string(WEXITSTATUS(status));
}

// One line of the pool's own on the server's stderr (whole, with one write,
// like the stderr relay's lines).
void LogLine(const std::string& line) {
  const std::string text = "goheap2pprof: " + line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

// At shutdown, a worker that did not end: its relay thread still reads its
// stderr, so the thread is let go and what it uses is left allocated (the
// server is exiting).
void Abandon(std::thread& relay_thread, std::unique_ptr<WorkerStderr>& relay) {
  if (relay_thread.joinable()) relay_thread.detach();
  (void)relay.release();
}

}  // namespace

const char* PoolRoleName(PoolRole role) {
  switch (role) {
    case PoolRole::kServe:
      return "serve";
    case PoolRole::kPush:
      return "push";
    case PoolRole::kWatch:
      return "watch";
    case PoolRole::kDiscovery:
      return "discovery";
    case PoolRole::kOther:
      break;
  }
  return "other";
}

bool IsPriorityRole(PoolRole role) {
  // Discovery too: watch and push see a new process only once it is probed.
  return role == PoolRole::kPush || role == PoolRole::kWatch || role == PoolRole::kDiscovery;
}

uint64_t WorkerMemoryInCgroup(uint64_t configured, int max_concurrent, const MemoryReading& own) {
  if (!own.limit || !own.usage) return configured;
  const uint64_t room = *own.limit > *own.usage ? *own.limit - *own.usage : 0;
  const uint64_t share = room / static_cast<uint64_t>(std::max(1, max_concurrent));
  return std::min(configured, std::max(share, kMinWorkerAddressSpace));
}

namespace {

// The memory cgroup this process runs in, as it reads now (nothing when it
// has none or it cannot be read: then --worker-memory stands as given).
MemoryReading OwnMemoryCgroup() {
  const CgroupFs fs;
  std::optional<MemoryCgroup> cg = fs.FindMemoryCgroup(getpid());
  return cg ? fs.Read(*cg) : MemoryReading{};
}

WorkerSettings FitToOwnCgroup(WorkerSettings workers) {
  workers.limits.address_space_bytes = WorkerMemoryInCgroup(
      workers.limits.address_space_bytes, workers.max_concurrent, OwnMemoryCgroup());
  return workers;
}

}  // namespace

WorkerPool::WorkerPool(PoolOptions options)
    : options_(std::move(options)),
      workers_(static_cast<size_t>(std::max(1, options_.workers.max_concurrent))) {
  options_.workers = FitToOwnCgroup(options_.workers);
  // The server process relays profiles of up to --max-capture-bytes from
  // many handler threads. glibc's default raises its mmap threshold to the
  // size of any large block freed, after which such blocks come from the
  // threads' arenas, which keep them once freed: the server's RSS would
  // creep towards one profile per thread and arena. A fixed threshold
  // (which also fixes the trim threshold) keeps every buffer of 256 KiB or
  // more in its own mapping, returned to the system when it is freed.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  reaper_ = std::thread([this] { ReapLoop(); });
  for (Worker& w : workers_) {
    if (std::optional<Error> failed = Start(w)) {
      Shutdown();
      throw *failed;
    }
  }
}

WorkerPool::~WorkerPool() { Shutdown(); }

void WorkerPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  reaper_wake_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  // No request runs any more (the roles have stopped). Every process gets
  // its SIGKILL first, then one second in all to end.
  for (Worker& w : workers_) {
    if (w.pid > 0) kill(w.pid, SIGKILL);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  auto left_ms = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now())
               .count()));
  };
  int status = 0;
  for (Worker& w : workers_) {
    if (w.pid <= 0) continue;
    if (WaitForExit(w.pid, left_ms(), &status)) {
      Forget(w);
    } else {
      Abandon(w.relay_thread, w.stderr_relay);
    }
  }
  for (Unreaped& u : unreaped_) {
    if (WaitForExit(u.pid, left_ms(), &status)) {
      u.relay_thread.join();
      close(u.stderr_fd);
    } else {
      Abandon(u.relay_thread, u.stderr_relay);
    }
  }
}

std::optional<Error> WorkerPool::Start(Worker& w) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Error(ErrorKind::kInternal, "socketpair: ", std::strerror(errno));
  }
  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(sv[0]);
    close(sv[1]);
    return Error(ErrorKind::kInternal, "pipe2: ", std::strerror(errno));
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
  std::vector<std::string> arg_strings = WorkerArguments(options_.workers);
  std::vector<char*> argv;
  for (std::string& a : arg_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  std::vector<std::string> env_strings = WorkerEnvironment();
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string& exe = options_.workers.self_exe;
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(sv[1]);
  close(err[1]);
  if (rc != 0) {
    close(sv[0]);
    close(err[0]);
    return Error(ErrorKind::kInternal, "cannot start a capture worker (", exe,
                 "): ", std::strerror(rc));
  }
  // Not w.busy: the slot stays with the Run that (re)starts it. Marking it
  // idle here let a second Run take a worker the first was still using,
  // and each read the other's reply (a profile of another pid). The pid is
  // published under the lock for worker_pids.
  {
    std::lock_guard<std::mutex> lock(mu_);
    w.pid = pid;
  }
  w.fd = sv[0];
  w.stderr_fd = err[0];
  w.stderr_relay = std::make_unique<WorkerStderr>(pid, STDERR_FILENO);
  w.relay_thread = std::thread(RelayWorkerStderr, err[0], std::ref(*w.stderr_relay));
  ++workers_started_;
  return std::nullopt;
}

void WorkerPool::Forget(Worker& w) {
  close(w.fd);
  w.fd = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w.pid = -1;
  }
  // The worker is dead, so its stderr reaches EOF (no other process holds
  // the pipe: it was close-on-exec here and closed in every other worker).
  if (w.relay_thread.joinable()) w.relay_thread.join();
  close(w.stderr_fd);
  w.stderr_fd = -1;
  w.stderr_relay.reset();
}

std::string WorkerPool::Reap(Worker& w, bool kill_first, int wait_ms, const std::string& request,
                             const std::string& affinity) {
  if (kill_first) kill(w.pid, SIGKILL);  // our own child, never a target
  int status = 0;
  bool ended = WaitForExit(w.pid, wait_ms, &status);
  if (!ended && !kill_first) {
    // A retiring worker that does not end: it is ended.
    kill(w.pid, SIGKILL);
    ended = WaitForExit(w.pid, wait_ms, &status);
  }
  if (ended) {
    Forget(w);
    return HowItEnded(status);
  }
  // Killed and still there: in uninterruptible sleep (a hung FUSE or NFS
  // mount under the executable it reads). Its stderr relay ends when it
  // does; the reaper waits for that, not this request.
  const pid_t pid = w.pid;
  close(w.fd);
  w.fd = -1;
  Unreaped u{pid,     w.stderr_fd, std::move(w.stderr_relay),       std::move(w.relay_thread),
             request, affinity,    std::chrono::steady_clock::now()};
  w.stderr_fd = -1;
  size_t unreaped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w.pid = -1;
    unreaped_.push_back(std::move(u));
    unreaped = unreaped_.size();
    // Beyond one unreaped worker per slot, the slot gets no new worker
    // until one of them ends: a mount that hangs every capture must not
    // make the pool start processes without end.
    w.park_pending = unreaped > workers_.size();
  }
  ++workers_unreaped_;
  reaper_wake_.notify_all();
  LogLine(
      "capture worker " + std::to_string(pid) + " (" + request +
      ") did not end after SIGKILL: it is in uninterruptible sleep (a hung mount under the "
      "target's executable?); " +
      std::to_string(unreaped) + " unreaped, " +
      (w.park_pending ? "its slot waits for one of them to end" : "a new worker takes its slot"));
  return "the capture worker did not end after SIGKILL (uninterruptible sleep); it is left to "
         "be reaped when it ends";
}

void WorkerPool::ReapLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (unreaped_.empty()) {
      reaper_wake_.wait(lock);
      continue;
    }
    reaper_wake_.wait_for(lock, std::chrono::milliseconds(200));
    for (size_t i = 0; i < unreaped_.size() && !stopping_;) {
      int status = 0;
      const pid_t r = waitpid(unreaped_[i].pid, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) {
        ++i;
        continue;
      }
      Unreaped u = std::move(unreaped_[i]);
      unreaped_.erase(unreaped_.begin() + static_cast<std::ptrdiff_t>(i));
      for (Worker& w : workers_) {
        if (!w.parked) continue;
        w.parked = false;
        w.busy = false;  // no process: the next request that picks it starts one
        break;
      }
      --workers_unreaped_;
      idle_.notify_all();
      lock.unlock();
      u.relay_thread.join();
      close(u.stderr_fd);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - u.since).count();
      LogLine("capture worker " + std::to_string(u.pid) + " (" + u.request + ") ended " +
              std::to_string(static_cast<int64_t>(seconds)) + " s after it was killed; reaped");
      lock.lock();
    }
  }
}

PoolResult WorkerPool::StartFailed(Worker& w, PoolRole role, const Error& e) {
  // One request's boundary: a worker that cannot start fails this request,
  // not the server; its slot is free for the next.
  Release(w, role, nullptr, /*restarted=*/true);
  PoolResult result;
  result.outcome = PoolOutcome::kCrashed;
  result.detail = e.what();
  result.not_started = true;
  return result;
}

void WorkerPool::Release(Worker& w, PoolRole role, const std::string* served, bool restarted) {
  std::lock_guard<std::mutex> lock(mu_);
  if (restarted) w.keys.Clear();
  if (served) w.keys.Remember(*served, ++tick_);
  if (!IsPriorityRole(role)) --others_busy_;
  // A parked slot stays busy until the reaper frees it (unless a reap came
  // meanwhile).
  w.parked = std::exchange(w.park_pending, false) && unreaped_.size() > workers_.size();
  if (!w.parked) w.busy = false;
  // All: a waiter for the worker that holds its executable (WaitForWorker)
  // must not take the only wake-up another waiter could use.
  idle_.notify_all();
}

bool WorkerPool::Stuck(const std::string& affinity) const {
  return !affinity.empty() && std::any_of(unreaped_.begin(), unreaped_.end(),
                                          [&](const auto& u) { return u.affinity == affinity; });
}

bool WorkerPool::MayTake(PoolRole role) const {
  if (IsPriorityRole(role)) return true;
  if (priority_waiting_ > 0) return false;
  const int slots = static_cast<int>(workers_.size());
  return !options_.reserve_for_priority || slots < 2 || others_busy_ < slots - 1;
}

WorkerPool::Worker* WorkerPool::WaitForWorker(std::unique_lock<std::mutex>& lock,
                                              const std::string& affinity, const PoolCall& call,
                                              bool* cancelled) {
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = now + call.queue_timeout.value_or(options_.queue_timeout);
  const auto holder_deadline = std::min(deadline, now + kHolderWait);
  const bool priority = IsPriorityRole(call.role);
  if (priority) ++priority_waiting_;
  Worker* found = nullptr;
  while (true) {
    if (call.cancelled && call.cancelled()) {
      *cancelled = true;
      break;
    }
    bool wait_for_holder = false;
    if (MayTake(call.role)) {
      std::vector<WorkerView> views;
      for (const Worker& c : workers_) views.push_back({c.busy, &c.keys});
      const Route route = RouteRequest(views, affinity);
      wait_for_holder = route.holder_busy && std::chrono::steady_clock::now() < holder_deadline;
      if (route.worker && !wait_for_holder) {
        found = &workers_[*route.worker];
        break;
      }
    }
    const auto t = std::chrono::steady_clock::now();
    if (t >= deadline) break;
    auto until = wait_for_holder ? holder_deadline : deadline;
    // A disconnect wakes nothing here: look again a few times a second.
    if (call.cancelled) until = std::min(until, t + std::chrono::milliseconds(200));
    idle_.wait_until(lock, until);
  }
  if (priority) {
    --priority_waiting_;
    // Requests of other roles held back for this one may go now.
    idle_.notify_all();
  }
  return found;
}

WorkerPool::Worker* WorkerPool::Acquire(const std::string& affinity, const PoolCall& call,
                                        PoolResult& result) {
  std::unique_lock<std::mutex> lock(mu_);
  if (Stuck(affinity)) {
    // One unreaped worker per hung executable: its captures fail fast
    // instead of parking every slot of the pool.
    result.outcome = PoolOutcome::kBusy;
    result.detail =
        "an earlier capture of this executable is stuck in the kernel (a hung mount?) and its "
        "worker has not ended; retry later";
    return nullptr;
  }
  bool cancelled = false;
  Worker* w = WaitForWorker(lock, affinity, call, &cancelled);
  if (!w) {
    result.outcome = cancelled ? PoolOutcome::kCancelled : PoolOutcome::kBusy;
    return nullptr;
  }
  w->busy = true;
  if (!IsPriorityRole(call.role)) ++others_busy_;
  return w;
}

void WorkerPool::Failed(Worker& w, ReplyReadError read_error, const std::string& label,
                        const std::string& affinity, PoolResult& result) {
  result.detail = Reap(w, true, kReapWaitMs, label, affinity);
  if (read_error == ReplyReadError::kTooLarge) {
    // A worker refuses to send more itself: this one misbehaves.
    result.detail = "its reply was larger than the limit of " +
                    std::to_string(options_.workers.limits.max_reply_bytes) +
                    " bytes (--max-capture-bytes); the worker was stopped";
  }
  if (read_error == ReplyReadError::kTimedOut) {
    result.outcome = PoolOutcome::kTimedOut;
    ++workers_killed_;
  } else {
    result.outcome = PoolOutcome::kCrashed;
    ++workers_crashed_;
  }
}

PoolResult WorkerPool::Run(const WorkerRequest& request, const std::string& affinity,
                           const PoolCall& call) {
  ++requests_[std::min(static_cast<size_t>(call.role), kPoolRoles - 1)];
  PoolResult result;
  Worker* w = Acquire(affinity, call, result);
  if (!w) return result;
  // The slot is ours until released: start, talk to and reap its worker
  // without the lock. A worker that died while idle (killed from outside)
  // is replaced before it gets the request, so only the capture it was
  // running fails.
  bool restarted = w->pid < 0;
  int status = 0;
  if (w->pid > 0 && waitpid(w->pid, &status, WNOHANG) == w->pid) {
    Forget(*w);
    ++workers_crashed_;
    restarted = true;
  }
  if (w->pid < 0) {
    if (std::optional<Error> failed = Start(*w)) return StartFailed(*w, call.role, *failed);
  }
  const std::string label = RequestLabel(request);
  w->stderr_relay->BeginRequest(label, w->stderr_fd);
  ReplyReadError read_error = ReplyReadError::kBroken;
  if (WriteWorkerRequest(w->fd, request)) {
    read_error = ReadWorkerReply(w->fd, result.reply,
                                 MonotonicMillis() + options_.workers.capture_timeout.count(),
                                 options_.workers.limits.max_reply_bytes);
  }
  const bool ok = read_error == ReplyReadError::kNone;
  if (!ok) {
    Failed(*w, read_error, label, affinity, result);
  } else if (result.reply.retiring) {
    Reap(*w, false, kReapWaitMs, label, affinity);
  }
  const bool replaced = !ok || result.reply.retiring;
  // A worker that cannot start now is started by the next request that
  // picks the slot.
  if (replaced && !w->park_pending) (void)Start(*w);
  Release(*w, call.role, ok && !replaced ? &affinity : nullptr, restarted || replaced);
  return result;
}

PoolStats WorkerPool::stats() const {
  PoolStats s;
  s.workers_started = workers_started_.load();
  s.workers_crashed = workers_crashed_.load();
  s.workers_killed = workers_killed_.load();
  s.workers_unreaped = workers_unreaped_.load();
  for (size_t i = 0; i < kPoolRoles; ++i) {
    if (uint64_t n = requests_[i].load()) s.requests[PoolRoleName(static_cast<PoolRole>(i))] = n;
  }
  return s;
}

std::vector<pid_t> WorkerPool::worker_pids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> pids;
  for (const Worker& w : workers_) {
    if (w.pid > 0) pids.push_back(w.pid);
  }
  return pids;
}

std::string PoolUnreapedText(const PoolStats& stats) {
  static constexpr MetricFamily kUnreaped{
      "goheap2pprof_workers_unreaped", "gauge",
      "Capture workers killed that have not ended (uninterruptible sleep, e.g. on a hung "
      "mount); each is reaped when it ends."};
  PrometheusWriter w;
  w.Family(kUnreaped);
  w.Sample(stats.workers_unreaped);
  return std::move(w).Text();
}

std::string PoolOutcomeName(const PoolResult& r) {
  switch (r.outcome) {
    case PoolOutcome::kBusy:
      return "busy";
    case PoolOutcome::kCrashed:
      return "worker_crash";
    case PoolOutcome::kTimedOut:
      return "worker_timeout";
    case PoolOutcome::kCancelled:
      return "cancelled";
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

void CountPoolResult(CaptureMetrics& metrics, WorkerOp op, const PoolResult& r, double seconds) {
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

PoolResult RunCounted(WorkerPool& pool, CaptureMetrics& metrics, const WorkerRequest& request,
                      const std::string& affinity, const PoolCall& call, double* seconds) {
  double took = 0;
  PoolResult r = TimedRun(pool, request, affinity, call, took);
  CountPoolResult(metrics, request.op, r, took);
  if (seconds) *seconds = took;
  return r;
}

PoolResult RunForProcess(WorkerPool& pool, CaptureMetrics& metrics, const WorkerRequest& request,
                         const ProcessFacts& facts, const ProcessFilter& filter,
                         const PoolCall& call, double* seconds) {
  double took = 0;
  PoolResult r = TimedRun(pool, request, facts.key.ToString(), call, took);
  if (r.outcome == PoolOutcome::kReplied) KeepToRequestedProcess(facts, filter, r.reply);
  CountPoolResult(metrics, request.op, r, took);
  if (seconds) *seconds = took;
  return r;
}

ExeInfo ProbeInWorker(WorkerPool& pool, CaptureMetrics& metrics, pid_t pid) {
  PoolResult r =
      RunCounted(pool, metrics, {WorkerOp::kProbe, pid, {}}, "",
                 {.role = PoolRole::kDiscovery, .queue_timeout = std::nullopt, .cancelled = {}});
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
