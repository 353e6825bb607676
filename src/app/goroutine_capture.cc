#include "app/goroutine_capture.h"

#include <elf.h>

#include <chrono>
#include <optional>

#include "base/error.h"
#include "elf/dwarf_types.h"
#include "elf/load_bias.h"
#include "gobin/go_binary.h"
#include "pprof/goroutine_profile.h"
#include "runtime/goroutine_layout.h"

namespace goheap2pprof {

namespace {

uint64_t RequireSymbol(const GoBinary& bin, std::string_view name) {
  std::optional<uint64_t> addr = bin.SymbolAddress(name);
  if (!addr) {
    throw Error(ErrorKind::kUnsupported, bin.elf().name(), " has no symbol ", name,
                ": goroutines are read only from executables with a symbol table so far")
        .WithHint("give goheap2pprof the unstripped build with --exe");
  }
  return *addr;
}

// Where allgs and the finalizer state are, and how to read a g, for this
// process.
GoroutineContext MakeContext(const ExecutableAnalysis& analysis, uint64_t bias,
                             GoroutineCapture& out) {
  const GoBinary bin(analysis.elf());
  const RuntimeTraits& traits = analysis.traits();
  const std::optional<DwarfTypes> dwarf = DwarfTypes::Open(analysis.elf(), {"runtime"});
  GoroutineLayoutVerdict verdict =
      CheckGoroutineLayout(analysis.elf().name(), dwarf ? &*dwarf : nullptr, traits);
  out.notes.insert(out.notes.end(), verdict.notes.begin(), verdict.notes.end());
  out.warnings.insert(out.warnings.end(), verdict.warnings.begin(), verdict.warnings.end());
  GoroutineContext ctx;
  ctx.allglen = RequireSymbol(bin, "runtime.allglen") + bias;
  ctx.allgptr = RequireSymbol(bin, "runtime.allgptr") + bias;
  const bool old_fing = traits.version.major == 1 && traits.version.minor <= 19;
  if (std::optional<uint64_t> fing =
          bin.SymbolAddress(old_fing ? "runtime.fingRunning" : "runtime.fingStatus")) {
    ctx.fing = *fing + bias;
    ctx.fing_is_bool = old_fing;
  }
  ctx.pclntab = &analysis.pclntab();
  ctx.bias = bias;
  ctx.layout = verdict.layout;
  ctx.func_ids = traits.func_ids;
  // debug.profstackdepth (128) from 1.23; the 32-word StackRecord before.
  ctx.profile_depth = traits.version.major == 1 && traits.version.minor <= 22 ? 32 : 128;
  ctx.async_preempt_traps = !(traits.version.major == 1 && traits.version.minor <= 20);
  return ctx;
}

}  // namespace

GoroutineCapture CaptureGoroutines(CaptureSource& source, const ExecutableAnalysis& analysis,
                                   const GoroutineLimits& limits) {
  if (analysis.elf().machine() != EM_X86_64) {
    throw Error(ErrorKind::kUnsupported, analysis.elf().name(),
                ": goroutines are read from amd64 programs only so far");
  }
  GoroutineCapture out;
  out.bias = ComputeLoadBias(analysis.elf(), source.mappings(), source.executable().running);
  const GoroutineContext ctx = MakeContext(analysis, out.bias, out);
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

std::string GoroutineText(const ExecutableAnalysis& analysis, const GoroutineCapture& capture) {
  const std::vector<GoroutineStack> stacks = CountGoroutineStacks(capture.snapshot.goroutines);
  return GoroutineDebugText(analysis.symbolizer(), analysis.traits(), capture.bias, stacks);
}

}  // namespace goheap2pprof
