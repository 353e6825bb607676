#include "app/goroutine_capture.h"

#include <elf.h>
#include <time.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "elf/dwarf_types.h"
#include "elf/load_bias.h"
#include "gobin/go_binary.h"
#include "gobin/goroutine_variables.h"
#include "pprof/goroutine_dump.h"
#include "pprof/goroutine_profile.h"
#include "pprof/goroutine_report.h"
#include "runtime/goroutine_layout.h"

namespace goheap2pprof {

namespace {

// Where allgs, the finalizer state and the wait reasons are: from the
// symbol table, or recovered from the runtime's code (gobin/).
GoroutineVariables LocateVariables(const ExecutableAnalysis& analysis, GoroutineCapture& out) {
  const GoBinary bin(analysis.elf());
  const RuntimeTraits& traits = analysis.traits();
  const GoroutineVariables v = LocateGoroutineVariables(
      bin, {.fing_is_bool = traits.version.major == 1 && traits.version.minor <= 19,
            .finalizer_function = GoroutineLayoutForVersion(traits.version).finalizer_function});
  const auto note = [&](std::string_view name, const std::optional<RuntimeVariable>& var) {
    out.notes.push_back(var ? Concat(name, " at ", Hex(var->addr), " (", var->source, ")")
                            : Concat(name, " not found"));
  };
  note("runtime.allglen", v.allglen);
  note("runtime.allgptr", v.allgptr);
  note("the finalizer state", v.fing);
  note("runtime.waitReasonStrings", v.wait_reasons);
  return v;
}

// How to read a g, and where the variables are, for this process.
GoroutineContext MakeContext(const ExecutableAnalysis& analysis, const GoroutineVariables& vars,
                             uint64_t bias, GoroutineCapture& out) {
  const RuntimeTraits& traits = analysis.traits();
  const std::optional<DwarfTypes> dwarf = DwarfTypes::Open(analysis.elf(), {"runtime"});
  GoroutineLayoutVerdict verdict =
      CheckGoroutineLayout(analysis.elf().name(), dwarf ? &*dwarf : nullptr, traits);
  out.notes.insert(out.notes.end(), verdict.notes.begin(), verdict.notes.end());
  out.warnings.insert(out.warnings.end(), verdict.warnings.begin(), verdict.warnings.end());
  GoroutineContext ctx;
  ctx.allglen = vars.allglen.addr + bias;
  ctx.allgptr = vars.allgptr.addr + bias;
  if (vars.fing) {
    ctx.fing = vars.fing->addr + bias;
    ctx.fing_is_bool = traits.version.major == 1 && traits.version.minor <= 19;
  }
  ctx.pclntab = &analysis.pclntab();
  ctx.bias = bias;
  ctx.layout = verdict.layout;
  ctx.func_ids = traits.func_ids;
  // debug.profstackdepth (128) from 1.23; the 32-word StackRecord before.
  ctx.profile_depth = traits.version.major == 1 && traits.version.minor <= 22 ? 32 : 128;
  ctx.async_preempt_traps = !(traits.version.major == 1 && traits.version.minor <= 20);
  ctx.call_arch =
      analysis.elf().machine() == EM_AARCH64 ? CallArch::kLinkRegister : CallArch::kPushesReturn;
  return ctx;
}

// An allgptr recovered from machine code is trusted only once the target
// agrees: allgs[0] is the main goroutine, the first one created (goroutine
// 1). A wrong address fails here rather than read garbage as goroutines.
void CheckRecoveredAllgs(MemoryReader& mem, const GoroutineContext& ctx,
                         const GoroutineVariables& vars) {
  if (vars.allgptr.source == "symbol table") return;
  const uint64_t array = mem.ReadU64(ctx.allgptr, "runtime.allgptr");
  const uint64_t first = array == 0 ? 0 : mem.ReadU64(array, "allgs[0]");
  const uint64_t goid = first == 0 ? 0 : mem.ReadU64(first + ctx.layout.goid, "allgs[0].goid");
  if (goid != 1) {
    throw Error(ErrorKind::kUnsupported, "runtime.allgptr, ", vars.allgptr.source, ", is ",
                Hex(ctx.allgptr), " in the target, but its first goroutine is not goroutine 1 ",
                "(allgs ", Hex(array), ", allgs[0] ", Hex(first), ", goid ", goid,
                "): refusing to guess")
        .WithHint("give goheap2pprof the unstripped build with --exe");
  }
}

// runtime.waitReasonStrings, a [N]string in the target's memory: the names
// of wait reasons, whose numbers change in almost every release.
std::vector<std::string> ReadWaitReasons(const GoroutineVariables& vars, uint64_t bias,
                                         MemoryReader& mem, GoroutineCapture& out) {
  const uint64_t n = vars.wait_reasons ? vars.wait_reason_count : 0;
  if (n == 0 || n > 256) {
    out.warnings.push_back(
        "no runtime.waitReasonStrings: wait reasons print as \"unknown wait reason\"");
    return {};
  }
  std::vector<uint8_t> table(n * 16);
  ReadRequest head{vars.wait_reasons->addr + bias, table, false};
  mem.ReadMany({&head, 1});
  std::vector<std::string> names(n);
  std::vector<ReadRequest> reqs;
  for (uint64_t i = 0; i < n; ++i) {
    names[i].resize(std::min<uint64_t>(LoadU64(&table[i * 16 + 8]), 256));
    if (!names[i].empty()) {
      reqs.push_back({LoadU64(&table[i * 16]),
                      {reinterpret_cast<uint8_t*>(names[i].data()), names[i].size()},
                      false});
    }
  }
  if (head.ok) mem.ReadMany(reqs);
  for (const ReadRequest& r : reqs) {
    if (!head.ok || !r.ok) {
      out.warnings.push_back(
          "runtime.waitReasonStrings could not be read: wait reasons print "
          "as \"unknown wait reason\"");
      return {};
    }
  }
  return names;
}

int64_t ClockNanos(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The "monotonic" offset of a time namespace, in ns (0 when unknown).
int64_t MonotonicOffset(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string clock;
    int64_t sec = 0, nsec = 0;
    if (words >> clock >> sec >> nsec && clock == "monotonic") return sec * 1'000'000'000 + nsec;
  }
  return 0;
}

// The target's nanotime() (CLOCK_MONOTONIC in its time namespace) now, or
// when a snapshot was taken (estimated from our clocks: right unless the
// machine rebooted since).
int64_t TargetNanotime(const CaptureSource& source, const GoroutineCaptureOptions& options) {
  const int64_t mono = ClockNanos(CLOCK_MONOTONIC);
  if (options.snapshot_realtime) {
    return mono - (ClockNanos(CLOCK_REALTIME) - *options.snapshot_realtime);
  }
  const std::string pid = std::to_string(source.identity().pid);
  return mono + MonotonicOffset("/proc/" + pid + "/timens_offsets") -
         MonotonicOffset("/proc/self/timens_offsets");
}

}  // namespace

GoroutineCapture CaptureGoroutines(CaptureSource& source, const ExecutableAnalysis& analysis,
                                   const GoroutineLimits& limits,
                                   const GoroutineCaptureOptions& options) {
  const uint16_t machine = analysis.elf().machine();
  if (machine != EM_X86_64 && machine != EM_AARCH64) {
    throw Error(ErrorKind::kUnsupported, analysis.elf().name(),
                ": goroutines are read from amd64 and arm64 programs only");
  }
  GoroutineCapture out;
  out.bias = ComputeLoadBias(analysis.elf(), source.mappings(), source.executable().running);
  const GoroutineVariables vars = LocateVariables(analysis, out);
  GoroutineContext ctx = MakeContext(analysis, vars, out.bias, out);
  CheckRecoveredAllgs(source.memory(), ctx, vars);
  if (options.dump) {
    // The dump lists goroutines on a CPU and cuts stacks by its own rule;
    // the copy bound (max_stack_bytes) still bounds every unwind.
    ctx.keep_running = true;
    ctx.profile_depth = size_t{1} << 20;
    out.wait_reasons = ReadWaitReasons(vars, out.bias, source.memory(), out);
    out.now = TargetNanotime(source, options);
  }
  out.time_nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  out.snapshot = ReadGoroutines(source.memory(), ctx, limits);
  source.CheckSameProcess();
  return out;
}

std::string DescribeGoroutineRead(const GoroutineReadStats& s, size_t goroutines) {
  return Concat("read ", goroutines, " goroutines of ", s.allglen, " in allgs (", s.dead, " dead, ",
                s.system, " system, ", s.running,
                " running on a CPU: no stack can be read without stopping them); retried ",
                s.retried, ", dropped ", s.dropped, ", truncated ", s.truncated, "; ", s.bytes_read,
                " bytes read");
}

pb::Profile GoroutineProfile(const CaptureSource& source, const ExecutableAnalysis& analysis,
                             const GoroutineCapture& capture) {
  std::vector<std::string> comments = capture.warnings;
  comments.push_back("goheap2pprof: " + DescribeGoroutineRead(capture.snapshot.stats,
                                                              capture.snapshot.goroutines.size()));
  const std::vector<GoroutineStack> stacks = CountGoroutineStacks(capture.snapshot.goroutines);
  return BuildGoroutineProfile(analysis.symbolizer(), analysis.traits(), source.ProfileMappings(),
                               capture.bias, capture.time_nanos, stacks, comments);
}

GoroutineDumpInput GoroutineDumpInputOf(const ExecutableAnalysis& analysis,
                                        const GoroutineCapture& capture) {
  return {.pclntab = &analysis.pclntab(),
          .symbolizer = &analysis.symbolizer(),
          .version = analysis.traits().version,
          .bias = capture.bias,
          .wait_reasons = capture.wait_reasons,
          .now = capture.now};
}

std::string GoroutineDump(const ExecutableAnalysis& analysis, const GoroutineCapture& capture) {
  return GoroutineDumpText(GoroutineDumpInputOf(analysis, capture), capture.snapshot.goroutines);
}

std::string GoroutineTop(const ExecutableAnalysis& analysis, const GoroutineCapture& capture) {
  return GoroutineTopText(GoroutineDumpInputOf(analysis, capture), capture.snapshot);
}

std::string GoroutineJsonReport(const ExecutableAnalysis& analysis,
                                const GoroutineCapture& capture) {
  return GoroutineJson(GoroutineDumpInputOf(analysis, capture), capture.snapshot);
}

std::string GoroutineText(const ExecutableAnalysis& analysis, const GoroutineCapture& capture) {
  const std::vector<GoroutineStack> stacks = CountGoroutineStacks(capture.snapshot.goroutines);
  return GoroutineDebugText(analysis.symbolizer(), analysis.traits(), capture.bias, stacks);
}

}  // namespace goheap2pprof
