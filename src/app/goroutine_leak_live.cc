#include "app/goroutine_leak_live.h"

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "app/executable_analysis.h"
#include "app/goroutine_capture.h"
#include "app/process_source.h"
#include "base/error.h"
#include "pprof/output.h"

namespace goheap2pprof {

namespace {

struct LeakRun {
  LiveTarget target;
  std::vector<GoroutineTally> tallies;
};

void TakeGoroutineSnapshot(LeakRun& run, const GrowthLiveOptions& o, int index, std::ostream& log) {
  const ExecutableAnalysis& analysis = *run.target.analysis;
  const GoroutineCapture c = CaptureGoroutines(*run.target.source, analysis, {},
                                               {.dump = true, .snapshot_realtime = std::nullopt});
  const GoroutineDumpInput in = GoroutineDumpInputOf(analysis, c);
  run.tallies.push_back(TallyGoroutines(in, c.snapshot, c.time_nanos));
  if (!o.keep_dir.empty()) {
    WriteOutput(o.keep_dir + "/goroutine-" + std::to_string(index) + ".txt",
                GoroutineDump(analysis, c));
  }
  if (o.verbose) {
    log << "goheap2pprof growth: snapshot " << index << ": "
        << DescribeGoroutineRead(c.snapshot.stats, c.snapshot.goroutines.size()) << "\n";
  }
}

bool MarksLeaks(const GoVersion& v) { return v.major > 1 || (v.major == 1 && v.minor >= 26); }

}  // namespace

GoroutineLeakReport RunGoroutineLeakLive(const GrowthLiveOptions& o, std::ostream& log) {
  LeakRun run{.target = OpenLiveTarget(o, "goroutine-1.txt"), .tallies = {}};
  const ExecutableAnalysis& analysis = *run.target.analysis;
  RunSnapshotWindow(
      o, [&](int index) { TakeGoroutineSnapshot(run, o, index, log); }, log);
  if (run.tallies.size() < 2) {
    throw Error(ErrorKind::kNoSuchProcess, "the process ended after ", run.tallies.size(),
                " goroutine snapshots; a report needs two");
  }
  GoroutineLeakInfo info{.source = "pid " + std::to_string(o.pid),
                         .pid = o.pid,
                         .process_start = ProcessStartUtc(run.target.id.start_time),
                         .go_version = analysis.go_version(),
                         .runtime_marks_leaks = MarksLeaks(analysis.traits().version)};
  return AnalyzeGoroutineLeaks(std::move(run.tallies), std::move(info));
}

}  // namespace goheap2pprof
