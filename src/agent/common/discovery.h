// Which Go processes the agents (`serve`, `watch --all`) offer, and what is
// known about them: a scan of /proc for processes we may read, filtered by
// --allow-uid, --allow-cgroup and --deny-pid (a filtered process is
// invisible: answered as if it did not exist), with the facts discovery
// labels need. Whether an executable is Go (its version, build ID) is
// learnt once per executable identity (device, inode, size, mtime) by the
// probe the role supplies (a capture worker's WorkerOp::kProbe, never the
// server itself), and kept in a bounded cache.
//
//   Discovery d(options, probe);
//   d.Scan();  // or d.Start() for a background scan every interval
//   for (const GoProcess& p : d.Processes()) ...
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

#include "agent/common/cgroup_path.h"
#include "agent/common/pod_identity.h"
#include "proc/file_stamp.h"

namespace goheap2pprof {

// What the allow-list judges a process by, besides its pid: read from
// /proc/<pid> by discovery (on request and on every scan) and again by the
// capture worker while the capture's anchor proves it is still the process
// it read (agent/worker/worker.h), so that the filter is applied to the process a
// profile really comes from.
struct ProcessOwner {
  uid_t uid = 0;       // owner of the /proc/<pid> directory: the effective uid
  std::string cgroup;  // the cgroup v2 path ("0::" line), else the first line's path
};

// The owner of pid now; nullopt if it is gone. Throws kIo when /proc
// cannot be read for want of descriptors or memory (EMFILE, ENFILE,
// ENOMEM): that says nothing about the process.
std::optional<ProcessOwner> ReadProcessOwner(pid_t pid);

struct ProcessFilter {
  std::vector<uid_t> allow_uids;           // empty: any
  std::vector<std::string> allow_cgroups;  // cgroup subtrees (whole path elements); empty: any
  std::vector<pid_t> deny_pids;

  bool AdmitsPid(pid_t pid) const;
  bool AdmitsUid(uid_t uid) const;
  // True if path is one of allow_cgroups or below one: "/user.slice/user-1"
  // admits itself and "/user.slice/user-1/x", never "/user.slice/user-10".
  bool AdmitsCgroup(const std::string& path) const;
  bool Admits(pid_t pid, const ProcessOwner& owner) const {
    return AdmitsPid(pid) && AdmitsUid(owner.uid) && AdmitsCgroup(owner.cgroup);
  }
};

struct ExeInfo {
  bool is_go = false;
  std::string go_version;
  std::string build_id;
  std::string error;  // why it is not offered (not Go, unreadable)
};

struct ProcessFacts {
  pid_t pid = 0;
  uint64_t start_time = 0;  // clock ticks after boot
  std::string comm;
  std::string exe;  // readlink of /proc/<pid>/exe
  uid_t uid = 0;
  std::string cgroup;        // as ProcessOwner's
  std::string container_id;  // a 64-hex-digit id in the cgroup path, if any
  // Its cgroup's identity; a discovery scan adds the names from the
  // runtime's bundle and the node (pod_identity.h).
  PodIdentity identity;
  std::map<std::string, std::string> environ_wanted;  // for --service-name-from env:VAR
  FileStamp key;  // of /proc/<pid>/exe; the build ID comes later
};

struct GoProcess {
  ProcessFacts facts;
  ExeInfo exe;
  // From the last capture: "on", "off" (409) or "" (not captured yet).
  std::string sampling;
};

// Which processes the agent finds and how it names them, as every role's
// options hold it (cli/agent_flags.h: --allow-uid, --allow-cgroup,
// --deny-pid, --service-name-from, --host-root, --node-name and
// --discover-interval), typed once.
struct DiscoverySettings {
  ProcessFilter filter;
  std::string service_name_from = "auto";  // auto | exe | comm | cgroup | env:VAR
  // The node's filesystem (for the runtimes' bundles) and name: the
  // processes' Kubernetes identity (pod_identity.h).
  std::string host_root = "/";
  std::string node_name;                      // else $NODE_NAME
  std::chrono::milliseconds interval{10000};  // between scans
};

// Reads the facts of one pid; nullopt if it is gone, not readable, a
// kernel thread, or filtered out; then *forbidden (if given) tells whether
// the reason was that the server may not read its executable (a process
// that passed the filters), which the server answers with 403.
// `want_env` names environment variables to read (for service names).
// Throws kIo as ReadProcessOwner.
std::optional<ProcessFacts> ReadProcessFacts(pid_t pid, const ProcessFilter& filter,
                                             const std::vector<std::string>& want_env,
                                             bool* forbidden = nullptr);

// A failed probe as discovery keeps it: a process that vanished says nothing
// about its executable (not cached: asked again at the next scan); any
// other failure is why the executable is not offered.
ExeInfo ExeInfoForFailure(bool process_vanished, std::string message);

// A 64-hex-digit container id in a cgroup path (docker, containerd, cri-o
// forms), or "".
std::string ContainerIdFromCgroup(const std::string& cgroup_path);

class Discovery {
 public:
  // probe(pid) asks a worker about pid's executable; called once per new
  // executable identity.
  using Probe = std::function<ExeInfo(pid_t pid)>;
  struct Options {
    DiscoverySettings settings;
    // The environment variable --service-name-from env:VAR reads (From).
    std::vector<std::string> want_env;
    size_t max_executables = 4096;  // bound of the executable cache

    // What serve, push and the agent configure: their settings, and the
    // variable their service names read.
    static Options From(const DiscoverySettings& settings) {
      Options d;
      d.settings = settings;
      if (settings.service_name_from.rfind("env:", 0) == 0)
        d.want_env.push_back(settings.service_name_from.substr(4));
      return d;
    }
  };

  Discovery(Options options, Probe probe);
  ~Discovery();

  void Start();  // background scans every interval until destroyed
  // One scan now. A scan that cannot read /proc (out of descriptors,
  // opendir failing) keeps the last good list and is counted in
  // scan_errors(): an agent that ran out of descriptors must not answer
  // that the node has no Go processes.
  void Scan();

  // The last scan's list: a snapshot taken under a short lock, never
  // waiting for a scan (which reads /proc, probes and parses bundles with no
  // lock held) to finish.
  std::vector<GoProcess> Processes() const;
  // The executable facts for a pid that is visible now (filters applied on
  // fresh /proc reads, not the last scan); nullopt if invisible.
  std::optional<ProcessFacts> Visible(pid_t pid, bool* forbidden = nullptr) const;
  // Records what a capture learnt about sampling.
  void NoteSampling(pid_t pid, uint64_t start_time, const std::string& state);

  uint64_t scans() const;        // completed scans
  uint64_t scan_errors() const;  // scans that failed (the list was kept)
  // Seconds since the epoch at the end of the last scan that succeeded; 0
  // before the first.
  double last_success_seconds() const;
  uint64_t analyses() const;    // probes made
  uint64_t cache_hits() const;  // processes answered from the cache
  // Processes whose pod names could not be read, by reason (pod_identity.h).
  std::map<std::string, uint64_t> identity_failures() const;

 private:
  void ScanOrThrow();
  // What is known of f's executable: cached, else probed (outside mu_).
  ExeInfo ExeInfoOf(const ProcessFacts& f);

  Options options_;
  Probe probe_;
  std::mutex scan_mu_;  // held by a scan, never by a reader
  // The published state: held only to copy or swap it, never across a
  // scan's reads, probes or bundle parsing.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
  std::map<FileStamp, ExeInfo> exes_;
  std::map<FileStamp, uint64_t> exe_last_used_;
  uint64_t scan_number_ = 0;
  uint64_t scan_errors_ = 0;
  double last_success_seconds_ = 0;
  std::shared_ptr<const std::map<pid_t, GoProcess>> processes_ =
      std::make_shared<const std::map<pid_t, GoProcess>>();
  std::map<std::pair<pid_t, uint64_t>, std::string> sampling_;
  uint64_t analyses_ = 0, cache_hits_ = 0;
  std::map<std::string, uint64_t> identity_failures_;
  PodIdentityCache identities_;  // the scan's own (scan_mu_)
};

}  // namespace goheap2pprof
