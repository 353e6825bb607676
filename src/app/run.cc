#include "app/run.h"

#include <charconv>
#include <chrono>
#include <ctime>
#include <iomanip>
#include <memory>
#include <ostream>
#include <thread>
#include <utility>

#include "app/core_source.h"
#include "base/error.h"
#include "base/keep_until_exit.h"
#include "pprof/output.h"
#include "proc/procfs.h"

namespace goheap2pprof {

namespace {

using Clock = std::chrono::steady_clock;

// Test seam: forwards reads, sleeping once after the first few reads of the
// bucket list so a test can kill the target in the middle of the walk.
class PausingReader : public MemoryReader {
 public:
  PausingReader(MemoryReader& inner, int pause_ms, std::ostream& log)
      : inner_(inner), pause_ms_(pause_ms), log_(log) {}
  bool TryRead(uint64_t addr, std::span<uint8_t> dst) override {
    if (pause_ms_ > 0 && ++reads_ == kPauseAfterReads) {
      log_ << "goheap2pprof: test seam: pausing " << pause_ms_ << " ms mid-walk" << std::endl;
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
    }
    return inner_.TryRead(addr, dst);
  }
  void ReadMany(std::span<ReadRequest> requests) override { inner_.ReadMany(requests); }
  ReadStats stats() const override { return inner_.stats(); }

 private:
  // Rate, cycle and head come first; pause once the walk has begun.
  static constexpr int kPauseAfterReads = 5;
  MemoryReader& inner_;
  int pause_ms_;
  std::ostream& log_;
  int reads_ = 0;
};

// The test seams, as a source wrapped around the live one: the engine sees
// only a source whose memory pauses and whose final identity check waits or
// sees another process.
class SeamSource : public CaptureSource {
 public:
  SeamSource(std::unique_ptr<CaptureSource> inner, const TestSeams& seams, std::ostream& log)
      : inner_(std::move(inner)),
        seams_(seams),
        log_(log),
        memory_(inner_->memory(), seams.pause_mid_walk_ms, log) {}

  const ProcessIdentity& identity() const override { return inner_->identity(); }
  const std::vector<MapsEntry>& mappings() const override { return inner_->mappings(); }
  const TargetExecutable& executable() const override { return inner_->executable(); }
  std::vector<ProfileMapping> ProfileMappings() const override { return inner_->ProfileMappings(); }
  MemoryReader& memory() override { return memory_; }
  bool is_snapshot() const override { return inner_->is_snapshot(); }

  void CheckSameProcess() const override {
    if (seams_.pause_after_walk_ms > 0) {
      log_ << "goheap2pprof: test seam: pausing " << seams_.pause_after_walk_ms
           << " ms after the walk" << std::endl;
      std::this_thread::sleep_for(std::chrono::milliseconds(seams_.pause_after_walk_ms));
    }
    if (seams_.pid_reuse) {
      // What the check sees when the pid was reused: another start time.
      ProcStat expected;
      expected.start_time = inner_->identity().start_time + 1;
      goheap2pprof::CheckSameProcess(inner_->identity().pid, expected);
    }
    inner_->CheckSameProcess();
  }

 private:
  std::unique_ptr<CaptureSource> inner_;
  TestSeams seams_;
  std::ostream& log_;
  PausingReader memory_;
};

bool AnySeam(const TestSeams& s) {
  return s.pause_mid_walk_ms > 0 || s.pause_after_walk_ms > 0 || s.pid_reuse;
}

}  // namespace

std::unique_ptr<CaptureSource> WithTestSeams(std::unique_ptr<CaptureSource> source,
                                             const TestSeams& seams, std::ostream& log) {
  if (!AnySeam(seams)) return source;
  return std::make_unique<SeamSource>(std::move(source), seams, log);
}

#if GOHEAP2PPROF_TEST_SEAMS
TestSeams ParseTestSeams(std::string_view spec) {
  TestSeams seams;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    size_t eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    int value = 0;
    if (eq != std::string_view::npos) {
      std::string_view v = item.substr(eq + 1);
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (ec != std::errc() || ptr != v.data() + v.size() || value < 0) {
        throw Error(ErrorKind::kUsage, "GOHEAP2PPROF_TEST_SEAM: bad value in \"", item, "\"");
      }
    }
    if (key == "pause-mid-walk") {
      seams.pause_mid_walk_ms = value;
    } else if (key == "pause-after-walk") {
      seams.pause_after_walk_ms = value;
    } else if (key == "pid-reuse") {
      seams.pid_reuse = true;
    } else {
      throw Error(ErrorKind::kUsage, "GOHEAP2PPROF_TEST_SEAM: unknown seam \"", item, "\"");
    }
  }
  return seams;
}
#endif

std::string DefaultOutputName(const std::string& program, pid_t pid, std::string_view suffix) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  std::string safe;
  for (char c : program) safe += (c == '/' || c == ' ' || c == '\0') ? '_' : c;
  if (safe.empty()) safe = "go";
  return safe + "-" + std::to_string(pid) + "-" + stamp + std::string(suffix);
}

void PrintReport(const CaptureReport& report, bool verbose, std::ostream& log) {
  if (verbose) {
    for (const std::string& note : report.notes) log << "goheap2pprof: " << note << '\n';
    for (const auto& [phase, ms] : report.phase_ms) {
      log << "goheap2pprof: phase " << phase << ": " << std::fixed << std::setprecision(2) << ms
          << " ms\n";
    }
  }
  for (const std::string& text : report.warnings) {
    log << "goheap2pprof: warning: " << text << '\n';
  }
}

namespace {

// The target opened as a source, and the output path, checked writable
// before the target is read.
struct OpenedRun {
  std::unique_ptr<CaptureSource> source;
  std::string path;
};

OpenedRun OpenRun(const RunOptions& options, CaptureReport& report) {
  const std::string_view suffix =
      options.output_format.format == OutputFormat::kFlamegraph ? ".heap.html" : ".heap.pb.gz";
  OpenedRun run;
  if (!options.core.empty()) {
    // A core is read whole before the output is checked: its identity (for
    // the default name) is in its notes, and reading it changes nothing.
    std::unique_ptr<CoreSource> core = OpenCoreSource(options.core, options.executable);
    report.notes.insert(report.notes.end(), core->description().begin(), core->description().end());
    const ProcessIdentity& id = core->identity();
    run.path = options.output.empty()
                   ? DefaultOutputName(id.comm.empty() ? "core" : id.comm, id.pid, suffix)
                   : options.output;
    CheckOutputWritable(run.path);
    run.source = std::move(core);
  } else {
    // Who the pid is, first: a bad pid is reported before a bad output path.
    const ProcessIdentity id = IdentifyLiveProcess(options.pid);
    run.path = options.output.empty() ? DefaultOutputName(id.comm, id.pid, suffix) : options.output;
    // Fail on an unusable output before touching the target.
    CheckOutputWritable(run.path);
    run.source = OpenProcessSource(id, options.executable);
  }
  return run;
}

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

std::string RunCapture(const RunOptions& options, std::ostream& log, CaptureReport& report) {
  OpenedRun run = OpenRun(options, report);
  run.source = WithTestSeams(std::move(run.source), options.seams, log);
  CaptureSource& source = *run.source;
  const Clock::time_point analysis_start = Clock::now();
  const std::shared_ptr<const ExecutableAnalysis> analysis = ExecutableAnalysis::Create(
      source.executable().elf, options.executable.assume_go_layout, LayoutCheck::kInBackground);
  const double analysis_ms = MsSince(analysis_start);
  FormattedCapture as(options.output_format);
  CaptureOptions capture_options;
  as.Prepare(source, *analysis, capture_options, report);
  std::optional<CaptureResult> result;
  Clock::time_point write_start;
  const bool pprof = options.output_format.format == OutputFormat::kPprof;
  const bool streamed = pprof && WritesAtomically(run.path);
  if (streamed) {
    // The samples are gzipped on the other threads while the rest are built;
    // a failed capture discards the temporary file.
    WriteGzippedProfile(run.path, [&](google::protobuf::io::ZeroCopyOutputStream* out) {
      capture_options.sample_stream = out;
      capture_options.keep_streamed_samples = false;  // only the remainder is written below
      result.emplace(Capture(source, *analysis, capture_options, report));
      write_start = Clock::now();
      return result->profile.SerializeRemainderTo(out);
    });
  } else {
    result.emplace(Capture(source, *analysis, capture_options, report));
    write_start = Clock::now();
  }
  // The analysis is the first part of identifying the target.
  if (!report.phase_ms.empty()) report.phase_ms.front().second += analysis_ms;
  if (pprof) {
    if (!streamed) WriteProfile(run.path, result->profile);
  } else {
    WriteOutput(run.path, as.Render(result->profile.get(),
                                    {.pid = source.identity().pid,
                                     .report = &report,
                                     .runtime_prefixes = analysis->traits().hidden_prefixes}));
  }
  report.phase_ms.emplace_back("write", MsSince(write_start));
  // The command ends here: its exit reclaims the analysis's caches, the
  // profile's tables and the source's buffers at once, faster than freeing
  // them one by one (the tables and buffers took 0.45 ms of a 100k-bucket
  // capture: bench/README.md).
  KeepUntilExit(analysis);
  KeepUntilExit(std::make_shared<std::optional<CaptureResult>>(std::move(result)));
  KeepUntilExit(std::shared_ptr<CaptureSource>(std::move(run.source)));
  return run.path;
}

}  // namespace goheap2pprof
