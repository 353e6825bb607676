// Return PC -> source frames, with the exact semantics runtime/pprof gets from
// runtime.FuncForPC and runtime.CallersFrames inside the target, computed from
// the target's own pclntab. Results are cached per PC, so each distinct PC is
// decoded once. PCs are those of the pclntab given (link-time when the table
// was opened with load bias 0, as ExecutableAnalysis does), so one symbolizer
// and its cache serve every process of an executable. All methods lock: one
// symbolizer may be used by captures on several threads; the references
// FramesFor returns, and the names and frames they view, stay valid as long
// as the symbolizer (entries are never moved or freed before it is).
//
//   Symbolizer sym(pclntab, traits);
//   const PcFrames& f = sym.FramesFor(return_pc);   // CallersFrames([]uintptr{pc})
//   std::optional<std::string_view> n = sym.FuncNameForPc(return_pc);  // FuncForPC(pc).Name()
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/adaptive_mutex.h"
#include "base/pc_map.h"
#include "gobin/pclntab.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

// runtime.Frame, as much of it as runtime/pprof uses.
struct SymFrame {
  uint64_t pc = 0;                // return PC - 1 (or the PC itself at a function entry)
  std::string_view function;      // raw symbol name (runtime_FrameSymbolName)
  std::string_view printed_name;  // Frame.Function: generic shapes printed as [...] from 1.21
  std::string_view file;
  int64_t line = 0;
  int64_t start_line = 0;
  bool inlined = false;  // Frame.Func == nil
  uint64_t entry = 0;    // physical function entry, 0 if unknown
};

// allFrames(addr) of runtime/pprof: the frames of one return PC.
// Views the symbolizer's own storage.
struct PcFrames {
  std::span<const SymFrame> frames;  // empty for runtime.goexit, else one frame
  bool lookup_failed = false;        // PC, function, file or line missing
};

class Symbolizer {
 public:
  Symbolizer(const Pclntab& pclntab, const RuntimeTraits& traits);

  // FuncForPC(pc).Name(): the innermost function at pc itself (not pc-1),
  // nullopt if pc is in no function.
  std::optional<std::string_view> FuncNameForPc(uint64_t pc);
  const PcFrames& FramesFor(uint64_t addr);
  // FuncNameForPc(pc) and FramesFor(pc) at once: what symbolizing ahead
  // (StackWarmer) and the build (hideRuntime's test) ask of a stack's first
  // PCs, under the lock at most twice instead of up to four times (the lock's
  // cache line passes between the capture's two threads at each).
  struct NameAndFrames {
    std::optional<std::string_view> name;
    const PcFrames* frames = nullptr;  // never null; valid as FramesFor's
  };
  NameAndFrames FuncNameForPcAndFrames(uint64_t pc);
  // runtime_expandFinalInlineFrame: restores inline frames lost when the
  // stack was truncated in the middle of an inline group. nullopt when the
  // stack stays as it is (the last PC is not inside inlined code). *plain,
  // if given, says whether that holds for every stack ending in this one's
  // last PC (it is not inside inlined code, or in no function), so that a
  // caller may remember it.
  std::optional<std::vector<uint64_t>> ExpandFinalInlineFrame(std::span<const uint64_t> stk,
                                                              bool* plain = nullptr);

  // Frame.Function as printed: since Go 1.21 "pkg.F[go.shape.int]" -> "pkg.F[...]".
  std::string PrintedName(std::string_view raw) const;

  // Since construction, over all captures.
  uint64_t distinct_pcs() const;
  uint64_t failed_lookups() const;

 private:
  // Everything known about one PC. A short-stack target brings ~100k PCs
  // that each occur once: entries are stored flat, in chunks that are never
  // moved (the references handed out stay valid), and hold no allocation of
  // their own, so that building and freeing them is cheap.
  struct PcEntry {
    PcFrames frames;  // frames views `frame`; valid once frames_known
    SymFrame frame;
    std::optional<std::string_view> name;  // FuncNameForPc, valid once name_known
    bool frames_known = false;
    bool name_known = false;
    bool final_not_inlined = false;  // ExpandFinalInlineFrame found nothing to do
  };
  // Chunks double from 64 entries (a binary-recursion target has a few
  // hundred PCs) to 4096.
  static constexpr size_t kFirstChunk = 64;
  static constexpr size_t kLargestChunk = 4096;

  PcEntry& Entry(uint64_t pc);  // found or added; never moves
  // Entry(pc) with its name and/or frames known (decoded if need be).
  PcEntry& Known(uint64_t pc, bool name, bool frames);
  // FramesFor's frame, decoded from the table (no cache, no lock, printed
  // name unset).
  SymFrame Decode(uint64_t addr) const;
  // FuncNameForPc's answer, decoded from the table (no cache, no lock).
  std::optional<std::string_view> DecodeName(uint64_t pc) const;
  // The first decoded answer for a PC: the one every caller gets.
  void StoreFrames(uint64_t addr, SymFrame frame, PcEntry& e);
  // PrintedName's result, stored only when it differs from raw.
  std::string_view StoredPrintedName(std::string_view raw);

  mutable AdaptiveMutex mu_;
  const Pclntab& tab_;
  const RuntimeTraits traits_;  // a copy: callers pass TraitsForVersion(...)'s temporaries
  PcMap<PcEntry*> entries_;     // every PC but 0, which is zero_pc_
  PcEntry zero_pc_;
  std::vector<std::unique_ptr<PcEntry[]>> chunks_;
  size_t last_chunk_size_ = 0;
  size_t used_in_last_chunk_ = 0;
  std::deque<std::string> printed_names_;  // generic names with shapes elided
  uint64_t distinct_pcs_ = 0;
  uint64_t failed_lookups_ = 0;
};

}  // namespace goheap2pprof
