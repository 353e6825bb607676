// What a one-shot command hands to the process's exit to reclaim instead of
// freeing it itself: the caches of a capture (a symbolizer's 100k decoded
// PCs, each with its own allocations) took ~80 ms to free one by one after
// the profile was written, where the exit unmaps them at once (issue 42).
// Only for commands that end once their work is done: a long-running role
// that kept things here would grow without bound.
//
//   KeepUntilExit(analysis);   // a std::shared_ptr; its destructor never runs
#pragma once

#include <memory>

namespace goheap2pprof {

void KeepUntilExit(std::shared_ptr<const void> what);

}  // namespace goheap2pprof
