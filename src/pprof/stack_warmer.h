// Symbolizes a heap profile's stacks ahead of its HeapProfileBuilder, on the
// walk's thread (heap/pipelined_walk.h): the same PCs the builder will ask
// the symbolizer for (hideRuntime's function names of a stack's leading
// frames, the frames of the others), so that the builder finds them in the
// symbolizer's cache. What the builder makes does not change: the
// symbolizer's answers are the same whoever asks first.
//
//   StackWarmer warmer(symbolizer, traits, load_bias);
//   size_t hidden = warmer.Warm(bucket.stack);  // runtime addresses, like RunOfTransient's
//   ... builder.RunOfTransient(bucket.stack, hidden);   // on the build's thread
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/pc_map.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

class StackWarmer {
 public:
  // traits is kept by reference: it must outlive the warmer (a temporary
  // does not compile).
  StackWarmer(Symbolizer& symbolizer, const RuntimeTraits& traits, uint64_t load_bias);
  StackWarmer(Symbolizer& symbolizer, const RuntimeTraits&& traits, uint64_t load_bias) = delete;
  // Returns what HeapProfileBuilder::HiddenFrames would for the stack: how
  // many of its leading frames hideRuntime hides (those before the first
  // that is 0 or in a function without a hidden prefix; 0 if every frame
  // is hidden), which the warmer works out on the way.
  size_t Warm(std::span<const uint64_t> stack);

 private:
  // What this warmer asked of each PC already (kName, kFrames), and what it
  // learnt (kHidden): a PC is asked once, and a PC seen before costs no lock.
  enum : uint8_t { kName = 1, kHidden = 2, kFrames = 4 };
  uint8_t& Seen(uint64_t pc);
  bool Hidden(uint64_t pc);
  // The index of stack's first PC from `from` on that is 0 or not hidden
  // (stack.size() if none), each one's name asked for on the way.
  size_t FirstShown(std::span<const uint64_t> stack, size_t from);

  Symbolizer& sym_;
  const RuntimeTraits& traits_;
  uint64_t bias_;
  PcMap<uint8_t> seen_;
  // The last stack warmed (its first kRememberedLeadingPcs), and
  // FirstShown's answer for it from 0: every PC of it but 0 has had its
  // frames asked for.
  std::vector<uint64_t> last_stack_;
  size_t last_first_shown_ = 0;
  // The last stack's last kRememberedTrailingPcs PCs, all of them warmed
  // (its hidden leading ones' frames too).
  std::vector<uint64_t> last_tail_;
};

// runtime/pprof's hideRuntime test of one frame, of the name of the
// function its PC is in (FuncNameForPc's answer; no name is not hidden):
// whether it has a hidden prefix (runtime., internal/runtime/...).
bool HasHiddenByRuntimePrefix(std::optional<std::string_view> name, const RuntimeTraits& traits);

}  // namespace goheap2pprof
