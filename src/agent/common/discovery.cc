#include "agent/common/discovery.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>

#include "base/error.h"
#include "proc/cgroup.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::string ContainerIdFromCgroup(const std::string& path) {
  // The last run of exactly 64 hex digits ("docker-<id>.scope",
  // "cri-containerd-<id>.scope", "/docker/<id>").
  std::string found;
  for (size_t i = 0; i < path.size();) {
    if (!IsHex(path[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < path.size() && IsHex(path[j])) ++j;
    if (j - i == 64) found = path.substr(i, 64);
    i = j;
  }
  return found;
}

bool ProcessFilter::AdmitsPid(pid_t pid) const {
  return std::find(deny_pids.begin(), deny_pids.end(), pid) == deny_pids.end();
}

bool ProcessFilter::AdmitsUid(uid_t uid) const {
  return allow_uids.empty() ||
         std::find(allow_uids.begin(), allow_uids.end(), uid) != allow_uids.end();
}

bool ProcessFilter::AdmitsCgroup(const std::string& path) const {
  if (allow_cgroups.empty()) return true;
  return std::any_of(allow_cgroups.begin(), allow_cgroups.end(), [&](std::string_view allowed) {
    // "/a/b/" means "/a/b": a subtree, not a string prefix.
    while (!allowed.empty() && allowed.back() == '/') allowed.remove_suffix(1);
    std::string_view p(path);
    return p.starts_with(allowed) && (p.size() == allowed.size() || p[allowed.size()] == '/');
  });
}

namespace {

// ReadProcessOwner, and what the whole cgroup file says into *where (if
// given), from one read of it.
std::optional<ProcessOwner> ReadOwner(pid_t pid, CgroupIdentity* where) {
  std::optional<uid_t> uid = ProcessUid(pid);
  if (!uid) return std::nullopt;
  ProcessOwner owner;
  owner.uid = *uid;
  // No cgroup file (a kernel without cgroups): the empty path, which only
  // an allow-list of "/" admits.
  if (std::optional<std::string> cg = ReadProcSmallFile(pid, "cgroup", 65536)) {
    owner.cgroup = ProcessCgroupPath(*cg);
    if (where) *where = ParseCgroupIdentity(*cg);
  }
  return owner;
}

}  // namespace

std::optional<ProcessOwner> ReadProcessOwner(pid_t pid) { return ReadOwner(pid, nullptr); }

namespace {

// The facts ReadOwner and the filter leave to read: stat, exe and environ.
// false if the process is gone, not a user process, or not ours to read.
bool ReadRest(ProcessFacts& f, const std::vector<std::string>& want_env, bool* forbidden,
              const std::optional<FileStamp>& key_read) {
  std::optional<ProcStat> ps = ReadLiveProcStat(f.pid);
  if (!ps) return false;
  f.comm = ps->comm;
  f.start_time = ps->start_time;
  std::optional<std::string> exe = ReadExeLink(f.pid, forbidden);
  if (!exe) return false;
  f.exe = std::move(*exe);
  if (key_read) {
    f.key = *key_read;
  } else if (std::optional<struct stat> st = StatProcExe(f.pid)) {
    f.key = FileStamp::Of(*st);
  } else {
    return false;
  }
  if (!want_env.empty()) {
    if (std::optional<std::string> env = ReadProcSmallFile(f.pid, "environ")) {
      f.environ_wanted = ParseEnviron(*env, want_env);
    }
  }
  return true;
}

// ReadProcessFacts, with the executable's key taken from key_read if a
// scan has just read it (a stat less per Go process and scan), else read.
std::optional<ProcessFacts> ReadFacts(pid_t pid, const ProcessFilter& filter,
                                      const std::vector<std::string>& want_env, bool* forbidden,
                                      const std::optional<FileStamp>& key_read) {
  if (forbidden) *forbidden = false;
  if (!filter.AdmitsPid(pid)) return std::nullopt;
  CgroupIdentity where;
  std::optional<ProcessOwner> owner = ReadOwner(pid, &where);
  if (!owner || !filter.AdmitsUid(owner->uid) || !filter.AdmitsCgroup(owner->cgroup)) {
    return std::nullopt;
  }
  ProcessFacts f;
  f.pid = pid;
  f.uid = owner->uid;
  f.cgroup = std::move(owner->cgroup);
  f.container_id = ContainerIdFromCgroup(f.cgroup);
  f.identity.runtime = where.runtime;
  f.identity.cgroup = std::move(where);
  if (!ReadRest(f, want_env, forbidden, key_read)) return std::nullopt;
  return f;
}

}  // namespace

std::optional<ProcessFacts> ReadProcessFacts(pid_t pid, const ProcessFilter& filter,
                                             const std::vector<std::string>& want_env,
                                             bool* forbidden) {
  return ReadFacts(pid, filter, want_env, forbidden, std::nullopt);
}

ExeInfo ExeInfoForFailure(bool process_vanished, std::string message) {
  ExeInfo info;
  if (!process_vanished) info.error = std::move(message);
  return info;
}

Discovery::Discovery(Options options, Probe probe)
    : options_(std::move(options)),
      probe_(std::move(probe)),
      identities_(options_.settings.host_root, NodeName(options_.settings.node_name)) {}

Discovery::~Discovery() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Discovery::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      Scan();
      lock.lock();
      wake_.wait_for(lock, options_.settings.interval, [this] { return stop_; });
    }
  });
}

namespace {

// The facts of every process in /proc that passes the filter, but for the
// processes whose executable known_not_go recognizes by its key alone: one
// stat each instead of the ten system calls of their facts, for the most
// of a node's processes (issue 27: a scan of 1,000 processes, 200 of them
// Go). That key is the facts' key: a process that execs between its stat
// and its facts is judged by its old executable in this scan and by the
// new one from the next. Throws kIo when /proc cannot be listed or read
// for want of resources.
std::vector<ProcessFacts> ListProcesses(const Discovery::Options& options,
                                        const std::function<bool(const FileStamp&)>& known_not_go) {
  std::vector<ProcessFacts> found;
  ForEachProcess([&](pid_t pid, const struct stat* exe) {
    std::optional<FileStamp> key;
    if (exe) key = FileStamp::Of(*exe);
    if (key && known_not_go(*key)) return;
    if (std::optional<ProcessFacts> f =
            ReadFacts(pid, options.settings.filter, options.want_env, nullptr, key)) {
      found.push_back(std::move(*f));
    }
  });
  return found;
}

}  // namespace

void Discovery::Scan() {
  // One scan at a time (the background thread's and a caller's): the
  // identity cache is the scan's alone. Readers never take this lock.
  std::lock_guard<std::mutex> scanning(scan_mu_);
  try {
    ScanOrThrow();
  } catch (const std::exception&) {
    // Boundary: one scan of a long-running agent: a failure to read /proc or to start a
    // worker for a probe (no descriptors left), or a library's exception,
    // keeps the last good list rather than emptying it, or ending the
    // discovery thread and with it the agent.
    std::lock_guard<std::mutex> lock(mu_);
    ++scan_errors_;
  }
}

void Discovery::ScanOrThrow() {
  std::vector<ProcessFacts> found = ListProcesses(options_, [this](const FileStamp& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = exes_.find(key);
    if (it == exes_.end() || it->second.is_go) return false;
    ++cache_hits_;
    exe_last_used_[key] = scan_number_;
    return true;
  });
  auto next = std::make_shared<std::map<pid_t, GoProcess>>();
  for (ProcessFacts& f : found) {
    ExeInfo info = ExeInfoOf(f);
    if (!info.is_go) continue;
    GoProcess p{std::move(f), std::move(info), ""};
    pid_t pid = p.facts.pid;
    next->emplace(pid, std::move(p));
  }
  // The pod names, from the runtime's bundles (files a container's owner
  // may make slow or large): parsed with no lock held, by this scan alone.
  std::set<std::pair<pid_t, uint64_t>> live;
  for (auto& [pid, p] : *next) {
    p.facts.identity = identities_.Get(pid, p.facts.start_time, p.facts.identity.cgroup);
    live.emplace(pid, p.facts.start_time);
  }
  identities_.Retain(live);
  std::map<std::string, uint64_t> failures = identities_.failures();
  // Published in one step: readers take the whole list, never a scan's part.
  std::lock_guard<std::mutex> lock(mu_);
  ++scan_number_;
  // Forget sampling states of processes that are gone.
  std::erase_if(sampling_, [&](const auto& s) { return !live.contains(s.first); });
  processes_ = std::move(next);
  identity_failures_ = std::move(failures);
  last_success_seconds_ =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ExeInfo Discovery::ExeInfoOf(const ProcessFacts& f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = exes_.find(f.key);
    if (it != exes_.end()) {
      ++cache_hits_;
      exe_last_used_[f.key] = scan_number_;
      return it->second;
    }
  }
  // One probe per executable identity, outside the lock (it waits for a
  // worker).
  ExeInfo info = probe_(f.pid);
  std::lock_guard<std::mutex> lock(mu_);
  ++analyses_;
  // A transient answer (busy workers) is not cached: try again later.
  if (info.is_go || !info.error.empty()) {
    if (exes_.size() >= options_.max_executables) {
      auto oldest =
          std::min_element(exe_last_used_.begin(), exe_last_used_.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      exes_.erase(oldest->first);
      exe_last_used_.erase(oldest);
    }
    exes_[f.key] = info;
    exe_last_used_[f.key] = scan_number_;
  }
  return info;
}

std::vector<GoProcess> Discovery::Processes() const {
  std::shared_ptr<const std::map<pid_t, GoProcess>> list;
  std::map<std::pair<pid_t, uint64_t>, std::string> sampling;
  {
    std::lock_guard<std::mutex> lock(mu_);
    list = processes_;
    sampling = sampling_;
  }
  std::vector<GoProcess> out;
  out.reserve(list->size());
  for (const auto& [pid, p] : *list) {
    out.push_back(p);
    auto s = sampling.find({pid, p.facts.start_time});
    if (s != sampling.end()) out.back().sampling = s->second;
  }
  return out;
}

std::optional<ProcessFacts> Discovery::Visible(pid_t pid, bool* forbidden) const {
  return ReadProcessFacts(pid, options_.settings.filter, options_.want_env, forbidden);
}

void Discovery::NoteSampling(pid_t pid, uint64_t start_time, const std::string& state) {
  // Shown by Processes() over the list; the next scan forgets the gone.
  std::lock_guard<std::mutex> lock(mu_);
  sampling_[{pid, start_time}] = state;
}

uint64_t Discovery::scans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scan_number_;
}

uint64_t Discovery::scan_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scan_errors_;
}

double Discovery::last_success_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_success_seconds_;
}

uint64_t Discovery::analyses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return analyses_;
}

std::map<std::string, uint64_t> Discovery::identity_failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return identity_failures_;
}

uint64_t Discovery::cache_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_hits_;
}

}  // namespace goheap2pprof
