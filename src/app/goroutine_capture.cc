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
GoroutineVariables LocateVariables(const ExecutableAnalysis& analysis, const GoBinary& bin,
                                   GoroutineCapture& out) {
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

// The int32 of the GODEBUG setting `name` in the target's runtime.dbgvars
// (a []*dbgVar at `table`; dbgVar is {name string; value *int32; atomic
// *atomic.Int32; def int32} in Go 1.26 and 1.27): nullopt where it
// cannot be read.
std::optional<int32_t> ReadDbgVar(MemoryReader& mem, uint64_t table, std::string_view name) {
  uint8_t head[16];
  ReadRequest slice{table, head, false};
  mem.ReadMany({&slice, 1});
  const uint64_t n = slice.ok ? LoadU64(head + 8) : 0;
  if (n == 0 || n > 256) return std::nullopt;
  std::vector<uint8_t> ptrs(n * 8), entries(n * 40);
  ReadRequest array{LoadU64(head), ptrs, false};
  mem.ReadMany({&array, 1});
  if (!array.ok) return std::nullopt;
  std::vector<ReadRequest> reqs;
  for (uint64_t i = 0; i < n; ++i) {
    reqs.push_back({LoadU64(&ptrs[i * 8]), {&entries[i * 40], 40}, false});
  }
  mem.ReadMany(reqs);
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t* e = &entries[i * 40];
    if (!reqs[i].ok || LoadU64(e + 8) != name.size()) continue;
    std::string text(name.size(), '\0');
    uint8_t value[4];
    const uint64_t var = LoadU64(e + 24) != 0 ? LoadU64(e + 24) : LoadU64(e + 16);
    ReadRequest more[] = {
        {LoadU64(e), {reinterpret_cast<uint8_t*>(text.data()), text.size()}, false},
        {var, value, false}};
    mem.ReadMany(more);
    if (more[0].ok && text == name)
      return more[1].ok ? std::optional(static_cast<int32_t>(LoadU32(value))) : std::nullopt;
  }
  return std::nullopt;
}

// tracebacklabels in the build's DefaultGODEBUG (its build info: the
// defaults of its go.mod's go version and //go:debug lines), else the
// version's default: 1 from Go 1.27.
int32_t DefaultTracebackLabels(const GoBinary& bin, const GoVersion& version) {
  const std::optional<BuildInfo> info = bin.build_info();
  const std::string_view line = "build\tDefaultGODEBUG=";
  const size_t at = info ? info->modinfo.find(line) : std::string::npos;
  if (at != std::string::npos) {
    const size_t end = info->modinfo.find('\n', at);
    const std::string defaults =
        "," + info->modinfo.substr(at + line.size(), end - at - line.size());
    const size_t setting = defaults.find(",tracebacklabels=");
    if (setting != std::string::npos) return defaults.compare(setting + 17, 1, "1") == 0 ? 1 : 0;
  }
  return version.major == 1 && version.minor >= 27 ? 1 : 0;
}

// GODEBUG tracebacklabels (Go 1.26+): whether the dump's headers show pprof
// labels. The runtime's debug.tracebacklabels, read from the target as its
// runtime reads it when it prints, through runtime.dbgvars (each entry a
// name and a pointer to its variable: no field offset of runtime.debug is
// needed). Without that symbol (a stripped binary), the build's default,
// which misses a GODEBUG setting of the target's own: said in -v.
bool ReadTracebackLabels(const GoBinary& bin, const GoVersion& version, uint64_t bias,
                         MemoryReader& mem, GoroutineCapture& out) {
  if (version.major == 1 && version.minor < 26) return false;
  if (const std::optional<uint64_t> table = bin.SymbolAddress("runtime.dbgvars")) {
    if (const std::optional<int32_t> v = ReadDbgVar(mem, *table + bias, "tracebacklabels")) {
      out.notes.push_back(
          Concat("GODEBUG tracebacklabels=", *v, ", read from the target (runtime.dbgvars)"));
      return *v == 1;
    }
  }
  const int32_t def = DefaultTracebackLabels(bin, version);
  out.notes.push_back(
      Concat("GODEBUG tracebacklabels: not read from the target (no "
             "runtime.dbgvars); assuming the build's default, ",
             def, ", which a GODEBUG setting of the target's own would change"));
  return def == 1;
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
  const GoBinary bin(analysis.elf());
  const GoroutineVariables vars = LocateVariables(analysis, bin, out);
  GoroutineContext ctx = MakeContext(analysis, vars, out.bias, out);
  CheckRecoveredAllgs(source.memory(), ctx, vars);
  if (options.dump) {
    // The dump lists goroutines on a CPU and cuts stacks by its own rule;
    // the copy bound (max_stack_bytes) still bounds every unwind.
    ctx.keep_running = true;
    ctx.profile_depth = size_t{1} << 20;
    out.wait_reasons = ReadWaitReasons(vars, out.bias, source.memory(), out);
    out.now = TargetNanotime(source, options);
    out.traceback_labels =
        ReadTracebackLabels(bin, analysis.traits().version, out.bias, source.memory(), out);
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
          .now = capture.now,
          .traceback_labels = capture.traceback_labels};
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
