// How every agent role stops: on SIGTERM or SIGINT, taken by one thread
// (sigwait) or one descriptor (signalfd) rather than by a handler; and how
// the roles with a listener reload its token and certificates, on SIGHUP.
//
//   sigset_t signals = BlockStopSignals();  // before any thread starts
//   BlockReloadSignal(signals);             // roles with a listener
//   std::thread([&] { WaitForStop(signals, [&] { Reload(); }); Shutdown(); });
#pragma once

#include <signal.h>

#include <functional>

namespace goheap2pprof {

// Blocks SIGTERM and SIGINT in the calling thread, so that every thread
// started after it inherits the mask, and ignores SIGPIPE: a client or a
// worker that went away is an error return, never the agent's end. Returns
// the set blocked. Throws Error(kInternal) if the mask cannot be set.
sigset_t BlockStopSignals();

// Blocks SIGHUP in the calling thread (before any thread starts) and adds
// it to set, for WaitForStop.
void BlockReloadSignal(sigset_t& set);

// Waits for a signal of set (sigwait); calls reload for each SIGHUP and
// waits again. Returns the stop signal.
int WaitForStop(const sigset_t& set, const std::function<void()>& reload);

}  // namespace goheap2pprof
