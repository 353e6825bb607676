#include "goroutine/unwind.h"

#include <optional>
#include <utility>

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

// Appends the logical frames of a physical frame: tracebackPCs' inline
// walk, with wrapper elision. callee: the FuncID of the frame below, carried
// across physical frames.
void AppendLogicalPcs(const FuncIds& ids, const UnwindCache::Step& step, uint64_t bias,
                      uint8_t& callee, size_t max_pcs, std::vector<uint64_t>& out) {
  for (const UnwindCache::Level& level : step.levels) {
    if (out.size() >= max_pcs) return;
    const bool elide =
        !(callee == ids.gopanic || callee == ids.sigpanic || callee == ids.panicwrap);
    if (!(level.func_id == ids.wrapper && elide)) out.push_back(level.sym + 1 + bias);
    callee = level.func_id;
  }
}

// arm64: the signal handler that injected a call (sigpanic, asyncPreempt)
// pushed the interrupted function's LR in a 16-byte slot (pushCall), just
// above the injected frame: skip it, and take it as that function's LR if
// it had not opened its frame at the trap. False when off the copy.
bool SkipPushedLr(UnwindCache& cache, uint64_t bias, const StackCopy& stack, uint64_t pc, bool trap,
                  uint64_t& sp, uint64_t& lr) {
  std::optional<uint64_t> pushed = LoadWord(stack, sp);
  if (!pushed) return false;
  sp += 16;  // alignUp(sys.MinFrameSize, sys.StackAlign)
  const UnwindCache::Step& interrupted = cache.At(pc - bias, trap);
  if (interrupted.ok && interrupted.sp_delta == 0) lr = *pushed;
  return true;
}

}  // namespace

const UnwindCache::Step& UnwindCache::At(uint64_t pc, bool trap) {
  std::unordered_map<uint64_t, Step>& steps = steps_[trap ? 1 : 0];
  // Stale copies can bring any number of garbage PCs: keep the memory bounded.
  if (steps.size() >= kMaxSteps) steps.clear();
  auto [it, inserted] = steps.try_emplace(pc);
  Step& step = it->second;
  if (!inserted) return step;
  std::optional<FuncRef> f = tab_.FindFunc(pc);
  if (!f) return step;
  step.found = true;
  Expected<uint8_t> flag = tab_.TryFuncFlag(*f);
  Expected<int32_t> delta = tab_.TrySpDelta(*f, pc);
  if (!flag || !delta || *delta < 0) return step;
  step.flag = *flag;
  step.sp_delta = *delta;
  Expected<std::string_view> name = tab_.TryFuncName(*f);
  if (!name) return step;
  const bool preempt = *name == "runtime.asyncPreempt" || *name == "runtime.debugCallV2";
  step.injects_trap = *name == "runtime.sigpanic" || (async_preempt_traps_ && preempt);
  step.injected_call = *name == "runtime.sigpanic" || preempt;
  uint64_t sym = !trap && pc > f->entry ? pc - 1 : pc;
  // Each level moves to an outer inlined call: a sane tree has no cycles,
  // and the bound keeps a corrupt one finite.
  for (int level = 0; level < 1024; ++level) {
    Expected<PcFrame> frame = tab_.TryFrameAt(*f, sym);
    Expected<std::optional<uint64_t>> parent = tab_.TryInlineParentPc(*f, sym);
    if (!frame || !parent) return step;
    step.levels.push_back({sym, frame->func_id});
    if (!*parent) break;
    sym = **parent;
  }
  step.ok = true;
  return step;
}

UnwindResult UnwindGoroutine(UnwindCache& cache, const FuncIds& ids, uint64_t bias, CallArch arch,
                             UnwindStart start, const StackCopy& stack, size_t max_pcs) {
  const bool uses_lr = arch == CallArch::kLinkRegister;
  UnwindResult r;
  uint64_t pc = start.pc;
  uint64_t sp = start.sp;
  uint64_t lr = uses_lr ? start.lr : 0;
  if (pc == 0) {  // the runtime's rule: the PC is then the word at SP
    std::optional<uint64_t> top = LoadWord(stack, sp);
    if (!top) return {{}, UnwindEnd::kOffStack};
    pc = *top;
    lr = 0;
    if (!uses_lr) sp += 8;
  }
  uint8_t callee = 0;  // FuncIDNormal
  bool trap = false;   // a saved gobuf is never a trap frame
  for (bool innermost = true;; innermost = false) {
    const UnwindCache::Step& step = cache.At(pc - bias, trap);
    if (!step.found || !step.ok) {
      r.end = step.found ? UnwindEnd::kMalformed : UnwindEnd::kUnknownPc;
      return r;
    }
    AppendLogicalPcs(ids, step, bias, callee, max_pcs, r.pcs);
    if (step.flag & (kFuncFlagTopFrame | kFuncFlagSpWrite)) return r;
    if (r.pcs.size() >= max_pcs) {
      r.end = UnwindEnd::kDepth;
      return r;
    }
    const uint64_t fp = sp + static_cast<uint64_t>(step.sp_delta) + (uses_lr ? 0 : 8);
    // arm64: an innermost frame that has not opened its frame yet still has
    // its return address in LR (gobuf.lr); every other frame saved it at 0(SP).
    if (!uses_lr || (innermost && sp < fp) || lr == 0) {
      std::optional<uint64_t> saved = LoadWord(stack, uses_lr ? sp : fp - 8);
      if (!saved) {
        r.end = UnwindEnd::kOffStack;
        return r;
      }
      lr = *saved;
    }
    if (lr == 0) return r;
    if (lr == pc && fp == sp) {  // the runtime's "traceback stuck"
      r.end = UnwindEnd::kMalformed;
      return r;
    }
    trap = step.injects_trap;
    pc = std::exchange(lr, 0);
    sp = fp;
    if (uses_lr && step.injected_call && !SkipPushedLr(cache, bias, stack, pc, trap, sp, lr)) {
      r.end = UnwindEnd::kOffStack;
      return r;
    }
  }
}

}  // namespace goheap2pprof
