// The agents' stop signals (agent/common/signals.h), checked in a child
// process so that this test binary's own signal state is left alone.
#include "agent/common/signals.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

namespace goheap2pprof {
namespace {

// Runs body in a forked child; its exit status is the test's verdict.
int InChild(int (*body)()) {
  const pid_t child = fork();
  if (child == 0) _exit(body());
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(StopSignals, BlockedForLaterThreadsTakenBySigwaitAndSigpipeIgnored) {
  EXPECT_EQ(InChild([] {
              const sigset_t stop = BlockStopSignals();
              // A thread started afterwards inherits the mask.
              bool inherited = false;
              std::thread([&] {
                sigset_t mask;
                pthread_sigmask(SIG_BLOCK, nullptr, &mask);
                inherited = sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGINT) == 1;
              }).join();
              if (!inherited) return 1;
              if (sigismember(&stop, SIGTERM) != 1 || sigismember(&stop, SIGINT) != 1) return 2;
              // SIGPIPE ignored: raising it does not end the process.
              raise(SIGPIPE);
              // A blocked SIGTERM waits for sigwait instead of killing.
              kill(getpid(), SIGTERM);
              int sig = 0;
              if (sigwait(&stop, &sig) != 0 || sig != SIGTERM) return 3;
              return 0;
            }),
            0);
}

}  // namespace
}  // namespace goheap2pprof
