// "Same process still running" (agent/common/liveness.h) on real processes:
// this one, a zombie child, a reaped child, and a start time that is not the
// pid's.
#include "agent/common/liveness.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

TEST(Liveness, ThisProcessRunsUnderItsStartTimeOnly) {
  const uint64_t start = ReadProcStat(getpid()).start_time;
  EXPECT_EQ(ProcessLiveness(getpid(), start), Liveness::kRunning);
  EXPECT_EQ(ProcessLiveness(getpid(), std::nullopt), Liveness::kRunning);
  EXPECT_EQ(ProcessLiveness(getpid(), start + 1), Liveness::kGone);
}

TEST(Liveness, AZombieHasEndedAndAReapedChildIsGone) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  const uint64_t start = ReadProcStat(child).start_time;
  // Unreaped, the child turns into a zombie once it has exited; bounded wait.
  char state = '?';
  for (int i = 0; i < 500 && state != 'Z'; ++i) {
    state = ReadProcStat(child).state;
    if (state != 'Z') std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(state, 'Z');
  EXPECT_EQ(ProcessLiveness(child, start), Liveness::kGone);
  EXPECT_EQ(ProcessLiveness(child, std::nullopt), Liveness::kGone);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_EQ(ProcessLiveness(child, start), Liveness::kGone);
}

TEST(Liveness, NoProcessAtAnImpossiblePid) {
  // Above the kernel's PID_MAX_LIMIT (2^22): never a process.
  EXPECT_EQ(ProcessLiveness((1 << 22) + 1, std::nullopt), Liveness::kGone);
}

}  // namespace
}  // namespace goheap2pprof
