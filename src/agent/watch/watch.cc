#include "agent/watch/watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "agent/common/discovery.h"
#include "agent/common/pod_identity.h"
#include "agent/common/service_name.h"
#include "agent/common/signals.h"
#include "agent/watch/files.h"
#include "agent/watch/go_memory_record.h"
#include "agent/watch/process.h"
#include "agent/watch/report.h"
#include "agent/worker/capture_metrics.h"
#include "agent/worker/pool.h"
#include "agent/worker/role_parts.h"
#include "agent/worker/runtime_stats_wire.h"
#include "app/growth_live.h"
#include "base/byte_size.h"
#include "base/duration.h"
#include "base/error.h"
#include "base/unique_fd.h"
#include "base/utf8.h"
#include "proc/cgroup.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
using SystemClock = std::chrono::system_clock;

WatchMillis Now() {
  return std::chrono::duration_cast<WatchMillis>(SteadyClock::now().time_since_epoch());
}

std::vector<std::string_view> SplitList(std::string_view text) {
  std::vector<std::string_view> out;
  while (true) {
    size_t comma = text.find(',');
    out.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return out;
}

std::optional<double> ParseNumber(std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() ||
      !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

// VmRSS of a process in bytes; nullopt once it is gone.
std::optional<uint64_t> ReadRss(pid_t pid) {
  std::optional<ProcStatusMemory> m = ReadProcStatusMemory(pid);
  return m ? m->vm_rss : std::nullopt;
}

// Our own peak resident set (VmHWM), in KiB: the figure that shows capturing
// stays cheap under memory pressure.
std::optional<uint64_t> OwnPeakRssKb() {
  std::optional<ProcStatusMemory> m = ReadProcStatusMemory(::getpid());
  if (!m || !m->vm_hwm) return std::nullopt;
  return *m->vm_hwm / 1024;
}

// Boundary: one step beside a capture or at a process's end (the memory
// statistics read before the capture, the push of its profile, the growth
// report) whose failure, ours or a library's, is recorded in its line while
// the capture and watching go on. The failure's message, or nullopt.
template <typename F>
std::optional<std::string> FailureOf(F&& step) {
  try {
    step();
    return std::nullopt;
  } catch (const std::exception& e) {
    return e.what();
  }
}

template <typename T>
json OrNull(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// Failures of a capture that say the process can never be captured: watching
// it further is pointless. Sampling that is off is not one of them: the
// program may assign runtime.MemProfileRate later, or a person may run
// `goheap2pprof enable-sampling` on it while it is watched, and its next
// trigger then captures it.
bool Hopeless(ErrorKind kind) {
  return kind == ErrorKind::kNotGo || kind == ErrorKind::kUnsupported ||
         kind == ErrorKind::kPermission;
}

// One watched process.
struct Target {
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string comm;
  // Its Kubernetes identity and service_name, on every record of it
  // (IdentityLabels), and why the pod names could not be read.
  json labels = json::object();
  std::string identity_failure;
  std::optional<MemoryCgroup> cgroup;
  std::unique_ptr<ProcessEndObserver> end;
  std::unique_ptr<TriggerMachine> machine;
  UniqueFd psi_fd;
  std::string psi_file;
  int events_wd = -1;
  // The cgroup's oom_kill counter when watching began, and when a sample
  // last saw it rise. The OOM killer raises it when it picks the victim; the
  // victim then takes a while to die, so the end is compared with the start
  // of the watch, not with the last sample.
  std::optional<uint64_t> oom_kills_at_start;
  std::optional<uint64_t> oom_kills;
  std::optional<SystemClock::time_point> oom_kills_rose_at;
  bool sample_now = false;
  bool psi_fired = false;
  int captures = 0;
  std::string last_file;
  std::vector<std::string> files;      // every profile written, for --report
  std::vector<WatchReading> readings;  // beside each of files
  std::string go_version;              // as the last memory statistics said
  std::string last_error;
};

// A watch given the host's files (--host-root, the node agent) reads the
// host's cgroup mount only; one without (a sidecar in its target's pod, whose
// cgroup lies outside the sidecar's cgroup namespace) may reach the target's
// cgroup through /proc/<pid>/root.
TargetRoot TargetRootFor(const std::string& host_root) {
  return host_root.empty() || host_root == "/" ? TargetRoot::kAllow : TargetRoot::kRefuse;
}

class Watcher {
 public:
  Watcher(const WatchOptions& options, std::ostream& log)
      : options_(options),
        log_(log),
        fs_(options.fs_root, TargetRootFor(options.discovery.host_root)),
        rotation_(options.max_files),
        identities_(options.discovery.host_root, NodeName(options.discovery.node_name)) {}

  int Run();

 private:
  // A line names processes (comm, pod), which may hold terminal controls.
  void Say(const std::string& text) {
    log_ << "goheap2pprof watch: " << LogSafeUtf8(text) << std::endl;
  }
  json Base(const Target& t) const {
    json j{{"time", UtcIsoTime(SystemClock::now())}, {"pid", t.pid}, {"program", t.comm}};
    if (!t.labels.empty()) j["labels"] = t.labels;
    return j;
  }
  // t's identity labels, read once when watching begins.
  void ReadIdentity(Target& t) const;
  // Appends to watch.jsonl. A failure (a full disk) loses the record and is
  // said once; watching goes on, and the log says when records are kept again.
  void Record(const json& record);
  // Starts watching; false (with a record) if the process cannot be watched
  // and we are discovering (--all); throws for a pid named on the command line.
  bool Add(pid_t pid, const ProcStat& stat, bool named);
  // Add's parts, each adding to the start record and its notes: t's memory
  // cgroup, its memory.events watch (--on-event), its PSI trigger (--psi;
  // throws for a named pid that cannot have one).
  void DescribeCgroup(Target& t, nlohmann::json& start, std::vector<std::string>& notes);
  void WatchEvents(Target& t, nlohmann::json& start, std::vector<std::string>& notes);
  void WatchPsi(Target& t, bool named, nlohmann::json& start, std::vector<std::string>& notes);
  void Remove(pid_t pid);
  // Reads the counters of t, runs its trigger machine and acts on it.
  void Sample(Target& t);
  // Captures t's heap now; the record describes the trigger and the result.
  // Returns the error kind when the capture failed.
  std::optional<ErrorKind> Capture(Target& t, const std::string& reason, json record);
  // Writes a captured profile to the output directory as `name`, rotating
  // the oldest out; the record says so. Throws Error (kIo).
  void WriteProfile(Target& t, const std::string& name, const std::string& profile,
                    const WatchReading& reading, json& record);
  // t's gzipped heap profile from a capture worker. Throws Error: the
  // worker's, or kInternal when it died or overran --capture-timeout (then
  // `outcome` says which: worker_crash, worker_timeout).
  std::string CaptureInWorker(const Target& t, json& record, std::string& outcome,
                              WorkerOp op = WorkerOp::kHeap);
  // t's goroutine profile, written beside the heap profile `heap_name`
  // just written; the record says where, or why not (a failure costs only
  // this file).
  void WriteGoroutines(const Target& t, const std::string& heap_name, json& record);
  // Why the allow-list refuses the process a successful reply for t read
  // (its owner, as the worker found it under the capture's anchor), or
  // nullopt when it admits it.
  std::optional<std::string> Refused(const Target& t, const WorkerReply& reply) const;
  // Where t's memory is (agent/watch/go_memory_record.h), read in the worker; on
  // failure {"error": why}. Never throws: a trigger line is written anyway.
  json GoMemory(const Target& t);
  void Ended(Target& t);
  // --report: the growth report of t's profiles, beside them.
  void Report(const Target& t);
  // What the report compares a profile with: the memory statistics read
  // just before it (GoMemory's record) and the RSS and cgroup now.
  WatchReading ReadingBeside(Target& t, const json& go_memory) const;
  void Discover();
  void DrainInotify();
  // Run's parts: the stop descriptor, inotify, the output directory, the
  // worker and the first targets; one wait for the next event or sample,
  // with the end reason when watching is to stop; the ends and PSI events
  // it saw; the samples now due.
  void Start();
  std::optional<std::string> WaitOnce(WatchMillis next_poll);
  void Handle(const std::vector<pollfd>& fds, const std::vector<pid_t>& order);
  void SampleDue(WatchMillis& next_poll);
  // One capture at a time, each waiting its turn (a shared pool may be busy
  // with serve's and push's captures).
  // The pool's routing key of a target (agent/worker/routing.h): its
  // captures go to the worker that holds its capture state.
  static std::string RouteKey(const Target& t) {
    return "process " + std::to_string(t.pid) + " started " + std::to_string(t.start_time);
  }
  PoolCall Call() const {
    return {.role = PoolRole::kWatch,
            .queue_timeout = WaitTurnTimeout(options_.workers),
            .cancelled = {}};
  }
  std::optional<std::string> PsiFileFor(pid_t pid) const;

  const WatchOptions& options_;
  std::ostream& log_;
  UniqueFd sigfd_;    // our signals, when not in the agent
  int stop_fd_ = -1;  // sigfd_, or the agent's stop eventfd
  CgroupFs fs_;
  FileRotation rotation_;
  std::unique_ptr<OutputDir> dir_;
  std::unique_ptr<WatchLog> jsonl_;
  // The confined capture worker, one (watch captures one process at a
  // time), started once the output directory is known to be usable; and
  // for --all, serve's discovery, scanned at each poll, with no filter (the
  // Go-process test reads the executable, so it runs in the worker too). In
  // the agent, its pool and its one discovery (scanned on its own clock,
  // with the agent's allow-lists) instead. ProbeInWorker counts in the
  // parts' metrics: watch's own are not exported.
  std::unique_ptr<RoleParts> parts_;
  std::map<pid_t, std::unique_ptr<Target>> targets_;
  UniqueFd inotify_;
  std::map<int, int> wd_refs_;  // inotify watch -> targets using it
  // Processes --all found but cannot capture: (pid, start time).
  std::set<std::pair<pid_t, uint64_t>> ignored_;
  PodIdentityReader identities_;
};

void Watcher::ReadIdentity(Target& t) const {
  // Under the test seam's root, as every file watch reads.
  const std::optional<std::string> cgroup = ReadSmallFile(fs_.Path(ProcPath(t.pid, "cgroup")));
  const PodIdentity id = identities_.Read(ParseCgroupIdentity(cgroup.value_or("")));
  for (const auto& [name, value] : IdentityLabels(id)) t.labels[name] = ValidUtf8(value);
  std::string service = DefaultServiceName(id);
  if (service.empty()) {
    const std::optional<std::string> exe = ReadExeLink(t.pid, nullptr, fs_.Path(""));
    service = exe ? PathBaseName(*exe) : t.comm;
  }
  t.labels["service_name"] = ValidUtf8(service);
  t.identity_failure = id.failure;
}

std::optional<std::string> Watcher::PsiFileFor(pid_t pid) const {
  if (!options_.psi_system) {
    if (std::optional<std::string> f = fs_.PressureFile(pid)) return f;
  }
  return "/proc/pressure/memory";
}

bool Watcher::Add(pid_t pid, const ProcStat& stat, bool named) {
  auto t = std::make_unique<Target>();
  t->pid = pid;
  t->start_time = stat.start_time;
  t->comm = ValidUtf8(stat.comm);
  t->end = std::make_unique<ProcessEndObserver>(pid, stat.start_time);
  t->cgroup = fs_.FindMemoryCgroup(pid);
  ReadIdentity(*t);

  json start = Base(*t);
  start["event"] = "start";
  if (!t->identity_failure.empty()) start["identity_failure"] = t->identity_failure;
  std::vector<std::string> notes;
  DescribeCgroup(*t, start, notes);
  WatchEvents(*t, start, notes);
  if (options_.psi) WatchPsi(*t, named, start, notes);
  for (const std::string& n : notes) Say("pid " + std::to_string(pid) + ": " + n);
  start["notes"] = notes;
  Record(start);
  Say("watching pid " + std::to_string(pid) + " (" + t->comm + ")" +
      (t->cgroup ? ", memory cgroup " + std::string(CgroupVersionName(t->cgroup->version)) + " " +
                       t->cgroup->hierarchy_path +
                       (t->cgroup->limit_dir ? ", limit at " + *t->cgroup->limit_dir
                                             : std::string(", no finite limit"))
                 : std::string(", no memory cgroup")));

  t->machine = std::make_unique<TriggerMachine>(options_.triggers, Now());
  Target& target = *t;
  targets_[pid] = std::move(t);
  if (options_.baseline) {
    json record = Base(target);
    record["event"] = "trigger";
    std::optional<ErrorKind> failed = Capture(target, "baseline", record);
    if (failed && Hopeless(*failed)) {
      const std::string why = target.last_error;
      Remove(pid);
      if (named) throw Error(*failed, "cannot watch process ", pid, ": ", why);
      ignored_.insert({pid, stat.start_time});
      return false;
    }
  }
  // Levels already exceeded now are shown by the baseline; fire on the next
  // crossing only.
  MemoryReading r = target.cgroup ? fs_.Read(*target.cgroup) : MemoryReading{};
  TriggerSample first;
  first.now = Now();
  first.usage = options_.triggers.working_set ? r.WorkingSet() : r.usage;
  first.limit = r.limit;
  first.rss = ReadRss(pid);
  first.max_events = r.max_events;
  first.oom_events = r.oom_events;
  if (options_.baseline) target.machine->Prime(first);
  return true;
}

void Watcher::DescribeCgroup(Target& t, json& start, std::vector<std::string>& notes) {
  const TriggerConfig& tc = options_.triggers;
  if (!t.cgroup) {
    start["cgroup"] = nullptr;
    if (!tc.above_pct.empty()) {
      notes.push_back("no memory cgroup found for it: --above cannot fire (use --rss-above)");
    }
    return;
  }
  const MemoryCgroup& cg = *t.cgroup;
  start["cgroup"] = {{"version", CgroupVersionName(cg.version)},
                     {"path", cg.hierarchy_path},
                     {"dir", cg.dir},
                     {"limit_dir", cg.limit_dir ? json(*cg.limit_dir) : json(nullptr)}};
  MemoryReading r = fs_.Read(cg);
  start["limit"] = OrNull(r.limit);
  start["usage"] = OrNull(r.usage);
  t.oom_kills = t.oom_kills_at_start = r.oom_kills;
  if (!cg.limit_dir && !tc.above_pct.empty()) {
    notes.push_back(
        "its memory cgroup and the ancestors we can see have no finite limit: "
        "--above cannot fire (use --rss-above)");
  }
}

void Watcher::WatchEvents(Target& t, json& start, std::vector<std::string>& notes) {
  if (!options_.triggers.on_max && !options_.triggers.on_oom) return;
  std::optional<std::string> events = t.cgroup ? fs_.EventsFile(*t.cgroup) : std::nullopt;
  if (!events) {
    notes.push_back("--on-event needs cgroup v2 memory.events; its memory cgroup is " +
                    std::string(t.cgroup ? "v1" : "not found") + ": event triggers are off for it");
    return;
  }
  int wd = inotify_add_watch(inotify_.get(), fs_.Path(*events).c_str(), IN_MODIFY);
  if (wd < 0) {
    notes.push_back("cannot watch " + *events + " (" + std::strerror(errno) +
                    "): event triggers are off for it");
    return;
  }
  t.events_wd = wd;
  ++wd_refs_[wd];
  start["events_file"] = *events;
}

void Watcher::WatchPsi(Target& t, bool named, json& start, std::vector<std::string>& notes) {
  std::optional<std::string> file = PsiFileFor(t.pid);
  Expected<UniqueFd> psi = TryRegisterPsiTrigger(fs_.Path(*file), *options_.psi);
  if (psi) {
    t.psi_fd = std::move(psi).value();
    t.psi_file = *file;
    start["psi_file"] = *file;
  } else if (named) {
    throw psi.error();
  } else {
    notes.push_back(std::string("no PSI trigger: ") + psi.error().what());
  }
}

void Watcher::Remove(pid_t pid) {
  auto it = targets_.find(pid);
  if (it == targets_.end()) return;
  int wd = it->second->events_wd;
  if (wd >= 0 && --wd_refs_[wd] == 0) {
    inotify_rm_watch(inotify_.get(), wd);
    wd_refs_.erase(wd);
  }
  targets_.erase(it);
}

void Watcher::Record(const json& record) {
  if (!jsonl_) return;  // the agent without an output directory
  const uint64_t lost_before = jsonl_->lost();
  if (jsonl_->Append(record)) {
    if (lost_before > 0) {
      Say("appending to watch.jsonl again; " + std::to_string(lost_before) +
          " record(s) were lost meanwhile");
    }
  } else if (lost_before == 0) {
    Say("cannot append to " + options_.dir + "/watch.jsonl: " + jsonl_->last_error() +
        "; records are lost until it can be written again, watching goes on");
  }
}

std::string Watcher::CaptureInWorker(const Target& t, json& record, std::string& outcome,
                                     WorkerOp op) {
  PoolResult r =
      RunCounted(parts_->pool(), parts_->metrics(), {op, t.pid, {}}, RouteKey(t), Call());
  // Counted on the parts' metrics: in the agent, its one /metrics (every role's).
  outcome = PoolOutcomeName(r);
  switch (r.outcome) {
    case PoolOutcome::kBusy:
    case PoolOutcome::kCancelled:  // watch never cancels
      // The detail says when the executable's earlier capture is stuck.
      throw Error(ErrorKind::kInternal,
                  r.detail.empty() ? "no capture worker became free" : r.detail);
    case PoolOutcome::kCrashed:
      throw Error(ErrorKind::kInternal, r.detail);
    case PoolOutcome::kTimedOut:
      throw Error(ErrorKind::kInternal, "the capture did not finish within --capture-timeout ",
                  Seconds(options_.workers.capture_timeout), " s; its worker was stopped");
    case PoolOutcome::kReplied:
      break;
  }
  record["bytes_read"] = r.reply.bytes_read;
  if (r.reply.error_kind != 0) {
    // The kind comes from another process: only a known one is believed.
    const int kind = r.reply.error_kind;
    const bool known = kind >= static_cast<int>(ErrorKind::kUsage) &&
                       kind <= static_cast<int>(ErrorKind::kInternal);
    throw Error(known ? static_cast<ErrorKind>(kind) : ErrorKind::kInternal,
                ValidUtf8(r.reply.message));
  }
  if (r.reply.start_time != t.start_time) {
    throw Error(ErrorKind::kNoSuchProcess, "process ", t.pid,
                " was replaced by another process with its pid");
  }
  if (std::optional<std::string> why = Refused(t, r.reply)) {
    throw Error(ErrorKind::kPermission, *why);
  }
  return std::move(r.reply.body);
}

std::optional<std::string> Watcher::Refused(const Target& t, const WorkerReply& reply) const {
  if (!reply.owner) {
    return "process " + std::to_string(t.pid) + ": the worker's reply names no owner";
  }
  if (options_.discovery.filter.Admits(t.pid, *reply.owner)) return std::nullopt;
  return "process " + std::to_string(t.pid) +
         " is no longer admitted by the allow-list: as the capture found it, its effective uid "
         "is " +
         std::to_string(reply.owner->uid) + " and its cgroup " + ValidUtf8(reply.owner->cgroup);
}

json Watcher::GoMemory(const Target& t) {
  PoolResult r = RunCounted(parts_->pool(), parts_->metrics(), {WorkerOp::kRuntimeStats, t.pid, {}},
                            RouteKey(t), Call());
  if (r.outcome != PoolOutcome::kReplied) {
    return {{"error", PoolOutcomeName(r) + (r.detail.empty() ? "" : ": " + r.detail)}};
  }
  if (r.reply.error_kind != 0) return {{"error", ValidUtf8(r.reply.message)}};
  if (r.reply.start_time != t.start_time) {
    return {{"error", "process " + std::to_string(t.pid) + " was replaced under its pid"}};
  }
  if (std::optional<std::string> why = Refused(t, r.reply)) return {{"error", *why}};
  // The worker's bytes are decoded as untrusted (bounded, checked); a
  // failure is this read's: the trigger line says why.
  json record;
  if (std::optional<std::string> why = FailureOf([&] {
        record = GoMemoryRecord(DecodeRuntimeStats(r.reply.body), RssAnonBytes(t.pid));
      })) {
    return {{"error", *why}};
  }
  return record;
}

void Watcher::WriteProfile(Target& t, const std::string& name, const std::string& profile,
                           const WatchReading& reading, json& record) {
  // The bytes come from the worker; the file is ours to write, whole or
  // not at all (a full disk fails this capture only).
  dir_->WriteAtomically(name, profile);
  record["file"] = name;
  t.last_file = name;
  t.files.push_back(name);
  t.readings.push_back(reading);
  std::vector<std::string> deleted;
  for (const FileRotation::Written& old : rotation_.Add(options_.dir + "/" + name)) {
    if (FileRotation::Delete(old)) deleted.push_back(old.path.substr(options_.dir.size() + 1));
    for (const FileRotation::Written& c : old.companions) {
      if (FileRotation::Delete(c)) deleted.push_back(c.path.substr(options_.dir.size() + 1));
    }
  }
  if (!deleted.empty()) record["deleted"] = deleted;
}

void Watcher::WriteGoroutines(const Target& t, const std::string& heap_name, json& record) {
  const std::string name = GoroutineFileName(heap_name);
  std::string outcome;
  json scratch;
  if (std::optional<std::string> why = FailureOf([&] {
        dir_->WriteAtomically(name, CaptureInWorker(t, scratch, outcome, WorkerOp::kGoroutine));
      })) {
    record["goroutine_file"] = nullptr;
    record["goroutine_error"] = *why;
    return;
  }
  rotation_.AddCompanion(options_.dir + "/" + name);
  record["goroutine_file"] = name;
}

std::optional<ErrorKind> Watcher::Capture(Target& t, const std::string& reason, json record) {
  const std::string name = ProfileFileName(t.comm, t.pid, SystemClock::now(), reason);
  const std::string path = options_.dir + "/" + name;
  const SteadyClock::time_point began = SteadyClock::now();
  record["reason"] = reason;
  // First, a read of a few milliseconds: the closest to the trigger's own
  // sample of the cgroup, where the profile says which sites allocated.
  record["go_memory"] = GoMemory(t);
  // RSS and the cgroup beside it, before the capture too: read after it,
  // they could be of a process the kernel had killed meanwhile (its memory
  // half freed), while the profile is of it alive. A failed capture drops them.
  const WatchReading reading = ReadingBeside(t, record["go_memory"]);
  std::optional<ErrorKind> failed;
  std::string outcome;
  try {
    const std::string profile = CaptureInWorker(t, record, outcome);
    if (options_.on_profile && reason != "baseline") {
      // The agent pushes it at once; a push that cannot even be queued
      // costs the push, not the file.
      if (std::optional<std::string> why =
              FailureOf([&] { options_.on_profile(t.pid, t.start_time, reason, profile); })) {
        record["push_error"] = *why;  // push's failure, whatever it is, is push's
      }
    }
    if (dir_) {
      WriteProfile(t, name, profile, reading, record);
      WriteGoroutines(t, name, record);
    } else {
      record["file"] = nullptr;  // the agent without an output directory
    }
    record["bytes"] = profile.size();
    ++t.captures;
  } catch (const std::exception& e) {
    // Boundary: one capture (a request of the long-running watcher): its
    // failure, ours or a library's, is recorded and reported, and watching
    // (and in the agent, every other role) goes on.
    failed = KindOf(e);
    t.last_error = e.what();
    record["file"] = nullptr;
    record["error"] = e.what();
    record["error_kind"] = ErrorKindName(*failed);
    if (outcome == "worker_crash" || outcome == "worker_timeout") record["worker"] = outcome;
  }
  const double ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - began).count();
  record["capture_ms"] = std::round(ms * 10) / 10;
  record["watch_peak_rss_kib"] = OrNull(OwnPeakRssKb());
  Record(record);
  if (failed) {
    Say("pid " + std::to_string(t.pid) + " " + reason +
        ": capture failed: " + record["error"].get<std::string>());
  } else {
    Say("pid " + std::to_string(t.pid) + " " + reason + ": " +
        (dir_ ? "wrote " + path : std::string("captured")) + " (" +
        std::to_string(static_cast<int>(ms)) + " ms)");
  }
  return failed;
}

void Watcher::Sample(Target& t) {
  t.sample_now = false;
  MemoryReading r = t.cgroup ? fs_.Read(*t.cgroup) : MemoryReading{};
  if (r.oom_kills) {
    if (t.oom_kills && *r.oom_kills > *t.oom_kills) t.oom_kills_rose_at = SystemClock::now();
    t.oom_kills = r.oom_kills;
  }
  TriggerSample s;
  s.now = Now();
  s.usage = options_.triggers.working_set ? r.WorkingSet() : r.usage;
  s.limit = r.limit;
  s.rss = options_.triggers.rss_above.empty() ? std::nullopt : ReadRss(t.pid);
  s.max_events = r.max_events;
  s.oom_events = r.oom_events;
  s.psi_fired = std::exchange(t.psi_fired, false);
  for (const TriggerDecision& d : t.machine->Evaluate(s)) {
    json record = Base(t);
    record["event"] = "trigger";
    record["reason"] = d.reason;
    record["usage"] = OrNull(s.usage);
    record["limit"] = OrNull(s.limit);
    if (s.usage && s.limit && *s.limit > 0) {
      record["usage_pct"] =
          std::round(1000.0 * static_cast<double>(*s.usage) / static_cast<double>(*s.limit)) / 10;
    }
    if (options_.triggers.working_set) record["usage_is_working_set"] = true;
    if (s.rss) record["rss"] = *s.rss;
    if (d.escalation) record["escalation"] = true;
    if (!d.capture) {
      record["file"] = nullptr;
      record["skipped"] = d.skipped_because;
      record["go_memory"] = GoMemory(t);
      Record(record);
      if (options_.verbose)
        Say("pid " + std::to_string(t.pid) + " " + d.reason + ": skipped (" + d.skipped_because +
            ")");
      continue;
    }
    Capture(t, d.reason, record);
  }
}

void Watcher::Ended(Target& t) {
  // First, before the parent reaps it: the zombie's status.
  ProcessEnd end = t.end->Observe();
  const SystemClock::time_point ended = SystemClock::now();
  std::optional<uint64_t> after;
  if (t.cgroup) after = fs_.Read(*t.cgroup).oom_kills;
  // The cgroup may be gone already (a container's is removed with it).
  if (!after) after = t.oom_kills;
  if (after && t.oom_kills && *after > *t.oom_kills) t.oom_kills_rose_at = ended;
  EndSummary s = DescribeEnd(end, t.oom_kills_at_start, after);
  json record = Base(t);
  record["event"] = "exit";
  record["how"] = s.how;
  record["exit_code"] = OrNull(s.exit_code);
  record["signal"] = OrNull(s.signal);
  record["oom_kill_rose"] = OrNull(s.oom_kill_rose);
  record["oom_kills_at_start"] = OrNull(t.oom_kills_at_start);
  record["oom_kills_at_end"] = OrNull(after);
  if (t.oom_kills_rose_at) {
    record["oom_kills_last_rise_seen"] = UtcIsoTime(*t.oom_kills_rose_at);
    s.text += " (last rise seen " +
              std::to_string(
                  std::chrono::duration_cast<WatchMillis>(ended - *t.oom_kills_rose_at).count()) +
              " ms before its end was reported)";
  }
  record["text"] = s.text;
  record["captures"] = t.captures;
  record["last_file"] = t.last_file.empty() ? json(nullptr) : json(t.last_file);
  Record(record);
  Say("pid " + std::to_string(t.pid) + " (" + t.comm + ") " + s.text);
  Report(t);
}

WatchReading Watcher::ReadingBeside(Target& t, const json& go_memory) const {
  WatchReading r;
  r.time_nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(SystemClock::now().time_since_epoch())
          .count();
  if (go_memory.is_object()) {
    const json live = go_memory.value("live_heap", json());
    if (live.is_number_integer()) r.heap_live = live.get<int64_t>();
    const json version = go_memory.value("go_version", json());
    if (version.is_string()) t.go_version = version.get<std::string>();
  }
  if (std::optional<uint64_t> rss = ReadRss(t.pid)) r.rss = static_cast<int64_t>(*rss);
  if (t.cgroup) {
    const MemoryReading m = fs_.Read(*t.cgroup);
    if (m.usage) r.cgroup_usage = static_cast<int64_t>(*m.usage);
    if (m.limit) r.cgroup_limit = static_cast<int64_t>(*m.limit);
  }
  return r;
}

void Watcher::Report(const Target& t) {
  if (!options_.report || !dir_) return;
  json record = Base(t);
  record["event"] = "growth-report";
  std::vector<std::string> names;
  // Whatever fails the report (a profile it cannot read, a full disk, a
  // library's exception), watching (or ending) goes on and, in the agent, so
  // do serve and push.
  std::optional<std::string> why = FailureOf([&] {
    // The pod, container and service_name, as on every watch.jsonl record.
    std::vector<std::pair<std::string, std::string>> labels;
    for (const auto& [name, value] : t.labels.items()) {
      labels.emplace_back(name, value.get<std::string>());
    }
    const WatchReportSubject who{.program = t.comm,
                                 .pid = t.pid,
                                 .process_start = ProcessStartUtc(t.start_time),
                                 .go_version = t.go_version,
                                 .labels = std::move(labels)};
    names = WriteWatchGrowthReport(*dir_, t.files, t.readings, who);
  });
  if (why) {
    record["files"] = nullptr;
    record["error"] = *why;
    Say("pid " + std::to_string(t.pid) + ": no growth report: " + *why);
  } else {
    record["files"] = names;
    Say("pid " + std::to_string(t.pid) + ": growth report in " + names.front());
  }
  Record(record);
}

void Watcher::Discover() {
  if (Discovery* own = parts_->own_discovery()) own->Scan();
  for (const GoProcess& found : parts_->discovery().Processes()) {
    const ProcessFacts& p = found.facts;
    auto it = targets_.find(p.pid);
    if (it != targets_.end() && it->second->start_time == p.start_time) continue;
    if (ignored_.count({p.pid, p.start_time})) continue;
    try {
      ProcStat stat = IdentifyProcess(p.pid);
      if (stat.start_time != p.start_time) continue;
      Add(p.pid, stat, /*named=*/false);
    } catch (const std::exception& e) {
      // Boundary: one discovered process (watch keeps running): gone
      // already, or not ours to read; the next scan decides again.
      if (KindOf(e) != ErrorKind::kNoSuchProcess) ignored_.insert({p.pid, p.start_time});
    }
  }
}

void Watcher::DrainInotify() {
  alignas(inotify_event) char buf[4096];
  for (;;) {
    ssize_t n = ::read(inotify_.get(), buf, sizeof(buf));
    if (n <= 0) return;
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      for (auto& [pid, t] : targets_) {
        if (t->events_wd == ev->wd) t->sample_now = true;
      }
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
}

void Watcher::Start() {
  // Signals arrive as a readable descriptor, so a SIGTERM during a capture
  // waits until that capture's file is complete. In the agent, its stop
  // descriptor does the same (the agent takes the signals).
  stop_fd_ = options_.stop_fd;
  // A worker that dies while we write its request must not end the watch
  // (BlockStopSignals ignores SIGPIPE; the agent does the same).
  if (stop_fd_ < 0) {
    const sigset_t signals = BlockStopSignals();
    sigfd_.Reset(signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sigfd_.valid()) throw Error(ErrorKind::kInternal, "signalfd: ", std::strerror(errno));
    stop_fd_ = sigfd_.get();
  }
  inotify_.Reset(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (!inotify_.valid()) throw Error(ErrorKind::kInternal, "inotify_init1: ", std::strerror(errno));

  if (!options_.dir.empty()) {
    dir_ = std::make_unique<OutputDir>(options_.dir);
    jsonl_ = std::make_unique<WatchLog>(*dir_, "watch.jsonl");
  }
  WorkerSettings worker = options_.workers;
  worker.max_concurrent = 1;
  worker.executable = options_.capture.executable;
  // One capture at a time: never busy.
  parts_ = std::make_unique<RoleParts>(options_.shared, worker, WaitTurnTimeout(worker));

  // Named pids must all be watchable; check them all before capturing any.
  std::vector<std::pair<pid_t, ProcStat>> named;
  for (pid_t pid : options_.pids) named.emplace_back(pid, IdentifyProcess(pid));
  for (const auto& [pid, stat] : named) Add(pid, stat, /*named=*/true);
  if (options_.all) Discover();
}

std::optional<std::string> Watcher::WaitOnce(WatchMillis next_poll) {
  WatchMillis wake = next_poll;
  for (const auto& [pid, t] : targets_) {
    if (std::optional<WatchMillis> e = t->machine->next_every()) wake = std::min(wake, *e);
  }
  std::vector<pollfd> fds;
  fds.push_back({stop_fd_, POLLIN, 0});
  fds.push_back({inotify_.get(), POLLIN, 0});
  std::vector<pid_t> order;  // the target of each fds[i + 2]
  for (const auto& [pid, t] : targets_) {
    fds.push_back({t->end->fd(), POLLIN, 0});
    order.push_back(pid);
    if (t->psi_fd.valid()) {
      fds.push_back({t->psi_fd.get(), POLLPRI, 0});
      order.push_back(pid);
    }
  }
  const long long timeout = std::max<long long>(0, (wake - Now()).count());
  int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(timeout, 60000)));
  if (n < 0 && errno != EINTR) throw Error(ErrorKind::kInternal, "poll: ", std::strerror(errno));

  if (fds[0].revents & POLLIN) {
    if (!sigfd_.valid()) return "the agent stopped";
    signalfd_siginfo info{};
    (void)::read(sigfd_.get(), &info, sizeof(info));
    return info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
  }
  if (fds[1].revents & POLLIN) DrainInotify();
  Handle(fds, order);
  return std::nullopt;
}

void Watcher::Handle(const std::vector<pollfd>& fds, const std::vector<pid_t>& order) {
  // Ends first: a process that exited is not sampled again.
  std::vector<pid_t> gone;
  for (size_t i = 2; i < fds.size(); ++i) {
    Target& t = *targets_.at(order[i - 2]);
    if (fds[i].fd == t.end->fd()) {
      if (fds[i].revents & POLLIN) gone.push_back(t.pid);
    } else if (fds[i].revents & POLLERR) {
      Say("pid " + std::to_string(t.pid) + ": the PSI source " + t.psi_file +
          " went away; PSI trigger off");
      t.psi_fd.Reset();
    } else if (fds[i].revents & POLLPRI) {
      t.psi_fired = t.sample_now = true;
    }
  }
  for (pid_t pid : gone) {
    Ended(*targets_.at(pid));
    Remove(pid);
  }
}

void Watcher::SampleDue(WatchMillis& next_poll) {
  const WatchMillis now = Now();
  const bool poll_due = now >= next_poll;
  if (poll_due) {
    next_poll += options_.poll;
    if (next_poll <= now) next_poll = now + options_.poll;
    if (options_.all) Discover();
  }
  for (auto& [pid, t] : targets_) {
    std::optional<WatchMillis> e = t->machine->next_every();
    if (poll_due || t->sample_now || (e && now >= *e)) {
      // A process that exited since the poll above is handled next round.
      if (!t->end->Exited()) Sample(*t);
    }
  }
}

int Watcher::Run() {
  Start();
  WatchMillis next_poll = Now() + options_.poll;
  std::string end_reason = "all watched processes are gone";
  while (options_.all || !targets_.empty()) {
    if (std::optional<std::string> stopped = WaitOnce(next_poll)) {
      end_reason = *stopped;
      break;
    }
    SampleDue(next_poll);
  }
  for (const auto& [pid, t] : targets_) Report(*t);
  json end{
      {"time", UtcIsoTime(SystemClock::now())}, {"event", "watch-end"}, {"reason", end_reason}};
  end["watching"] = targets_.size();
  Record(end);
  Say("exiting: " + end_reason);
  return 0;
}

}  // namespace

std::vector<double> ParsePercentList(std::string_view text) {
  std::vector<double> out;
  for (std::string_view item : SplitList(text)) {
    if (!item.empty() && item.back() == '%') item.remove_suffix(1);
    std::optional<double> v = ParseNumber(item);
    if (!v || *v <= 0 || *v > 100) {
      throw Error(ErrorKind::kUsage, "--above \"", text,
                  "\": expected percentages in (0, 100], e.g. 70%,90%");
    }
    out.push_back(*v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint64_t> ParseSizeList(std::string_view text) {
  std::vector<uint64_t> out;
  for (std::string_view item : SplitList(text)) {
    std::optional<uint64_t> v = ParseByteSize(item);
    if (!v || *v == 0) {
      throw Error(ErrorKind::kUsage, "--rss-above \"", text,
                  "\": expected sizes such as 512M or 1.5G");
    }
    out.push_back(*v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void ParseEventList(std::string_view text, TriggerConfig& config) {
  for (std::string_view item : SplitList(text)) {
    if (item == "max") {
      config.on_max = true;
    } else if (item == "oom") {
      config.on_oom = true;
    } else {
      throw Error(ErrorKind::kUsage, "--on-event \"", text, "\": expected max, oom or max,oom");
    }
  }
}

int RunWatch(const WatchOptions& options, std::ostream& log) {
  if (options.pids.empty() && !options.all) {
    throw Error(ErrorKind::kUsage, "watch needs pids or --all");
  }
  if (options.dir.empty() && !options.shared) {
    throw Error(ErrorKind::kUsage, "watch needs an output directory (-o)");
  }
  Watcher watcher(options, log);
  return watcher.Run();
}

}  // namespace goheap2pprof
