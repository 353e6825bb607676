// Finding the Go processes `watch --all` may capture: every process under
// /proc whose executable we can open and that carries Go's build info or
// pclntab. Each pid is examined once per start time, so a scan every poll
// costs a directory listing plus the new processes.
//
// (serve has its own discovery; the two are to be unified.)
//
//   GoProcessFinder finder;
//   for (const FoundGoProcess& p : finder.Scan()) ...   // all Go processes now
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace goheap2pprof {

struct FoundGoProcess {
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string comm;
};

class GoProcessFinder {
 public:
  // The Go processes alive now, ascending pid, excluding ourselves.
  std::vector<FoundGoProcess> Scan();

 private:
  // Whether the executable of pid is a Go program we can read.
  bool IsGo(pid_t pid) const;

  // (pid, start time, executable inode) -> is Go. The inode is in the key
  // because exec keeps the pid and start time (sh -c 'exec ./server').
  // Entries of gone processes are dropped at each scan.
  using Key = std::tuple<pid_t, uint64_t, uint64_t>;
  std::map<Key, bool> seen_;
};

}  // namespace goheap2pprof
