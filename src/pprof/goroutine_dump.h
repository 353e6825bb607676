// The ?debug=2 dump of goroutines (runtime.Stack(buf, true) as
// runtime/pprof's writeGoroutineStacks calls it), as the target's own Go
// version prints it (go-goroutine-facts.md §5, §6.5): per goroutine, in
// allgs order, the header "goroutine N [wait reason, M minutes]:", its frames
// with "\tfile:line +0xoff" (unexported runtime frames hidden, the version's
// frame limit), and "created by F[ in goroutine K]". Argument values are not
// printed: every frame shows "(...)", because the runtime prints spill slots
// that are stale for register arguments and a reader from outside cannot
// tell which are live. A goroutine on a CPU has no stack to print (we never
// stop the target): it shows the runtime's own "stack unavailable" line.
//
//   GoroutineDumpInput in{.pclntab = &tab, .symbolizer = &sym, .version = v,
//                         .bias = bias, .wait_reasons = reasons, .now = mono};
//   std::string text = GoroutineDumpText(in, snapshot.goroutines);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gobin/pclntab.h"
#include "goroutine/goroutine_reader.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

struct GoroutineDumpInput {
  const Pclntab* pclntab = nullptr;  // link-time addresses
  const Symbolizer* symbolizer = nullptr;
  GoVersion version;
  uint64_t bias = 0;  // runtime - link-time
  // runtime.waitReasonStrings of the target (numbers change per version).
  std::vector<std::string> wait_reasons;
  // The target's nanotime() when it was read; nullopt prints no minutes.
  std::optional<int64_t> now;
};

// The "[...]" part of a goroutine's header (without labels).
std::string GoroutineStatusText(const GoroutineDumpInput& in, const Goroutine& g);

// The whole dump: one block per goroutine, blank lines between them.
std::string GoroutineDumpText(const GoroutineDumpInput& in, std::span<const Goroutine> goroutines);

}  // namespace goheap2pprof
