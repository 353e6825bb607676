// `goheap2pprof growth <pid>`: snapshots of a live Go process taken every
// --every for --for after a --warm-up, each one only if a GC cycle ended
// since the last kept one (the heap profile changes only then), with the
// process's RSS, its memory cgroup's usage and the runtime's
// /gc/heap/live:bytes (app/runtime_stats.h) at the first and last kept
// snapshot, analysed into a growth report (pprof/growth/report.h).
//
//   GrowthLiveOptions o{.pid = 1234, .every = 30s, .duration = 10min};
//   GrowthReport r = RunLiveGrowth(o, std::cerr);
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

#include "app/executable_analysis.h"
#include "app/process_source.h"
#include "pprof/growth/report.h"

namespace goheap2pprof {

struct GrowthLiveOptions {
  pid_t pid = 0;
  std::chrono::milliseconds every{30'000};
  std::chrono::milliseconds duration{600'000};  // --for
  std::chrono::milliseconds warm_up{0};
  ExecutableOptions executable;  // --exe, --force
  // Also write each kept snapshot to this directory (heap-<n>.pb.gz), made
  // if missing; "" keeps none.
  std::string keep_dir;
  std::string fs_root;  // prefix of the cgroup paths (tests); "" is the real filesystem
  bool verbose = false;
};

// Takes the snapshots and analyses them. A process that exits during the
// window ends it early: the report covers the snapshots taken (at least
// two, or Error(kNoSuchProcess)). Throws Error as a capture does.
GrowthReport RunLiveGrowth(const GrowthLiveOptions& options, std::ostream& log);

// The live process of a window, opened once for all its snapshots.
struct LiveTarget {
  ProcessIdentity id;
  std::unique_ptr<CaptureSource> source;
  std::shared_ptr<const ExecutableAnalysis> analysis;
};

// Checks --every and --for, identifies the process, makes --keep's
// directory if missing and checks that its first file (keep_file, under
// it) can be written, before the window rather than at its first snapshot;
// then opens the process.
LiveTarget OpenLiveTarget(const GrowthLiveOptions& options, std::string_view keep_file);

// The number of steps of the window (snapshots - 1); throws kUsage for an
// --every or --for that make no window or too many snapshots.
int64_t SnapshotSteps(const GrowthLiveOptions& options);

// The window's loop, shared by the heap and goroutine growth: waits
// --warm-up, then calls take(1), take(2), ... every --every for --for. A
// take that finds the process gone (Error(kNoSuchProcess)) ends the window
// early; any other error ends the run.
void RunSnapshotWindow(const GrowthLiveOptions& options, const std::function<void(int)>& take,
                       std::ostream& log);

// The process's start time (ticks since boot, /proc/<pid>/stat's field 22)
// in UTC, ISO 8601; "" when the boot time is unknown.
std::string ProcessStartUtc(uint64_t start_ticks);

}  // namespace goheap2pprof
