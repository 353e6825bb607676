#include "app/capture.h"

#include <chrono>
#include <ctime>
#include <iomanip>
#include <optional>
#include <ostream>

#include "app/target.h"
#include "base/error.h"
#include "gobin/go_binary.h"
#include "heap/buckets.h"
#include "pprof/heap_profile_builder.h"
#include "pprof/output.h"
#include "proc/memory_reader.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

namespace {

using Clock = std::chrono::steady_clock;

// How many times the walk is repeated when a GC published a profile cycle
// while we were reading (the counters would mix two cycles).
constexpr int kMaxCycleRetries = 5;

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

struct RuntimeAddresses {
  uint64_t mbuckets = 0;
  uint64_t rate = 0;
  uint64_t cycle = 0;
  std::optional<uint64_t> disable_profiling;
};

uint64_t RequireSymbol(const GoBinary& bin, std::string_view name, uint64_t bias) {
  std::optional<uint64_t> addr = bin.SymbolAddress(name);
  if (!addr) {
    throw Error(ErrorKind::kUnsupported, bin.elf().name(), " has no symbol ", name,
                "; this Go runtime's heap profiler cannot be located")
        .WithHint("goheap2pprof needs the runtime's symbols; is this a Go 1.18+ program?");
  }
  return *addr + bias;
}

// The cycle number memProfileInternal uses, from the raw cycle word.
uint32_t DecodeCycle(uint32_t word, CycleEncoding enc) {
  return enc == CycleEncoding::kMProfCycle ? word >> 1 : word;
}

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
  if (!exe.HasSymtab()) {
    throw Error(ErrorKind::kUnsupported, exe.name(),
                " is stripped (no .symtab), so runtime.mbuckets cannot be located by name")
        .WithHint("capture from an unstripped build of the same program (built without "
                  "-ldflags=-s); support for stripped binaries is planned");
  }

  // 3. Map link-time addresses to runtime addresses (PIE load bias).
  const FileIdentity exe_id = ExecutableIdentity(pid);
  const std::vector<MapsEntry> maps = ReadProcMaps(pid);
  const uint64_t bias = ComputeLoadBias(exe, maps, exe_id);
  verbose("build mode ", exe.type() == 3 ? "PIE (ET_DYN)" : "fixed address (ET_EXEC)",
          ", load bias ", Hex(bias));

  // 4. Find the runtime's heap-profile variables.
  RuntimeAddresses addrs;
  addrs.mbuckets = RequireSymbol(bin, "runtime.mbuckets", bias);
  addrs.rate = RequireSymbol(bin, "runtime.MemProfileRate", bias);
  addrs.cycle = RequireSymbol(bin, traits.cycle_symbol, bias);
  if (auto a = bin.SymbolAddress("runtime.disableMemoryProfiling")) addrs.disable_profiling = *a + bias;
  verbose("runtime.mbuckets at ", Hex(addrs.mbuckets), ", runtime.MemProfileRate at ",
          Hex(addrs.rate), ", ", traits.cycle_symbol, " at ", Hex(addrs.cycle));
  timer.Done("identify");

  // 5. Read the rate and the bucket list, repeating the walk if a GC
  //    published a new profile cycle meanwhile.
  ProcessMemoryReader mem(pid);
  const int64_t rate = static_cast<int64_t>(mem.ReadU64(addrs.rate, "runtime.MemProfileRate"));
  WalkResult walk;
  uint32_t cycle_word = 0;
  int retries = 0;
  for (;; ++retries) {
    cycle_word = mem.ReadU32(addrs.cycle, traits.cycle_symbol);
    uint64_t head = mem.ReadU64(addrs.mbuckets, "runtime.mbuckets");
    walk = WalkBuckets(mem, head, {.max_stack_words = traits.max_stack_words,
                                         .record_layout = traits.record_layout});
    uint32_t after = mem.ReadU32(addrs.cycle, traits.cycle_symbol);
    if (after == cycle_word) break;
    if (retries + 1 >= kMaxCycleRetries) {
      warn("the profile cycle kept changing during " + std::to_string(kMaxCycleRetries) +
           " walks (the target is collecting garbage constantly); counters may mix two cycles");
      break;
    }
  }
  const uint32_t cycle = DecodeCycle(cycle_word, traits.cycle_encoding);
  verbose("MemProfileRate ", rate, ", cycle ", cycle, ", ", walk.buckets.size(), " buckets",
          retries ? ", retries " + std::to_string(retries) : "");
  timer.Done("walk");

  if (walk.buckets.empty()) {
    bool disabled = false;
    if (addrs.disable_profiling) {
      uint8_t flag = 0;
      disabled = mem.TryRead(*addrs.disable_profiling, std::span<uint8_t>(&flag, 1)) && flag != 0;
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
  const std::vector<MemProfileRecord> records = EmulateMemProfile(walk.buckets, cycle);
  const Pclntab pclntab = bin.OpenPclntab(bias);
  Symbolizer symbolizer(pclntab, traits);
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  HeapProfileBuilder builder(symbolizer, traits, ProfileMappings(pid, maps, exe_id, exe), rate,
                             now_ns);
  for (const MemProfileRecord& r : records) builder.AddRecord(r);
  if (retries > 0) {
    builder.AddComment("goheap2pprof: walked the bucket list " + std::to_string(retries + 1) +
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
