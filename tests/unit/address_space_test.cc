// AddressSpaceAnchor on real child processes: live while the child runs
// its first program, dead once it executes another (same pid, same start
// time) or exits.
#include "proc/address_space.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "base/error.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

// A child that waits for a byte on a pipe, then execs /bin/sleep (or exits
// when the byte is 'x').
struct Child {
  pid_t pid = -1;
  int go = -1;
  bool reaped = false;
  Child() {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid = fork();
    if (pid == 0) {
      close(fds[1]);
      char c = 0;
      if (read(fds[0], &c, 1) != 1 || c == 'x') _exit(0);
      execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[0]);
    go = fds[1];
  }
  void Send(char c) { EXPECT_EQ(write(go, &c, 1), 1); }
  ~Child() {
    close(go);
    if (pid > 0 && !reaped) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// Until /proc/<pid>/exe names the program, at most 5 s.
bool WaitForExe(pid_t pid, const std::string& name) {
  for (int i = 0; i < 500; ++i) {
    if (ExecutableIdentity(pid).path.ends_with(name)) return true;
    usleep(10000);
  }
  return false;
}

TEST(AddressSpaceAnchor, LiveUntilExecKeepsPidAndStartTime) {
  Child child;
  std::optional<AddressSpaceAnchor> anchor = AddressSpaceAnchor::TryOpen(child.pid);
  ASSERT_TRUE(anchor.has_value());
  const ProcStat before = ReadProcStat(child.pid);
  EXPECT_TRUE(anchor->StillLive());
  child.Send('e');
  ASSERT_TRUE(WaitForExe(child.pid, "/sleep"));
  // What the start time cannot tell: the same process, another program.
  EXPECT_EQ(ReadProcStat(child.pid).start_time, before.start_time);
  EXPECT_FALSE(anchor->StillLive());
  // A new anchor is bound to the new program.
  EXPECT_TRUE(AddressSpaceAnchor::Open(child.pid).StillLive());
}

TEST(AddressSpaceAnchor, DeadOnceTheProcessExits) {
  Child child;
  AddressSpaceAnchor anchor = AddressSpaceAnchor::Open(child.pid);
  EXPECT_TRUE(anchor.StillLive());
  child.Send('x');
  int status = 0;
  ASSERT_EQ(waitpid(child.pid, &status, 0), child.pid);
  EXPECT_FALSE(anchor.StillLive());
  child.reaped = true;
}

TEST(AddressSpaceAnchor, AbsentPid) {
  EXPECT_FALSE(AddressSpaceAnchor::TryOpen(4194304 + 1).has_value());
  try {
    AddressSpaceAnchor::Open(4194304 + 1);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNoSuchProcess);
  }
}

}  // namespace
}  // namespace goheap2pprof
