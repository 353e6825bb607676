#include "pprof/stack_warmer.h"

#include <algorithm>

namespace goheap2pprof {

bool HasHiddenByRuntimePrefix(std::optional<std::string_view> name, const RuntimeTraits& traits) {
  if (!name) return false;
  for (std::string_view prefix : traits.hidden_prefixes) {
    if (name->starts_with(prefix)) return true;
  }
  return false;
}

StackWarmer::StackWarmer(Symbolizer& symbolizer, const RuntimeTraits& traits, uint64_t load_bias)
    : sym_(symbolizer), traits_(traits), bias_(load_bias) {}

uint8_t& StackWarmer::Seen(uint64_t pc) {
  if (uint8_t* s = seen_.Find(pc)) return *s;
  return seen_.Insert(pc, 0);
}

bool StackWarmer::Hidden(uint64_t pc) {
  uint8_t& seen = Seen(pc);
  if ((seen & kName) == 0) {
    // The frames too: the first shown PC's are asked for next, and a hidden
    // one's when every frame is hidden (a few runtime PCs in all).
    const std::optional<std::string_view> name = sym_.FuncNameForPcAndFrames(pc - bias_).name;
    seen |= kName | kFrames | (HasHiddenByRuntimePrefix(name, traits_) ? kHidden : 0);
  }
  return (seen & kHidden) != 0;
}

size_t StackWarmer::FirstShown(std::span<const uint64_t> stack, size_t from) {
  size_t i = from;
  while (i < stack.size() && stack[i] != 0 && Hidden(stack[i])) ++i;
  return i;
}

size_t StackWarmer::Warm(std::span<const uint64_t> stack) {
  // The PCs this stack starts with alike the last one's were warmed with it
  // (a hidden one's frames too): stacks of one allocation site reached from
  // many callers share most of theirs.
  const size_t shared = SharedLeadingPcs(stack, last_stack_);
  // HeapProfileBuilder::HiddenFrames: names up to the first shown frame
  // (the last stack's, if this one shares it); then the frames from there
  // (all of them when every frame is hidden).
  const size_t first_shown =
      shared > last_first_shown_ ? last_first_shown_ : FirstShown(stack, shared);
  const size_t shown = first_shown == stack.size() ? 0 : first_shown;
  // And those it ends with alike the last one's (its callers' frames).
  const size_t shared_tail = SharedTrailingPcs(stack, last_tail_);
  uint64_t last = 0;
  const uint64_t* p = stack.data() + std::max(shown, shared);
  const uint64_t* const end = stack.data() + (stack.size() - shared_tail);
  while (p < end) {
    const uint64_t pc = *p++;
    // A recursion repeats one PC hundreds of times (most of a deep stack):
    // passed over at once. PcMap's keys are not 0; the builder asks for that
    // one itself.
    if (pc == last || pc == 0) continue;
    last = pc;
    p += LeadingRepeats({p, end}, pc);
    uint8_t& seen = Seen(pc);
    if ((seen & kFrames) != 0) continue;
    sym_.FramesFor(pc - bias_);
    seen |= kFrames;
  }
  last_stack_.assign(stack.begin(), stack.begin() + std::min(stack.size(), kRememberedLeadingPcs));
  last_tail_.assign(stack.end() - std::min(stack.size(), kRememberedTrailingPcs), stack.end());
  last_first_shown_ = first_shown;
  return shown;
}

}  // namespace goheap2pprof
