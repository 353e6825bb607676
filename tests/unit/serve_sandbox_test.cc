// The capture worker's seccomp filter, applied in a forked child: what a
// capture needs works (a thread of its own: the gzip thread), what it must
// never do kills the child with SIGSYS (a new process) or is refused (an
// open for writing).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <ostream>
#include <string>
#include <thread>

#include "agent/worker/sandbox.h"
#include "proc/memory_writer.h"

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

// The one writer of goheap2pprof (enable-sampling's) cannot run in a
// worker: process_vm_writev kills it, even aimed at its own memory.
TEST(ServeSandbox, AWriteToAnotherProcessKillsTheWorker) {
  const int status = InSandbox([] {
    alignas(8) static uint64_t word = 0;
    ProcessWordWriter(getpid()).WriteU64(reinterpret_cast<uint64_t>(&word), 1);
    return 3;  // not reached: process_vm_writev is not allowed
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

// fcntl on a descriptor of its own: the flags can be read and set.
TEST(ServeSandbox, FcntlOnItsOwnDescriptorsWorks) {
  int p[2];  // made before the sandbox: pipe(2) is not allowed in it
  ASSERT_EQ(pipe(p), 0);
  const int status = InSandbox([&] {
    const int fl = fcntl(p[0], F_GETFL);
    if (fl < 0 || fcntl(p[0], F_SETFL, fl | O_NONBLOCK) != 0) return 2;
    if ((fcntl(p[0], F_GETFL) & O_NONBLOCK) == 0) return 3;
    if (fcntl(p[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(p[0], F_GETFD) != FD_CLOEXEC) return 4;
    return 9;
  });
  close(p[0]);
  close(p[1]);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 9);
}

// A process for a worker to aim at: a child of the test that waits.
class Victim {
 public:
  Victim() : pid_(fork()) {
    if (pid_ == 0) {
      pause();
      _exit(0);
    }
  }
  ~Victim() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  bool alive() const {
    int status = 0;
    return waitpid(pid_, &status, WNOHANG) == 0;
  }

 private:
  pid_t pid_;
};

// What once let a worker kill any process: its socket's owner set to the
// victim, SIGKILL as the I/O signal, O_ASYNC on, then one byte in.
TEST(ServeSandbox, FcntlCannotSignalAnotherProcess) {
  Victim victim;
  ASSERT_GT(victim.pid(), 0);
  int sv[2];  // made before the sandbox: socketpair(2) is not allowed in it
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int status = InSandbox([&] {
    fcntl(sv[0], F_SETOWN, victim.pid());
    fcntl(sv[0], F_SETSIG, SIGKILL);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_ASYNC);
    if (write(sv[1], "x", 1) != 1) return 2;
    usleep(100000);
    return 4;  // every step was allowed
  });
  close(sv[0]);
  close(sv[1]);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) << "status " << status;
  EXPECT_TRUE(victim.alive()) << "the victim was killed";
}

// Each step alone, and the other commands that signal or lock, kill the
// worker (SIGSYS): none returns, with EPERM or otherwise.
struct FcntlStep {
  const char* name;
  int (*call)(int fd, pid_t victim);
};

// For test listings: the command's name, not the struct's bytes.
void PrintTo(const FcntlStep& step, std::ostream* os) { *os << step.name; }

class ServeSandboxFcntl : public testing::TestWithParam<FcntlStep> {};

TEST_P(ServeSandboxFcntl, KillsTheWorker) {
  Victim victim;
  ASSERT_GT(victim.pid(), 0);
  const FcntlStep step = GetParam();
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int status = InSandbox([&] {
    if (step.call(sv[0], victim.pid()) == -1) return errno == EPERM ? 2 : 3;
    return 4;
  });
  close(sv[0]);
  close(sv[1]);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
      << step.name << ": status " << status;
  EXPECT_TRUE(victim.alive());
}

INSTANTIATE_TEST_SUITE_P(
    Commands, ServeSandboxFcntl,
    testing::Values(
        FcntlStep{"F_SETOWN", [](int fd, pid_t v) { return fcntl(fd, F_SETOWN, v); }},
        FcntlStep{"F_SETOWN_EX",
                  [](int fd, pid_t v) {
                    f_owner_ex owner{F_OWNER_PID, v};
                    return fcntl(fd, F_SETOWN_EX, &owner);
                  }},
        FcntlStep{"F_SETSIG", [](int fd, pid_t) { return fcntl(fd, F_SETSIG, SIGKILL); }},
        FcntlStep{"F_SETFL_O_ASYNC",
                  [](int fd, pid_t) { return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC); }},
        FcntlStep{"F_SETLK",
                  [](int fd, pid_t) {
                    struct flock lock {};
                    lock.l_type = F_RDLCK;
                    return fcntl(fd, F_SETLK, &lock);
                  }},
        FcntlStep{"F_DUPFD", [](int fd, pid_t) { return fcntl(fd, F_DUPFD, 10); }}),
    [](const testing::TestParamInfo<FcntlStep>& param) { return std::string(param.param.name); });

// Code cannot be made or mapped executable, and nothing is mapped shared:
// refused with EPERM (the worker lives on).
TEST(ServeSandbox, NoExecutableOrSharedMemory) {
  const int status = InSandbox([] {
    void* exec = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (exec != MAP_FAILED || errno != EPERM) return 1;
    void* shared = mmap(nullptr, 4096, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared != MAP_FAILED || errno != EPERM) return 2;
    void* data = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) return 3;
    if (mprotect(data, 4096, PROT_READ | PROT_EXEC) == 0 || errno != EPERM) return 4;
    if (mprotect(data, 4096, PROT_READ) != 0) return 5;
    return 9;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 9);
}

// A thread may not take new namespaces (as root it could): SIGSYS.
TEST(ServeSandbox, AThreadInNewNamespacesKillsTheWorker) {
  const int status = InSandbox([] {
    // A thread as pthread_create makes one, plus CLONE_NEWNET.
    static char stack[64 * 1024];
    clone([](void*) { return 0; }, stack + sizeof(stack),
          CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
              CLONE_NEWNET,
          nullptr);
    usleep(100000);
    return 4;
  });
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) << "status " << status;
}

}  // namespace
}  // namespace goheap2pprof
