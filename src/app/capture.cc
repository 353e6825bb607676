#include "app/capture.h"

#include <charconv>
#include <chrono>
#include <thread>
#include <ctime>
#include <iomanip>
#include <optional>
#include <sstream>
#include <ostream>

#include "app/executable.h"
#include "app/target.h"
#include "base/error.h"
#include "gobin/go_binary.h"
#include "gobin/runtime_variables.h"
#include "heap/buckets.h"
#include "heap/snapshot.h"
#include "pprof/heap_profile_builder.h"
#include "pprof/output.h"
#include "proc/memory_reader.h"
#include "runtime/bucket_layout.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

namespace {

using Clock = std::chrono::steady_clock;


class PhaseTimer {
 public:
  PhaseTimer(bool verbose, std::ostream& log, CaptureReport& report)
      : verbose_(verbose), log_(log), report_(report) {}
  void Done(std::string_view phase) {
    auto now = Clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    report_.phase_ms.emplace_back(std::string(phase), ms);
    if (verbose_) {
      log_ << "goheap2pprof: phase " << phase << ": " << std::fixed << std::setprecision(2) << ms
           << " ms\n";
    }
    last_ = now;
  }

 private:
  bool verbose_;
  std::ostream& log_;
  CaptureReport& report_;
  Clock::time_point last_ = Clock::now();
};


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

}  // namespace

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

std::string FormatStats(const CaptureReport& r) {
  std::ostringstream out;
  out << "goheap2pprof stats:\n"
      << "  buckets          " << r.buckets << "\n"
      << "  samples          " << r.samples << "\n"
      << "  walks            " << r.walks << " (" << r.torn_walks
      << " discarded: profile cycle changed)\n"
      << "  read syscalls    " << r.read_syscalls << "\n"
      << "  bytes read       " << r.bytes_read << "\n";
  double total = 0;
  for (const auto& [phase, ms] : r.phase_ms) {
    out << "  time " << phase << std::string(phase.size() < 16 ? 16 - phase.size() : 1, ' ')
        << std::fixed << std::setprecision(2) << ms << " ms\n";
    total += ms;
  }
  out << "  time total            " << std::fixed << std::setprecision(2) << total << " ms\n";
  return out.str();
}

std::string DefaultOutputName(const std::string& program, pid_t pid) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  std::string safe;
  for (char c : program) safe += (c == '/' || c == ' ' || c == '\0') ? '_' : c;
  if (safe.empty()) safe = "go";
  return safe + "-" + std::to_string(pid) + "-" + stamp + ".heap.pb.gz";
}

CaptureReport RunCapture(const CaptureOptions& options, std::ostream& log) {
  CaptureReport report;
  RunCapture(options, log, report);
  return report;
}

void RunCapture(const CaptureOptions& options, std::ostream& log, CaptureReport& report) {
  PhaseTimer timer(options.verbose, log, report);
  auto verbose = [&](auto&&... parts) {
    if (options.verbose) {
      log << "goheap2pprof: ";
      (log << ... << parts);
      log << '\n';
    }
  };
  auto warn = [&](std::string text) {
    log << "goheap2pprof: warning: " << text << '\n';
    report.warnings.push_back(std::move(text));
  };
  const pid_t pid = options.pid;

  // 1. Identify the process and remember its start time: if the pid names
  //    another process at the end, the capture is refused.
  const ProcStat start_stat = IdentifyProcess(pid);
  report.output_path =
      options.output.empty() ? DefaultOutputName(start_stat.comm, pid) : options.output;
  // Fail on an unusable output before touching the target.
  CheckOutputWritable(report.output_path);

  // 2. Open the executable (/proc/<pid>/exe, an --exe file checked against
  //    it, or a qemu-user emulator's guest program) and learn its Go version.
  const std::vector<MapsEntry> maps = ReadProcMaps(pid);
  const TargetExecutable target = OpenExecutable(pid, maps, options.executable);
  for (const std::string& note : target.notes) verbose(note);
  for (const std::string& text : target.warnings) warn(text);
  const ElfFile& exe = target.elf;
  const GoBinary bin(exe);
  if (!bin.version()) {
    std::optional<uint64_t> has_runtime = bin.SymbolAddress("runtime.mbuckets");
    if (!has_runtime && !exe.FindSection(".gopclntab") && !exe.FindSection(".go.buildinfo")) {
      throw Error(ErrorKind::kNotGo, exe.name(),
                  " is not a Go program: no Go build info, pclntab or runtime symbols");
    }
    throw Error(ErrorKind::kUnsupported, exe.name(), " looks like Go but its Go version "
                "could not be determined");
  }
  report.go_version = FormatGoVersion(*bin.version());
  verbose("target ", exe.name(), ", comm ", start_stat.comm);
  verbose("Go version ", report.go_version, " (from ", bin.version_source(), ")");
  if (bin.version_inferred()) {
    warn(exe.name() + " has no Go build info; its version " + report.go_version +
         " was inferred from " + bin.version_source());
  }
  // The bucket layout to read with, proven from DWARF where there is some;
  // refused when it cannot be trusted. Its warnings also go into the output.
  const LayoutVerdict layout =
      CheckBucketLayout(exe, TraitsForVersion(*bin.version()), options.executable.assume_go_layout);
  const RuntimeTraits& traits = layout.traits;
  for (const std::string& note : layout.notes) verbose(note);
  for (const std::string& text : layout.warnings) warn(text);

  // 3. Map link-time addresses to runtime addresses (PIE load bias).
  const uint64_t bias = ComputeLoadBias(exe, maps, target.running);
  verbose("build mode ", exe.type() == 3 ? "PIE (ET_DYN)" : "fixed address (ET_EXEC)",
          ", load bias ", Hex(bias));

  // 4. Find the runtime's heap-profile variables.
  const RuntimeVariables vars = LocateRuntimeVariables(bin, traits.cycle_symbol);
  HeapAddresses addrs{vars.mbuckets.addr + bias, vars.mem_profile_rate.addr + bias,
                      vars.cycle.addr + bias};
  verbose("runtime.mbuckets at ", Hex(addrs.mbuckets), " (", vars.mbuckets.source,
          "), runtime.MemProfileRate at ", Hex(addrs.mem_profile_rate), " (",
          vars.mem_profile_rate.source, "), ", traits.cycle_symbol, " at ", Hex(addrs.cycle), " (",
          vars.cycle.source, ")");
  if (vars.disable_memory_profiling) {
    verbose("runtime.disableMemoryProfiling at ", Hex(vars.disable_memory_profiling->addr + bias),
            " (", vars.disable_memory_profiling->source, ")");
  }
  timer.Done("identify");

  // 5. Read the rate and the bucket list, repeating the walk if a GC
  //    published a new profile cycle meanwhile.
  ProcessMemoryReader process_mem(pid);
  PausingReader mem(process_mem, options.seams.pause_mid_walk_ms, log);
  // Buckets live in the runtime's persistentalloc chunks: reading whole
  // blocks of the readable mappings makes the walk cost one system call per
  // block instead of a few per bucket.
  SnapshotLimits snapshot_limits;
  for (const MapsEntry& e : maps) {
    if (!e.perms.empty() && e.perms[0] == 'r') snapshot_limits.cache_ranges.push_back({e.start, e.end});
  }
  const HeapSnapshot snap = ReadHeapSnapshot(mem, addrs, traits, snapshot_limits);
  report.buckets = snap.buckets.size();
  report.walks = snap.walks;
  report.torn_walks = static_cast<uint64_t>(snap.walks - (snap.consistent ? 1 : 0));
  report.read_syscalls = process_mem.stats().syscalls;
  report.bytes_read = process_mem.stats().bytes_read;
  const int64_t rate = snap.rate;
  report.cycle = snap.cycle;
  report.consistent = snap.consistent;
  if (!snap.consistent) {
    warn("the profile cycle changed during each of " + std::to_string(snap.walks) +
         " walks (the target collects garbage constantly); counters may mix two cycles");
  }
  verbose("MemProfileRate ", rate, ", cycle ", snap.cycle, ", ", snap.buckets.size(), " buckets, ",
          snap.walks, snap.walks == 1 ? " walk" : " walks");
  timer.Done("walk");

  // Is heap sampling on at all? The linker compiles it out of programs that
  // never read the profile (runtime.disableMemoryProfiling); the few buckets
  // such a program has come from runtime start-up, before the rate was zeroed.
  bool compiled_out = false;
  if (vars.disable_memory_profiling) {
    uint8_t flag = 0;
    compiled_out = mem.TryRead(vars.disable_memory_profiling->addr + bias,
                               std::span<uint8_t>(&flag, 1)) &&
                   flag != 0;
  }
  if (compiled_out) {
    throw Error(ErrorKind::kSamplingDisabled, "heap profiling is compiled out of process ", pid,
                ": the linker set runtime.disableMemoryProfiling because the program never uses "
                "runtime/pprof or runtime.MemProfile (", snap.buckets.size(),
                " bucket(s) from runtime start-up only)")
        .WithHint("link runtime/pprof into the program (e.g. import _ \"net/http/pprof\" or call "
                  "pprof.WriteHeapProfile somewhere), or set runtime.MemProfileRate at startup, "
                  "and restart it");
  }
  if (snap.buckets.empty() && rate == 0) {
    throw Error(ErrorKind::kSamplingDisabled, "heap profiling is off in process ", pid,
                ": the program set runtime.MemProfileRate = 0 (or ran with "
                "GODEBUG=memprofilerate=0)")
        .WithHint("remove the MemProfileRate = 0 assignment or the GODEBUG setting and restart "
                  "the program");
  }
  if (snap.buckets.empty()) {
    warn("no heap allocation has been sampled yet in process " + std::to_string(pid) +
         "; writing an empty profile, as the runtime would serve");
  } else if (rate == 0) {
    warn("heap sampling is off now (runtime.MemProfileRate = 0); the profile holds only "
         "allocations sampled before it was turned off, unscaled");
  }
  if (options.seams.pause_after_walk_ms > 0) {
    log << "goheap2pprof: test seam: pausing " << options.seams.pause_after_walk_ms
        << " ms after the walk" << std::endl;
    std::this_thread::sleep_for(std::chrono::milliseconds(options.seams.pause_after_walk_ms));
  }

  // 6. Emulate runtime.MemProfile and build the profile as runtime/pprof does.
  //    --counters=published keeps only what the runtime has published (active).
  const bool published = options.output_format.counters == CounterSource::kPublished;
  const std::vector<MemProfileRecord> records =
      published ? PublishedCounts(snap.buckets) : EmulateMemProfile(snap.buckets, snap.cycle);
  const Pclntab pclntab = bin.OpenPclntab(bias);
  Symbolizer symbolizer(pclntab, traits);
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  HeapProfileBuilder builder(symbolizer, traits, TargetProfileMappings(pid, maps, target), rate,
                             now_ns);
  for (const MemProfileRecord& r : records) builder.AddRecord(r);
  if (snap.walks > 1) {
    builder.AddComment("goheap2pprof: walked the bucket list " + std::to_string(snap.walks) +
                       " times because a GC published a profile cycle during the walk");
  }
  if (published) builder.AddComment(PublishedCountersComment());
  for (const std::string& text : layout.warnings) {
    builder.AddComment("goheap2pprof: warning: " + text);
  }
  const pb::Profile& profile = builder.Finish();
  report.samples = records.size();
  verbose(symbolizer.distinct_pcs(), " distinct PCs symbolized, ", symbolizer.failed_lookups(),
          " failed");
  timer.Done("symbolize+build");

  // 7. The pid must still be the process we started with.
  ProcStat expected = start_stat;
  if (options.seams.pid_reuse) ++expected.start_time;
  CheckSameProcess(pid, expected);

  // 8. Render the requested format (pprof, or a view of the same profile)
  //    and write atomically.
  if (options.output_format.format == OutputFormat::kPprof) {
    WriteProfile(report.output_path, profile);
  } else {
    WriteOutput(report.output_path, RenderOutput(profile, options, report));
  }
  timer.Done("write");
  if (options.stats) log << FormatStats(report);
}

}  // namespace goheap2pprof
