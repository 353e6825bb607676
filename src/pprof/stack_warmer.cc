#include "pprof/stack_warmer.h"

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

void StackWarmer::Warm(std::span<const uint64_t> stack) {
  // HeapProfileBuilder::HiddenFrames: names up to the first shown frame;
  // then the frames from there (all of them when every frame is hidden).
  size_t shown = 0;
  while (shown < stack.size() && stack[shown] != 0 && Hidden(stack[shown])) ++shown;
  if (shown == stack.size()) shown = 0;
  uint64_t last = 0;
  const uint64_t* p = stack.data() + shown;
  const uint64_t* const end = stack.data() + stack.size();
  while (p < end) {
    const uint64_t pc = *p++;
    // A recursion repeats one PC hundreds of times: passed over four at a
    // time (most of a deep stack). PcMap's keys are not 0; the builder asks
    // for that one itself.
    if (pc == last || pc == 0) continue;
    last = pc;
    while (end - p >= 4 && p[0] == pc && p[1] == pc && p[2] == pc && p[3] == pc) p += 4;
    uint8_t& seen = Seen(pc);
    if ((seen & kFrames) != 0) continue;
    sym_.FramesFor(pc - bias_);
    seen |= kFrames;
  }
}

}  // namespace goheap2pprof
