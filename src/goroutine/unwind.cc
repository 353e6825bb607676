#include "goroutine/unwind.h"

#include <optional>

#include "base/bytes.h"

namespace goheap2pprof {

namespace {

constexpr uint8_t kFuncFlagTopFrame = 1;
constexpr uint8_t kFuncFlagSpWrite = 2;

std::optional<uint64_t> LoadWord(const StackCopy& stack, uint64_t addr) {
  if (addr < stack.base || addr - stack.base > stack.bytes.size() ||
      stack.bytes.size() - (addr - stack.base) < 8) {
    return std::nullopt;
  }
  return LoadU64(stack.bytes.data() + (addr - stack.base));
}

// Appends the logical frames of the physical frame at return address `pc`
// (link-time) in f: tracebackPCs' inline walk. callee: the FuncID of the
// frame below, carried across physical frames for wrapper elision. False
// when the pclntab could not answer.
bool AppendLogicalPcs(const Pclntab& tab, const FuncIds& ids, const FuncRef& f, uint64_t pc,
                      uint64_t bias, uint8_t& callee, size_t max_pcs, std::vector<uint64_t>& out) {
  uint64_t sym = pc > f.entry ? pc - 1 : pc;
  // Each level moves to an outer inlined call: the tree has no cycles in a
  // sane table, and the bound keeps a corrupt one finite.
  for (int level = 0; level < 1024 && out.size() < max_pcs; ++level) {
    Expected<PcFrame> frame = tab.TryFrameAt(f, sym);
    if (!frame) return false;
    const bool elide =
        !(callee == ids.gopanic || callee == ids.sigpanic || callee == ids.panicwrap);
    if (!(frame->func_id == ids.wrapper && elide)) out.push_back(sym + 1 + bias);
    callee = frame->func_id;
    Expected<std::optional<uint64_t>> parent = tab.TryInlineParentPc(f, sym);
    if (!parent) return false;
    if (!*parent) return true;
    sym = **parent;
  }
  return true;
}

}  // namespace

UnwindResult UnwindGoroutine(const Pclntab& tab, const FuncIds& ids, uint64_t bias,
                             UnwindStart start, const StackCopy& stack, size_t max_pcs) {
  UnwindResult r;
  uint64_t pc = start.pc;
  uint64_t sp = start.sp;
  if (pc == 0) {  // the runtime's rule: the PC is then the word at SP
    std::optional<uint64_t> top = LoadWord(stack, sp);
    if (!top) return {{}, UnwindEnd::kOffStack};
    pc = *top;
    sp += 8;
  }
  uint8_t callee = 0;  // FuncIDNormal
  while (true) {
    std::optional<FuncRef> f = tab.FindFunc(pc - bias);
    if (!f) {
      r.end = UnwindEnd::kUnknownPc;
      return r;
    }
    if (!AppendLogicalPcs(tab, ids, *f, pc - bias, bias, callee, max_pcs, r.pcs)) {
      r.end = UnwindEnd::kMalformed;
      return r;
    }
    Expected<uint8_t> flag = tab.TryFuncFlag(*f);
    Expected<int32_t> delta = tab.TrySpDelta(*f, pc - bias);
    if (!flag || !delta || *delta < 0) {
      r.end = UnwindEnd::kMalformed;
      return r;
    }
    if (*flag & (kFuncFlagTopFrame | kFuncFlagSpWrite)) return r;
    if (r.pcs.size() >= max_pcs) {
      r.end = UnwindEnd::kDepth;
      return r;
    }
    const uint64_t fp = sp + static_cast<uint64_t>(*delta) + 8;
    std::optional<uint64_t> lr = LoadWord(stack, fp - 8);
    if (!lr) {
      r.end = UnwindEnd::kOffStack;
      return r;
    }
    if (*lr == 0) return r;
    pc = *lr;
    sp = fp;
  }
}

}  // namespace goheap2pprof
