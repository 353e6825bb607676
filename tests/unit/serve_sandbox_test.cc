// The capture worker's seccomp filter, applied in a forked child: what a
// capture needs works (a thread of its own: the gzip thread), what it must
// never do kills the child with SIGSYS (a new process) or is refused (an
// open for writing).
#include "agent/serve_sandbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <thread>

namespace goheap2pprof {
namespace {

// Runs body in a sandboxed child; returns its wait status. The child exits
// with body's return value.
int InSandbox(const std::function<int()>& body) {
  const pid_t child = fork();
  if (child == 0) {
    EnterCaptureSandbox({});
    _exit(body());
  }
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  return status;
}

TEST(ServeSandbox, AThreadOfItsOwnRuns) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's thread start makes system calls (pipe2) that the worker's "
                  "filter refuses; only builds without the sanitizer run threads in the worker";
#endif
  const int status = InSandbox([] {
    int value = 0;
    std::thread t([&] { value = 42; });
    t.join();
    return value == 42 ? 7 : 1;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

TEST(ServeSandbox, ANewProcessKillsTheWorker) {
  const int status = InSandbox([] {
    const pid_t p = fork();
    if (p == 0) _exit(0);
    return 3;  // not reached: fork is not allowed
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(ServeSandbox, AnOpenForWritingIsRefused) {
  const int status = InSandbox([] {
    const int fd = open("/dev/null", O_WRONLY);
    return fd < 0 && errno == EACCES ? 5 : 1;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 5);
}

}  // namespace
}  // namespace goheap2pprof
