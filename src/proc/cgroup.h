// Finding and reading the memory cgroup of a process, for `mem`, `growth`,
// `watch` and discovery's --allow-cgroup: which directory holds its counters (cgroup v1 or v2,
// nested, across cgroup namespaces), which ancestor carries the finite limit the OOM killer
// enforces, and what the usage, limit, events and OOM-kill counters say now.
//
// Every path goes through a filesystem root so tests run on a fake tree:
//
//   CgroupFs fs;                                   // the real "/"
//   std::optional<MemoryCgroup> cg = fs.FindMemoryCgroup(pid);
//   if (cg) MemoryReading r = fs.Read(*cg);        // usage, limit, oom_kill, ...
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "proc/procfs.h"

namespace goheap2pprof {

enum class CgroupVersion { kV1, kV2 };
std::string_view CgroupVersionName(CgroupVersion v);

// One line of /proc/<pid>/cgroup: "hierarchy-ID:controller-list:path". The
// v2 line is "0::/path"; a v1 line names its controllers ("4:memory:/a/b").
struct ProcCgroupLine {
  int hierarchy_id = 0;
  std::vector<std::string> controllers;  // empty for v2
  std::string path;  // relative to the reader's cgroup namespace; may start "/.."
};
std::vector<ProcCgroupLine> ParseProcCgroup(std::string_view text);
// The one path that names a process's cgroup for allow-lists and labels: the
// v2 line's ("0::"), else the first line's; "" when there is none.
std::string ProcessCgroupPath(std::string_view text);

// A cgroup filesystem mount from a mountinfo file.
struct CgroupMount {
  CgroupVersion version = CgroupVersion::kV2;
  std::string root;                  // the hierarchy path mounted there (4th field)
  std::string mount_point;           // where (5th field), octal escapes decoded
  std::vector<std::string> options;  // super options; v1 lists controllers here
};
// The cgroup and cgroup2 mounts of a /proc/<pid>/mountinfo text.
std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo);

// Where path `path` of the hierarchy appears under a mount whose root is
// `root`: the part after root, or nullopt if path is not below root (paths
// outside the reader's cgroup namespace start with "/.." and are below no
// mount of ours).
std::optional<std::string> PathBelowMountRoot(std::string_view path, std::string_view root);

// Parses a limit file value: "max" (v2) or a v1 value of 2^62 bytes or more
// (v1's "unlimited" is LONG_MAX rounded down to a page) means no limit.
std::optional<uint64_t> ParseMemoryLimit(std::string_view text);
// The value of `key` in a flat-keyed file ("oom_kill 3\n" lines:
// memory.events, memory.stat, memory.oom_control).
std::optional<uint64_t> FlatKeyedValue(std::string_view text, std::string_view key);

// The memory cgroup of one process, as directories (without the filesystem
// root prefix).
struct MemoryCgroup {
  CgroupVersion version = CgroupVersion::kV2;
  std::string hierarchy_path;  // as /proc/<pid>/cgroup shows it
  std::string dir;             // the process's own cgroup directory
  std::string top_dir;         // the highest directory we can see (the mount)
  // The nearest of dir and its ancestors (up to top_dir) with a finite limit.
  std::optional<std::string> limit_dir;
  // Through /proc/<pid>/root: the target's own view, used when the cgroup is
  // outside our namespace (a sidecar watching its pod's other container).
  bool via_target_root = false;
};

// What the counters say at one moment. Absent values could not be read.
struct MemoryReading {
  std::optional<uint64_t> usage;          // of limit_dir (or dir when no limit)
  std::optional<uint64_t> limit;          // of limit_dir
  std::optional<uint64_t> inactive_file;  // for the kubelet's working set
  // memory.events of limit_dir (v2 only): hierarchical counters.
  std::optional<uint64_t> max_events;
  std::optional<uint64_t> oom_events;
  // The OOM kills of processes in dir: v2 memory.events "oom_kill",
  // v1 memory.oom_control "oom_kill".
  std::optional<uint64_t> oom_kills;
  // usage - inactive_file, as the kubelet computes the working set.
  std::optional<uint64_t> WorkingSet() const;
};

// Whether a cgroup outside our own cgroup mounts may be reached through the
// target's /proc/<pid>/root, i.e. through a mount namespace the target may
// control (it can plant a FIFO, a symlink or a fake memory.pressure there).
// Only a watch in the target's own pod (a sidecar) needs it; a node agent
// reads the host's cgroup mount (--host-root) and refuses it.
enum class TargetRoot { kRefuse, kAllow };

class CgroupFs {
 public:
  // root: prefix of every absolute path; "" is the real filesystem.
  explicit CgroupFs(std::string root = "", TargetRoot target_root = TargetRoot::kRefuse)
      : root_(std::move(root)), target_root_(target_root) {}

  // The memory cgroup of pid: the v1 memory hierarchy when a v1 line names
  // the memory controller, else the v2 one if its memory controller is
  // enabled there. nullopt when the process has no visible memory cgroup
  // (no such controller mounted, or the process is gone).
  std::optional<MemoryCgroup> FindMemoryCgroup(pid_t pid) const;
  MemoryReading Read(const MemoryCgroup& cg) const;
  // The limit of dir itself, nullopt if unlimited or unreadable.
  std::optional<uint64_t> LimitOf(CgroupVersion v, const std::string& dir) const;

  // The file that `--on-event` watches (v2 memory.events of limit_dir, or of
  // dir without a limit); nullopt on v1.
  std::optional<std::string> EventsFile(const MemoryCgroup& cg) const;
  // The cgroup's memory.pressure when the v2 hierarchy has one for pid (also
  // in hybrid setups, where PSI is kept per v2 cgroup without the memory
  // controller), else nullopt.
  std::optional<std::string> PressureFile(pid_t pid) const;

  // root + path.
  std::string Path(std::string_view path) const { return root_ + std::string(path); }
  // Whole small file, nullopt if it cannot be read. Only a regular file is
  // read, never through a symlink and never waiting (OpenRegularFile).
  std::optional<std::string> ReadSmallFile(const std::string& path) const;

 private:
  // The directory of hierarchy path `path` for a cgroup filesystem of this
  // version, searched in our mounts, then the target's (via /proc/pid/root).
  struct Resolved {
    std::string dir;
    std::string top_dir;
    bool via_target_root = false;
  };
  std::optional<Resolved> Resolve(pid_t pid, CgroupVersion version, std::string_view path,
                                  std::string_view required_file) const;
  // Inside a cgroup namespace (a pod's, on cgroup v2) the host's hierarchy,
  // mounted for us under --host-root, shows root "/../.." (k levels above our
  // namespace's root) and a cgroup outside our namespace "/../x/y" (j <= k
  // levels up). Where that cgroup is below the mount's root: the first k - j
  // names of our namespace's root (OwnRootIn), then x/y. nullopt otherwise.
  std::optional<std::string> BelowAncestorMount(const std::vector<CgroupMount>& mounts,
                                                const CgroupMount& m, std::string_view path) const;
  // The names of our namespace's root, `depth` levels below mount m's root:
  // the directory there with the inode of our own mount of that root (root
  // "/"), found once per mount. nullptr if none.
  const std::vector<std::string>* OwnRootIn(const std::vector<CgroupMount>& mounts,
                                            const CgroupMount& m, size_t depth) const;

  std::string root_;
  TargetRoot target_root_;
  // OwnRootIn's answers by mount point (a cache: not thread-safe, as a
  // CgroupFs is used by one thread).
  mutable std::map<std::string, std::optional<std::vector<std::string>>> own_roots_;
};

// OpenRegularFile (every cgroup file is opened that way) and ReadSmallFile
// are in proc/procfs.h.

}  // namespace goheap2pprof
