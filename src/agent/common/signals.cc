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

}  // namespace goheap2pprof
