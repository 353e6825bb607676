// What `goheap2pprof mem` shows: the Go runtime's memory statistics of a
// target (the /memory/classes/ tree, live heap, goal, GOMEMLIMIT, MemStats)
// beside what the kernel says of the process (RSS) and of its memory
// cgroup, the goroutine stacks by creation site, and the part of the resident anonymous memory that
// the Go runtime does not manage (cgo, syscall.Mmap, C libraries). Rendering only: the figures are
// gathered by the caller, so the text and JSON are unit tested on hand-made values.
//
//   MemReport r{.stats = ReadGoRuntimeStats(source, analysis), .process = ...};
//   std::cout << RenderMemText(r);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "memstats/go_runtime_stats.h"
#include "proc/procfs.h"

namespace goheap2pprof {

struct CgroupFigures {
  std::string version;  // "v1" or "v2"
  std::string dir;      // the directory whose usage is shown (the one with the limit)
  std::optional<uint64_t> usage;
  std::optional<uint64_t> limit;  // nullopt: no finite limit up to the top we see
};

// One creation site's goroutine stacks.
struct StackSite {
  std::string created_by;  // "main.main at main.go:12", or "(no creator shown)"
  uint64_t goroutines = 0;
  uint64_t bytes = 0;  // the sum of their g.stack.hi - g.stack.lo
};

// The stacks of the goroutines the goroutine profile lists (system
// goroutines and those on a CPU left out, as it leaves them out), per
// creation site. The runtime's StackInuse also holds the stacks of system
// goroutines, of each M's g0 and signal goroutine, of dead goroutines kept
// for reuse and of its free-stack caches, so it is at least `bytes`.
struct GoroutineStacks {
  std::vector<StackSite> sites;  // most bytes first
  uint64_t goroutines = 0;
  uint64_t bytes = 0;
  uint64_t system = 0;   // left out: system goroutines
  uint64_t running = 0;  // left out: on a CPU
  uint64_t dropped = 0;  // left out: still moving after the read's retries
};

struct MemReport {
  pid_t pid = 0;
  std::string comm;
  std::string core;  // the core file read instead of a live process, if any
  GoRuntimeStats stats;
  // Of a live process only: a core file holds neither.
  std::optional<ProcStatusMemory> process;
  std::optional<CgroupFigures> cgroup;
  // The goroutine stacks, or why they could not be read (stacks_error).
  std::optional<GoroutineStacks> stacks;
  std::string stacks_error;
};

// Resident anonymous memory the Go runtime does not account for:
// RssAnon − (Sys − HeapReleased), clamped at 0. Sys − HeapReleased is what
// the runtime has mapped and not given back, an upper bound of its resident
// memory (mapped pages never touched are not resident), so this is a lower
// bound of the memory outside the runtime. nullopt without RssAnon.
std::optional<uint64_t> NotManagedByGo(const MemReport& r);

// du -h's size: 1024-based, rounded up, one decimal below 10 ("4.0K",
// "1.5M", "58M"), plain bytes below 1 KiB.
std::string HumanSize(uint64_t bytes);

// The breakdown for people (`mem`'s default).
std::string RenderMemText(const MemReport& r);

// `mem --format json`: runtime/metrics names and values, the MemStats fields
// under their Go names, and the process and cgroup figures.
std::string RenderMemJson(const MemReport& r);

// runtime.MemStats as JSON, each field under its Go name (BySize as a list
// of {Size, Mallocs, Frees}), as encoding/json writes a MemStats.
nlohmann::ordered_json MemStatsJson(const MemStats& m);

}  // namespace goheap2pprof
