// The goroutine leak report over N goroutine snapshots of one program
// (goheap2pprof growth --goroutines): its parked goroutines grouped by
// creation site and wait reason, each group's count over the snapshots
// analysed as growth.h analyses a heap site (slope, noise bar, class) and
// ranked by the growth it can stand behind, with how long the oldest of each
// group has waited (the runtime's g.waitsince) and the goroutines that a
// leak-detecting GC (Go 1.27, or 1.26 with GOEXPERIMENT=goroutineleakprofile)
// has marked leaked. Text for a terminal, JSON for scripts; docs/goroutines.md
// explains them.
//
//   std::vector<GoroutineTally> tallies;
//   tallies.push_back(TallyGoroutines(in, snapshot, now_nanos));  // per snapshot
//   GoroutineLeakReport r = AnalyzeGoroutineLeaks(std::move(tallies), info);
//   std::cout << GoroutineLeakText(r, {.top = 10});
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "goroutine/goroutine_reader.h"
#include "pprof/goroutine_dump.h"
#include "pprof/growth/growth.h"
#include "pprof/growth/report.h"

namespace goheap2pprof {

// A group: the go statement that created its goroutines and what they wait on.
struct GoroutineGroupKey {
  std::string created_by;   // "main.serve at main.go:40" (GoroutineCreatorText)
  std::string wait_reason;  // "chan receive" (GoroutineWaitReason)
  auto operator<=>(const GoroutineGroupKey&) const = default;
};

// A group at one snapshot.
struct GoroutineGroupTally {
  int64_t parked = 0;
  int64_t leaked = 0;  // of those, marked leaked by the runtime's GC
  // Now minus the smallest waitsince of the group; nullopt when no GC has
  // stamped one yet (the runtime sets it at the first GC that sees the
  // goroutine parked) or the target's clock is unknown.
  std::optional<int64_t> oldest_wait_nanos;
};

// A goroutine a leak-detecting GC marked leaked (_Gleaked).
struct LeakedGoroutine {
  uint64_t goid = 0;
  GoroutineGroupKey group;
  std::string parked_at;  // its innermost shown frame, "main.park main.go:30"
};

// One snapshot reduced to its groups of parked goroutines (waiting or
// leaked; runnable, running and syscall goroutines are counted in
// `goroutines` only).
struct GoroutineTally {
  int64_t time_nanos = 0;
  int64_t goroutines = 0;
  std::map<GoroutineGroupKey, GoroutineGroupTally> groups;
  std::vector<LeakedGoroutine> leaked;  // in allgs order
  GoroutineReadStats stats;
};

// `in` must have the wait reasons and the target's clock (a dump capture's).
GoroutineTally TallyGoroutines(const GoroutineDumpInput& in, const GoroutineSnapshot& snapshot,
                               int64_t time_nanos);

struct GoroutineLeakInfo {
  std::string source;  // "pid 1234"
  std::optional<int64_t> pid;
  std::string process_start;  // UTC, ISO 8601; empty when unknown
  std::string go_version;
  // Whether this runtime can mark goroutines leaked at all (Go 1.26+).
  bool runtime_marks_leaks = false;
};

// A group over the window.
struct GoroutineGroupGrowth {
  GoroutineGroupKey key;
  std::vector<int64_t> parked;  // at each snapshot (0 where absent)
  // growth.h's analysis of the counts: objects and bytes are both the
  // count, with no sampling noise (every goroutine is read).
  SiteGrowth growth;
  int64_t leaked = 0;                        // at the last snapshot
  std::optional<int64_t> oldest_wait_nanos;  // at the last snapshot it was in
};

struct GoroutineLeakReport {
  GoroutineLeakInfo info;
  std::vector<int64_t> times;       // of the snapshots, ns since the epoch
  std::vector<int64_t> goroutines;  // read at each snapshot
  // Best first: RanksBefore, then the larger last count, then by key.
  std::vector<GoroutineGroupGrowth> groups;
  std::vector<LeakedGoroutine> leaked;  // at the last snapshot
  uint64_t retried = 0, dropped = 0;    // over all snapshots
};

// Needs at least two tallies in time order (Error(kInternal) otherwise).
GoroutineLeakReport AnalyzeGoroutineLeaks(std::vector<GoroutineTally> tallies,
                                          GoroutineLeakInfo info);

// The groups of class STEADY GROWTH whose slope's lower bound exceeds
// per_hour goroutines an hour, in rank order: --fail-above's test.
std::vector<size_t> GroupsGrowingFaster(const GoroutineLeakReport& report, double per_hour);

// options.top: groups and leaked goroutines shown (0 all); fail_above in
// goroutines an hour.
std::string GoroutineLeakText(const GoroutineLeakReport& report,
                              const GrowthRenderOptions& options);
std::string GoroutineLeakJson(const GoroutineLeakReport& report,
                              const GrowthRenderOptions& options);

}  // namespace goheap2pprof
