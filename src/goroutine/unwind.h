// Unwinding one parked goroutine's stack from a copy of it, the way the
// runtime's tracebackPCs does (go-goroutine-facts.md §6.2, §7): physical
// frames from pclntab SP deltas, each expanded into its logical (inlined)
// frames, wrappers elided. amd64's CALL pushes the return address: fp = sp +
// pcsp(pc) + 8, return address at fp-8. arm64's BL leaves it in the link
// register, which each function with a frame saves at 0(SP): fp = sp +
// pcsp(pc), return address at 0(sp), or the saved gobuf.lr for an innermost
// frame that has not opened its frame (the runtime's usesLR paths). The result is the PC list the
// runtime's goroutine profile keys on: return addresses, "entry+parentPc+1" for inlined levels,
// runtime.goexit's last. Nothing here reads the target: the caller copies the stack first, so one
// goroutine costs one read, and unwinding cannot be torn by the target (the caller re-reads the g
// to learn whether the copy was stale).
//
//   StackCopy stack{.base = sp, .bytes = copied};
//   UnwindCache cache(pclntab, go121);   // one for every goroutine of a read
//   UnwindResult r = UnwindGoroutine(cache, ids, bias, CallArch::kLinkRegister,
//                                    {pc, sp, lr}, stack, 128);
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "gobin/pclntab.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

// Bytes of the target's stack from `base` (runtime address) on.
struct StackCopy {
  uint64_t base = 0;
  std::span<const uint8_t> bytes;
};

// Where unwinding starts: the saved PC and SP of a parked goroutine, and
// its saved link register (gobuf.lr; 0 from syscallpc/syscallsp, and always
// 0 on amd64).
struct UnwindStart {
  uint64_t pc = 0;
  uint64_t sp = 0;
  uint64_t lr = 0;
};

// Where a call leaves its return address: pushed on the stack (amd64) or in
// a link register (arm64: the runtime's usesLR).
enum class CallArch { kPushesReturn, kLinkRegister };

enum class UnwindEnd {
  kComplete,   // reached a top frame (runtime.goexit, mstart, ...)
  kDepth,      // the logical-frame limit cut the stack (as the runtime's does)
  kUnknownPc,  // a PC in no function: a stale copy, or not Go code
  kOffStack,   // a return address outside the copied stack
  kMalformed,  // the pclntab could not answer for a function, or no progress
};

struct UnwindResult {
  std::vector<uint64_t> pcs;  // logical frames, runtime addresses, innermost first
  UnwindEnd end = UnwindEnd::kComplete;
};

// What the pclntab says about one return address (link-time): its function's
// SP delta and flag there, and its inline chain, innermost first. Most
// goroutines of a program are parked at a few dozen PCs: one decoding each.
class UnwindCache {
 public:
  struct Level {
    uint64_t sym = 0;  // the PC the level is symbolized at
    uint8_t func_id = 0;
  };
  struct Step {
    bool found = false;  // pc is in a function
    bool ok = false;     // and the tables answered
    int32_t sp_delta = 0;
    uint8_t flag = 0;
    // The function was injected by a signal (sigpanic; from Go 1.21 also
    // asyncPreempt and debugCallV2): its caller's PC is where the trap hit,
    // not a return address, and is symbolized as it is.
    bool injects_trap = false;
    // sigpanic, asyncPreempt or debugCallV2 in every version: on a link
    // register machine the signal handler pushed the interrupted function's
    // LR in 16 bytes above the injected frame.
    bool injected_call = false;
    std::vector<Level> levels;
  };
  // async_preempt_traps: Go 1.21+, whose unwinder treats asyncPreempt and
  // debugCallV2 like sigpanic (1.18-1.20's gentraceback only sigpanic).
  UnwindCache(const Pclntab& pclntab, bool async_preempt_traps)
      : tab_(pclntab), async_preempt_traps_(async_preempt_traps) {}
  // trap: pc is where a trap hit (the frame above injects_trap).
  const Step& At(uint64_t pc, bool trap);

 private:
  static constexpr size_t kMaxSteps = size_t{1} << 20;
  const Pclntab& tab_;
  bool async_preempt_traps_;
  std::unordered_map<uint64_t, Step> steps_[2];  // [trap]
};

// bias = runtime - link-time address (the cache's pclntab is link-time).
// max_pcs: the profile's depth (32 before Go 1.23, 128 after). Physical
// frames are bounded by the copy itself: each moves SP up at least 8 bytes,
// but for frameless arm64 frames, of which no more than two can follow one
// another before the runtime's "traceback stuck" rule ends the walk.
UnwindResult UnwindGoroutine(UnwindCache& cache, const FuncIds& ids, uint64_t bias, CallArch arch,
                             UnwindStart start, const StackCopy& stack, size_t max_pcs);

}  // namespace goheap2pprof
