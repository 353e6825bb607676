// `goheap2pprof growth --goroutines <pid>`: goroutine snapshots of a live Go
// process taken every --every for --for after a --warm-up (the heap growth's
// window, app/growth_live.h), each one read as the debug=2 dump reads them
// (wait reasons, the target's clock) and reduced to its groups of parked
// goroutines, then analysed into the leak report (pprof/growth/goroutine_leak.h).
//
//   GrowthLiveOptions o{.pid = 1234, .every = 1s, .duration = 1min};
//   GoroutineLeakReport r = RunGoroutineLeakLive(o, std::cerr);
#pragma once

#include <iosfwd>

#include "app/growth_live.h"
#include "pprof/growth/goroutine_leak.h"

namespace goheap2pprof {

// A snapshot is taken whatever the GC did (goroutines come and go between
// cycles); --keep writes each one's debug=2 dump to DIR/goroutine-<n>.txt.
// A process that exits during the window ends it early: the report covers
// the snapshots taken (at least two, or Error(kNoSuchProcess)). Throws Error
// as `goheap2pprof goroutines` does.
GoroutineLeakReport RunGoroutineLeakLive(const GrowthLiveOptions& options, std::ostream& log);

}  // namespace goheap2pprof
