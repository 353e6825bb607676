#include "agent/watch_discovery.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "base/error.h"
#include "elf/elf_file.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

// Bound on the directory walk: pid_max is at most 4M on Linux.
constexpr size_t kMaxProcesses = 1 << 22;

}  // namespace

bool GoProcessFinder::IsGo(pid_t pid) const {
  Expected<ElfFile> exe = ElfFile::TryOpen("/proc/" + std::to_string(pid) + "/exe");
  // Kernel threads, processes we may not read, non-ELF or foreign
  // architectures: not ours to watch.
  if (!exe) return false;
  if (exe->FindSection(".go.buildinfo") || exe->FindSection(".gopclntab")) return true;
  // Boundary of one process's probe in the long-running scan: a symbol
  // table that does not decode, or a file the process cuts short while we
  // read it, makes it "not ours", never the end of watch.
  try {
    return exe->FindSymbol("runtime.mbuckets").has_value();
  } catch (const Error&) {
    return false;
  }
}

std::vector<FoundGoProcess> GoProcessFinder::Scan() {
  std::vector<FoundGoProcess> out;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc"), ::closedir);
  if (!dir) return out;
  const pid_t self = ::getpid();
  std::map<Key, bool> alive;
  size_t n = 0;
  while (dirent* e = ::readdir(dir.get())) {
    if (++n > kMaxProcesses) break;
    std::optional<pid_t> pid = ParsePid(e->d_name);
    if (!pid || *pid == self) continue;
    std::optional<std::string> stat_text = ReadProcFileIfPresent(*pid, "stat");
    if (!stat_text) continue;  // gone meanwhile
    const ProcStat stat = ParseProcStat(*stat_text);
    if (stat.state == 'Z' || stat.state == 'X') continue;
    struct stat exe_stat;
    if (::stat(("/proc/" + std::to_string(*pid) + "/exe").c_str(), &exe_stat) != 0) continue;
    const Key key{*pid, stat.start_time, exe_stat.st_ino};
    auto it = seen_.find(key);
    const bool go = it != seen_.end() ? it->second : IsGo(*pid);
    alive[key] = go;
    if (go) out.push_back({*pid, stat.start_time, stat.comm});
  }
  seen_ = std::move(alive);
  std::sort(out.begin(), out.end(),
            [](const FoundGoProcess& a, const FoundGoProcess& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace goheap2pprof
