#include "agent/common/signals.h"

#include <pthread.h>

#include <cstring>

#include "base/error.h"

namespace goheap2pprof {

sigset_t BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  if (const int err = pthread_sigmask(SIG_BLOCK, &stop, nullptr); err != 0) {
    throw Error(ErrorKind::kInternal, "cannot block SIGTERM and SIGINT: ", std::strerror(err));
  }
  signal(SIGPIPE, SIG_IGN);
  return stop;
}

void BlockReloadSignal(sigset_t& set) {
  sigset_t hup;
  sigemptyset(&hup);
  sigaddset(&hup, SIGHUP);
  if (const int err = pthread_sigmask(SIG_BLOCK, &hup, nullptr); err != 0) {
    throw Error(ErrorKind::kInternal, "cannot block SIGHUP: ", std::strerror(err));
  }
  sigaddset(&set, SIGHUP);
}

int WaitForStop(const sigset_t& set, const std::function<void()>& reload) {
  for (;;) {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig != SIGHUP) return sig;
    reload();
  }
}

}  // namespace goheap2pprof
