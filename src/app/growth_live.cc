#include "app/growth_live.h"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <thread>

#include "app/capture.h"
#include "app/runtime_stats.h"
#include "base/error.h"
#include "pprof/output.h"
#include "proc/cgroup.h"
#include "proc/procfs.h"

namespace goheap2pprof {

namespace {

using Clock = std::chrono::steady_clock;

// More snapshots than this is a mistake in --every or --for.
constexpr int64_t kMaxSnapshots = 100000;

// VmRSS of /proc/<pid>/status in bytes.
std::optional<int64_t> VmRssBytes(pid_t pid) {
  std::optional<ProcStatusMemory> m = ReadProcStatusMemory(pid);
  if (!m || !m->vm_rss) return std::nullopt;
  return static_cast<int64_t>(*m->vm_rss);
}

// The memory outside the profile at one moment, and the runtime's own count
// of live heap bytes (as of the same GC cycle as the profile).
struct Outside {
  std::optional<int64_t> rss, cgroup, limit, heap_live;
};

class OutsideReader {
 public:
  OutsideReader(pid_t pid, const std::string& fs_root)
      : pid_(pid), fs_(fs_root, TargetRoot::kAllow), cg_(fs_.FindMemoryCgroup(pid)) {}
  Outside Read() const {
    Outside o;
    o.rss = VmRssBytes(pid_);
    if (cg_) {
      const MemoryReading m = fs_.Read(*cg_);
      if (m.usage) o.cgroup = static_cast<int64_t>(*m.usage);
      if (m.limit) o.limit = static_cast<int64_t>(*m.limit);
    }
    return o;
  }

 private:
  pid_t pid_;
  CgroupFs fs_;
  std::optional<MemoryCgroup> cg_;
};

void SetOutside(const Outside& first, const Outside& last, GrowthInfo& info) {
  if (first.rss && last.rss) info.rss = GrowthPair{*first.rss, *last.rss};
  if (first.cgroup && last.cgroup) info.cgroup = GrowthPair{*first.cgroup, *last.cgroup};
  if (first.heap_live && last.heap_live) {
    info.heap_live = GrowthPair{*first.heap_live, *last.heap_live};
  }
  info.cgroup_limit = last.limit;
}

// The loop's state: the capture engine's, the kept snapshots, and what they
// saw outside the profile.
struct LiveRun {
  std::unique_ptr<CaptureSource> source;
  std::shared_ptr<const ExecutableAnalysis> analysis;
  ProcessCaptureState state;
  GrowthCollector collector;
  std::optional<uint32_t> last_cycle;
  int skipped = 0;
  std::optional<Outside> first, last;
  std::vector<GrowthReading> cgroup_usage;  // at each kept snapshot
};

// /gc/heap/live:bytes from the runtime's memory statistics; nullopt when
// this Go version's cannot be read (the report then leaves it out).
std::optional<int64_t> HeapLive(LiveRun& run) {
  const OptionalRuntimeStats read = ReadOptionalGoRuntimeStats(*run.source, *run.analysis);
  if (!read.stats) return std::nullopt;
  if (std::optional<uint64_t> live = read.stats->Uint("/gc/heap/live:bytes")) {
    return static_cast<int64_t>(*live);
  }
  return std::nullopt;
}

// One capture; kept unless its cycle is the last kept one's.
void TakeSnapshot(LiveRun& run, const GrowthLiveOptions& o, const OutsideReader& outside, int index,
                  std::ostream& log) {
  CaptureReport report;
  CaptureResult r = Capture(*run.source, run.analysis, {}, report, run.state);
  if (run.last_cycle && report.cycle == run.last_cycle) {
    ++run.skipped;
    if (o.verbose) log << "goheap2pprof growth: capture " << index << ": same GC cycle, skipped\n";
    return;
  }
  run.last_cycle = report.cycle;
  const std::string name = "capture " + std::to_string(index);
  if (!o.keep_dir.empty()) {
    WriteProfile(o.keep_dir + "/heap-" + std::to_string(run.collector.snapshots() + 1) + ".pb.gz",
                 r.profile);
  }
  run.collector.Add(r.profile.get(), name, report.cycle);
  Outside now = outside.Read();
  now.heap_live = HeapLive(run);
  if (now.cgroup) {
    const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    run.cgroup_usage.push_back({.time_nanos = nanos.count(), .bytes = *now.cgroup});
  }
  (run.first ? run.last : run.first) = now;
  if (o.verbose) {
    log << "goheap2pprof growth: " << name << " kept (cycle "
        << (report.cycle ? std::to_string(*report.cycle) : "?") << ")\n";
  }
}

}  // namespace

std::string ProcessStartUtc(uint64_t start_ticks) {
  const uint64_t boot = BootTimeSeconds();
  const long hz = sysconf(_SC_CLK_TCK);
  if (boot == 0 || hz <= 0 || start_ticks == 0) return "";
  const auto secs = static_cast<time_t>(boot + start_ticks / static_cast<uint64_t>(hz));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int64_t SnapshotSteps(const GrowthLiveOptions& o) {
  if (o.every.count() <= 0) throw Error(ErrorKind::kUsage, "--every must be positive");
  const int64_t steps = o.duration.count() / o.every.count();
  if (steps < 1) throw Error(ErrorKind::kUsage, "--for must be at least one --every");
  if (steps >= kMaxSnapshots) {
    throw Error(ErrorKind::kUsage, "--for / --every gives more than ", kMaxSnapshots, " snapshots");
  }
  return steps;
}

void RunSnapshotWindow(const GrowthLiveOptions& o, const std::function<void(int)>& take,
                       std::ostream& log) {
  const int64_t steps = SnapshotSteps(o);
  std::this_thread::sleep_for(o.warm_up);
  const Clock::time_point start = Clock::now();
  for (int64_t k = 0; k <= steps; ++k) {
    std::this_thread::sleep_until(start + k * o.every);
    try {
      take(static_cast<int>(k + 1));
    } catch (const Error& e) {
      // Boundary: one snapshot. The process ending mid-capture ends the
      // window (what was kept is reported); any other error is the run's.
      if (e.kind() != ErrorKind::kNoSuchProcess) throw;
      log << "goheap2pprof growth: the process ended: " << e.what() << "\n";
      break;
    }
  }
}

LiveTarget OpenLiveTarget(const GrowthLiveOptions& o, std::string_view keep_file) {
  SnapshotSteps(o);
  LiveTarget t;
  t.id = IdentifyLiveProcess(o.pid);
  if (!o.keep_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.keep_dir, ec);
    if (ec) throw Error(ErrorKind::kIo, o.keep_dir, ": cannot create: ", ec.message());
    CheckOutputWritable(o.keep_dir + "/" + std::string(keep_file));
  }
  t.source = OpenProcessSource(t.id, o.executable);
  t.analysis =
      ExecutableAnalysis::Create(t.source->executable().elf, o.executable.assume_go_layout);
  return t;
}

GrowthReport RunLiveGrowth(const GrowthLiveOptions& o, std::ostream& log) {
  LiveTarget target = OpenLiveTarget(o, "heap-1.pb.gz");
  const ProcessIdentity& id = target.id;
  LiveRun run;
  run.source = std::move(target.source);
  run.analysis = std::move(target.analysis);
  const OutsideReader outside(o.pid, o.fs_root);
  RunSnapshotWindow(
      o, [&](int index) { TakeSnapshot(run, o, outside, index, log); }, log);
  if (run.collector.snapshots() < 2) {
    throw Error(ErrorKind::kUsage, "only ", run.collector.snapshots(),
                " snapshot of a distinct GC cycle in the window (", run.skipped,
                " captures skipped: no GC cycle had ended since the previous one); a longer "
                "--for or --every gives the program time to collect");
  }
  GrowthInfo info;
  info.source = "pid " + std::to_string(o.pid);
  info.pid = o.pid;
  info.process_start = ProcessStartUtc(id.start_time);
  info.go_version = run.analysis->go_version();
  info.build_id = run.source->executable().gnu_build_id;
  info.skipped_same_cycle = run.skipped;
  if (run.first && run.last) SetOutside(*run.first, *run.last, info);
  info.cgroup_usage = std::move(run.cgroup_usage);
  return AnalyzeGrowth(std::move(run.collector).Finish(), std::move(info));
}

}  // namespace goheap2pprof
