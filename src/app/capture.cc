#include "app/capture.h"

#include <chrono>
#include <ctime>
#include <iomanip>
#include <optional>
#include <ostream>

#include "app/target.h"
#include "base/error.h"
#include "gobin/go_binary.h"
#include "gobin/runtime_variables.h"
#include "heap/buckets.h"
#include "heap/snapshot.h"
#include "pprof/heap_profile_builder.h"
#include "pprof/output.h"
#include "proc/memory_reader.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

namespace {

using Clock = std::chrono::steady_clock;


class PhaseTimer {
 public:
  PhaseTimer(bool verbose, std::ostream& log) : verbose_(verbose), log_(log) {}
  void Done(std::string_view phase) {
    auto now = Clock::now();
    if (verbose_) {
      double ms = std::chrono::duration<double, std::milli>(now - last_).count();
      log_ << "goheap2pprof: phase " << phase << ": " << std::fixed << std::setprecision(2) << ms
           << " ms\n";
    }
    last_ = now;
  }

 private:
  bool verbose_;
  std::ostream& log_;
  Clock::time_point last_ = Clock::now();
};


}  // namespace

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
  PhaseTimer timer(options.verbose, log);
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

  // 2. Open the executable through /proc/<pid>/exe and learn its Go version.
  const ElfFile exe = OpenTargetExecutable(pid);
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
  const RuntimeTraits traits = TraitsForVersion(*bin.version());
  report.go_version = FormatGoVersion(traits.version);
  verbose("target ", exe.name(), ", comm ", start_stat.comm);
  verbose("Go version ", report.go_version, " (from ", bin.version_source(), ")");
  if (!traits.verified) {
    warn("Go " + report.go_version + " is not among the versions goheap2pprof is tested with (" +
         VerifiedVersionsText() + "); proceeding because its runtime tables validate");
  }

  // 3. Map link-time addresses to runtime addresses (PIE load bias).
  const FileIdentity exe_id = ExecutableIdentity(pid);
  const std::vector<MapsEntry> maps = ReadProcMaps(pid);
  const uint64_t bias = ComputeLoadBias(exe, maps, exe_id);
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
  timer.Done("identify");

  // 5. Read the rate and the bucket list, repeating the walk if a GC
  //    published a new profile cycle meanwhile.
  ProcessMemoryReader mem(pid);
  const HeapSnapshot snap = ReadHeapSnapshot(mem, addrs, traits);
  const int64_t rate = snap.rate;
  if (!snap.consistent) {
    warn("the profile cycle changed during each of " + std::to_string(snap.walks) +
         " walks (the target collects garbage constantly); counters may mix two cycles");
  }
  verbose("MemProfileRate ", rate, ", cycle ", snap.cycle, ", ", snap.buckets.size(), " buckets, ",
          snap.walks, snap.walks == 1 ? " walk" : " walks");
  timer.Done("walk");

  if (snap.buckets.empty()) {
    bool disabled = false;
    if (vars.disable_memory_profiling) {
      uint8_t flag = 0;
      disabled = mem.TryRead(vars.disable_memory_profiling->addr + bias,
                             std::span<uint8_t>(&flag, 1)) &&
                 flag != 0;
    }
    if (disabled) {
      throw Error(ErrorKind::kSamplingDisabled, "heap profiling is compiled out of process ", pid,
                  ": the linker set runtime.disableMemoryProfiling because the program never "
                  "uses runtime/pprof or runtime.MemProfile")
          .WithHint("link runtime/pprof into the program (e.g. import _ \"net/http/pprof\" or "
                    "call pprof.WriteHeapProfile somewhere), or set runtime.MemProfileRate at "
                    "startup, and restart it");
    }
    if (rate == 0) {
      throw Error(ErrorKind::kSamplingDisabled, "heap profiling is off in process ", pid,
                  ": the program set runtime.MemProfileRate = 0")
          .WithHint("remove the MemProfileRate = 0 assignment (or set GODEBUG=memprofilerate="
                    "524288 for Go 1.20+) and restart the program");
    }
    warn("no heap allocation has been sampled yet in process " + std::to_string(pid) +
         "; writing an empty profile, as the runtime would serve");
  }
  if (options.after_walk_hook) options.after_walk_hook();

  // 6. Emulate runtime.MemProfile and build the profile as runtime/pprof does.
  const std::vector<MemProfileRecord> records = EmulateMemProfile(snap.buckets, snap.cycle);
  const Pclntab pclntab = bin.OpenPclntab(bias);
  Symbolizer symbolizer(pclntab, traits);
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  HeapProfileBuilder builder(symbolizer, traits, ProfileMappings(pid, maps, exe_id, exe), rate,
                             now_ns);
  for (const MemProfileRecord& r : records) builder.AddRecord(r);
  if (snap.walks > 1) {
    builder.AddComment("goheap2pprof: walked the bucket list " + std::to_string(snap.walks) +
                       " times because a GC published a profile cycle during the walk");
  }
  pb::Profile profile = builder.Finish();
  report.samples = records.size();
  verbose(symbolizer.distinct_pcs(), " distinct PCs symbolized, ", symbolizer.failed_lookups(),
          " failed");
  timer.Done("symbolize+build");

  // 7. The pid must still be the process we started with.
  CheckSameProcess(pid, start_stat);

  // 8. Encode and write atomically.
  WriteOutput(report.output_path, EncodeProfile(profile));
  timer.Done("write");
  return report;
}

}  // namespace goheap2pprof
