// How every agent role stops: on SIGTERM or SIGINT, taken by one thread
// (sigwait) or one descriptor (signalfd) rather than by a handler.
//
//   const sigset_t stop = BlockStopSignals();  // before any thread starts
//   std::thread([&] { int sig; sigwait(&stop, &sig); Shutdown(); });
#pragma once

#include <signal.h>

namespace goheap2pprof {

// Blocks SIGTERM and SIGINT in the calling thread, so that every thread
// started after it inherits the mask, and ignores SIGPIPE: a client or a
// worker that went away is an error return, never the agent's end. Returns
// the set blocked. Throws Error(kInternal) if the mask cannot be set.
sigset_t BlockStopSignals();

}  // namespace goheap2pprof
