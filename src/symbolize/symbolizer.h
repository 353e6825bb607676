// Return PC -> source frames, with the exact semantics runtime/pprof gets from
// runtime.FuncForPC and runtime.CallersFrames inside the target, computed from
// the target's own pclntab. Results are cached per PC, so each distinct PC is
// decoded once. PCs are those of the pclntab given (link-time when the table
// was opened with load bias 0, as ExecutableAnalysis does), so one symbolizer
// and its cache serve every process of an executable. All methods lock: one
// symbolizer may be used by captures on several threads; the references
// FramesFor returns stay valid as long as the symbolizer.
//
//   Symbolizer sym(pclntab, traits);
//   const PcFrames& f = sym.FramesFor(return_pc);   // CallersFrames([]uintptr{pc})
//   std::optional<std::string_view> n = sym.FuncNameForPc(return_pc);  // FuncForPC(pc).Name()
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gobin/pclntab.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

// runtime.Frame, as much of it as runtime/pprof uses.
struct SymFrame {
  uint64_t pc = 0;            // return PC - 1 (or the PC itself at a function entry)
  std::string_view function;  // raw symbol name (runtime_FrameSymbolName)
  std::string printed_name;   // Frame.Function: generic shapes printed as [...] from 1.21
  std::string_view file;
  int64_t line = 0;
  int64_t start_line = 0;
  bool inlined = false;  // Frame.Func == nil
  uint64_t entry = 0;    // physical function entry, 0 if unknown
};

// allFrames(addr) of runtime/pprof: the frames of one return PC.
struct PcFrames {
  std::vector<SymFrame> frames;  // empty for runtime.goexit
  bool lookup_failed = false;    // PC, function, file or line missing
};

class Symbolizer {
 public:
  Symbolizer(const Pclntab& pclntab, const RuntimeTraits& traits);

  // FuncForPC(pc).Name(): the innermost function at pc itself (not pc-1),
  // nullopt if pc is in no function.
  std::optional<std::string_view> FuncNameForPc(uint64_t pc);
  const PcFrames& FramesFor(uint64_t addr);
  // runtime_expandFinalInlineFrame: restores inline frames lost when the
  // stack was truncated in the middle of an inline group. nullopt when the
  // stack stays as it is (the last PC is not inside inlined code).
  std::optional<std::vector<uint64_t>> ExpandFinalInlineFrame(std::span<const uint64_t> stk);

  // Frame.Function as printed: since Go 1.21 "pkg.F[go.shape.int]" -> "pkg.F[...]".
  std::string PrintedName(std::string_view raw) const;

  // Since construction, over all captures.
  uint64_t distinct_pcs() const;
  uint64_t failed_lookups() const;

 private:
  // FramesFor's answer, decoded from the table (no cache, no lock).
  PcFrames Decode(uint64_t addr) const;

  mutable std::mutex mu_;
  const Pclntab& tab_;
  const RuntimeTraits traits_;  // a copy: callers pass TraitsForVersion(...)'s temporaries
  std::unordered_map<uint64_t, PcFrames> frames_cache_;
  std::unordered_map<uint64_t, std::optional<std::string_view>> name_cache_;
  std::unordered_set<uint64_t> not_inlined_final_pcs_;
  uint64_t failed_lookups_ = 0;
};

}  // namespace goheap2pprof
