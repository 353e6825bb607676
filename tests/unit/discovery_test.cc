// Discovery's allow-list (whole cgroup path elements), the rule that holds a
// worker's reply to the process a request was for, and scans that fail for
// want of descriptors (issue 22, defects 9 and 11).
#include "agent/common/discovery.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "agent/worker/worker.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

TEST(ProcessFilter, CgroupsMatchWholePathElements) {
  ProcessFilter f;
  f.allow_cgroups = {"/user.slice/user-1"};
  EXPECT_TRUE(f.AdmitsCgroup("/user.slice/user-1"));
  EXPECT_TRUE(f.AdmitsCgroup("/user.slice/user-1/anything"));
  EXPECT_TRUE(f.AdmitsCgroup("/user.slice/user-1/session-2.scope/x"));
  EXPECT_FALSE(f.AdmitsCgroup("/user.slice/user-1000.slice"));
  EXPECT_FALSE(f.AdmitsCgroup("/user.slice/user-1000.slice/session-2.scope"));
  EXPECT_FALSE(f.AdmitsCgroup("/user.slice/user-10"));
  EXPECT_FALSE(f.AdmitsCgroup("/user.slice"));
  EXPECT_FALSE(f.AdmitsCgroup("/other/user.slice/user-1"));
  EXPECT_FALSE(f.AdmitsCgroup(""));
  // A trailing slash names the same subtree.
  f.allow_cgroups = {"/user.slice/user-1/"};
  EXPECT_TRUE(f.AdmitsCgroup("/user.slice/user-1"));
  EXPECT_TRUE(f.AdmitsCgroup("/user.slice/user-1/anything"));
  EXPECT_FALSE(f.AdmitsCgroup("/user.slice/user-1000.slice"));
  // "/" is every cgroup; an empty list admits anything.
  f.allow_cgroups = {"/"};
  EXPECT_TRUE(f.AdmitsCgroup("/"));
  EXPECT_TRUE(f.AdmitsCgroup("/system.slice/x.service"));
  f.allow_cgroups = {};
  EXPECT_TRUE(f.AdmitsCgroup("/anything"));
  // Any of several.
  f.allow_cgroups = {"/a", "/system.slice/app.service"};
  EXPECT_TRUE(f.AdmitsCgroup("/system.slice/app.service"));
  EXPECT_FALSE(f.AdmitsCgroup("/system.slice/app.service2"));
  EXPECT_TRUE(f.AdmitsCgroup("/a/b"));
  EXPECT_FALSE(f.AdmitsCgroup("/ab"));
}

TEST(ProcessFilter, ReadProcessFactsUsesWholeElements) {
  // This process's own cgroup, and a string prefix of it that ends inside
  // a path element: only the first admits it.
  std::optional<ProcessOwner> own = ReadProcessOwner(getpid());
  ASSERT_TRUE(own);
  ProcessFilter f;
  f.allow_cgroups = {own->cgroup};
  EXPECT_TRUE(ReadProcessFacts(getpid(), f, {}));
  if (own->cgroup.size() > 1 && own->cgroup.back() != '/') {
    f.allow_cgroups = {own->cgroup.substr(0, own->cgroup.size() - 1)};
    EXPECT_FALSE(ReadProcessFacts(getpid(), f, {}));
  }
}

// A reply as a worker gives it for a capture of the process with this start
// time and owner.
WorkerReply Captured(uint64_t start_time, uid_t uid, const std::string& cgroup) {
  WorkerReply r;
  r.start_time = start_time;
  r.body = "profile";
  r.owner = ProcessOwner{uid, cgroup};
  return r;
}

ProcessFacts Requested() {
  ProcessFacts f;
  f.pid = 1234;
  f.start_time = 500;
  f.uid = 1000;
  f.cgroup = "/user.slice/user-1000.slice";
  return f;
}

TEST(KeepToRequestedProcess, TheRequestedAdmittedProcessPasses) {
  ProcessFilter filter;
  filter.allow_uids = {1000};
  WorkerReply r = Captured(500, 1000, "/user.slice/user-1000.slice");
  KeepToRequestedProcess(Requested(), filter, r);
  EXPECT_EQ(r.error_kind, 0);
  EXPECT_EQ(r.body, "profile");
}

TEST(KeepToRequestedProcess, AnotherProcessUnderThePidIsReplaced) {
  // Pid reused between discovery and the capture, by a process the filter
  // would admit too: still not the process asked for.
  WorkerReply r = Captured(501, 1000, "/user.slice/user-1000.slice");
  KeepToRequestedProcess(Requested(), {}, r);
  EXPECT_EQ(r.error_kind, static_cast<int32_t>(ErrorKind::kNoSuchProcess));
  EXPECT_TRUE(r.replaced);
  EXPECT_TRUE(r.body.empty());
  // The same for a failed capture of the other process: its error (409,
  // 404, ...) is not an answer about the requested one.
  WorkerReply failed;
  failed.start_time = 501;
  failed.error_kind = static_cast<int32_t>(ErrorKind::kSamplingDisabled);
  failed.message = "sampling is off in the other process";
  KeepToRequestedProcess(Requested(), {}, failed);
  EXPECT_EQ(failed.error_kind, static_cast<int32_t>(ErrorKind::kNoSuchProcess));
  EXPECT_TRUE(failed.replaced);
}

TEST(KeepToRequestedProcess, AnOwnerTheFilterRefusesIsAbsent) {
  ProcessFilter filter;
  filter.allow_uids = {1000};
  // Same process (start time), but its uid changed since discovery saw it.
  WorkerReply r = Captured(500, 65534, "/user.slice/user-1000.slice");
  KeepToRequestedProcess(Requested(), filter, r);
  EXPECT_EQ(r.error_kind, static_cast<int32_t>(ErrorKind::kNoSuchProcess));
  EXPECT_FALSE(r.replaced);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(r.message, "no such process: 1234");
  // Moved to a cgroup outside the allowed subtree.
  ProcessFilter cg;
  cg.allow_cgroups = {"/user.slice/user-1000.slice"};
  WorkerReply moved = Captured(500, 1000, "/user.slice/user-10000.slice");
  KeepToRequestedProcess(Requested(), cg, moved);
  EXPECT_EQ(moved.error_kind, static_cast<int32_t>(ErrorKind::kNoSuchProcess));
  // A deny-listed pid.
  ProcessFilter deny;
  deny.deny_pids = {1234};
  WorkerReply denied = Captured(500, 1000, "/");
  KeepToRequestedProcess(Requested(), deny, denied);
  EXPECT_EQ(denied.error_kind, static_cast<int32_t>(ErrorKind::kNoSuchProcess));
}

TEST(KeepToRequestedProcess, ASuccessWithoutOwnerIsNeverServed) {
  WorkerReply r = Captured(500, 1000, "/");
  r.owner.reset();
  KeepToRequestedProcess(Requested(), {}, r);
  EXPECT_NE(r.error_kind, 0);
  EXPECT_TRUE(r.body.empty());
}

TEST(WorkerWire, ReplyCarriesTheOwner) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  WorkerReply sent = Captured(77, 4321, "/system.slice/app.service");
  sent.message = "m";
  ASSERT_TRUE(WriteWorkerReply(sv[0], sent));
  WorkerReply got;
  ASSERT_EQ(ReadWorkerReply(sv[1], got, MonotonicMillis() + 5000, uint64_t{1} << 20),
            ReplyReadError::kNone);
  ASSERT_TRUE(got.owner);
  EXPECT_EQ(got.owner->uid, 4321u);
  EXPECT_EQ(got.owner->cgroup, "/system.slice/app.service");
  EXPECT_EQ(got.body, "profile");
  EXPECT_EQ(got.message, "m");
  EXPECT_EQ(got.start_time, 77u);
  WorkerReply none;
  ASSERT_TRUE(WriteWorkerReply(sv[0], none));
  ASSERT_EQ(ReadWorkerReply(sv[1], got, MonotonicMillis() + 5000, uint64_t{1} << 20),
            ReplyReadError::kNone);
  EXPECT_FALSE(got.owner);
  close(sv[0]);
  close(sv[1]);
}

// Lowers this process's descriptor limit to what it has open, so that the
// next open fails with EMFILE; restores it when destroyed.
class NoFreeDescriptors {
 public:
  NoFreeDescriptors() {
    getrlimit(RLIMIT_NOFILE, &saved_);
    // The lowest free descriptor: every one below it is in use.
    int lowest = dup(0);
    close(lowest);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(lowest);
    ok_ = setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~NoFreeDescriptors() { setrlimit(RLIMIT_NOFILE, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

TEST(Discovery, AScanWithoutDescriptorsKeepsTheLastGoodList) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizers' runtime needs descriptors of its own (UBSan's vptr check "
                  "probes memory through a pipe), so it reports false errors once none are left";
#endif
  // A child that lives through the test: at least one process to find.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  Discovery::Options options;
  Discovery d(options, [](pid_t) {
    ExeInfo go;
    go.is_go = true;
    go.go_version = "go1.22";
    return go;
  });
  d.Scan();
  std::vector<GoProcess> before = d.Processes();
  auto has_child = [child](const std::vector<GoProcess>& list) {
    return std::any_of(list.begin(), list.end(),
                       [child](const GoProcess& p) { return p.facts.pid == child; });
  };
  EXPECT_TRUE(has_child(before));
  EXPECT_EQ(d.scan_errors(), 0u);
  const double last_success = d.last_success_seconds();
  EXPECT_GT(last_success, 0);
  {
    NoFreeDescriptors exhausted;
    ASSERT_TRUE(exhausted.ok());
    d.Scan();
  }
  std::vector<GoProcess> after = d.Processes();
  EXPECT_TRUE(has_child(after)) << "the failed scan emptied the list";
  EXPECT_EQ(after.size(), before.size());
  EXPECT_EQ(d.scan_errors(), 1u);
  EXPECT_EQ(d.last_success_seconds(), last_success);
  // Descriptors back: the next scan succeeds again.
  d.Scan();
  EXPECT_EQ(d.scan_errors(), 1u);
  EXPECT_GE(d.last_success_seconds(), last_success);
  EXPECT_TRUE(has_child(d.Processes()));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(Discovery, VisibleSaysWhenDescriptorsAreOut) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizers' runtime needs descriptors of its own (UBSan's vptr check "
                  "probes memory through a pipe), so it reports false errors once none are left";
#endif
  // Asked about a pid without descriptors, discovery throws an I/O error
  // rather than answering that the process does not exist.
  Discovery d(Discovery::Options{}, [](pid_t) { return ExeInfo{}; });
  NoFreeDescriptors exhausted;
  ASSERT_TRUE(exhausted.ok());
  EXPECT_THROW(d.Visible(getppid()), Error);
}

// The readlink of /proc/<pid>/exe, or "" if it cannot be read.
std::string ExeOf(pid_t pid) {
  char buf[4096];
  ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

TEST(Discovery, AProcessThatExecsAGoProgramIsFoundUnderItsOldPid) {
  // A scan passes over a process whose executable it knows is not Go
  // without reading its other facts (issue 27: 800 of a node's 1,000
  // processes). exec keeps the pid and start time but changes the
  // executable: the next scan must find the process, and probe the new
  // executable once.
  char dir_template[] = "/tmp/goheap2pprof-discovery.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string go_exe = dir + "/gosleep";  // an executable of its own (inode)
  std::filesystem::copy_file("/bin/sleep", go_exe);
  int go_on[2];
  ASSERT_EQ(pipe(go_on), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    close(go_on[1]);
    if (read(go_on[0], &c, 1) == 1) execl(go_exe.c_str(), "gosleep", "60", nullptr);
    _exit(1);
  }
  close(go_on[0]);
  std::map<std::string, int> probed;  // executable path -> probes
  Discovery d(Discovery::Options{}, [&](pid_t pid) {
    ExeInfo info;
    const std::string exe = ExeOf(pid);
    if (exe.empty()) return info;  // gone: transient, not cached
    ++probed[exe];
    info.is_go = exe == go_exe;
    if (info.is_go)
      info.go_version = "go1.26.8";
    else
      info.error = "not a Go program";
    return info;
  });
  auto find_child = [&]() -> std::optional<GoProcess> {
    for (const GoProcess& p : d.Processes()) {
      if (p.facts.pid == child) return p;
    }
    return std::nullopt;
  };
  const std::string own_exe = ExeOf(getpid());
  d.Scan();
  d.Scan();  // the fast path: its executable is known now
  EXPECT_FALSE(find_child());
  EXPECT_EQ(probed[own_exe], 1);
  ASSERT_EQ(write(go_on[1], "x", 1), 1);
  for (int i = 0; i < 500 && ExeOf(child) != go_exe; ++i) usleep(10000);
  ASSERT_EQ(ExeOf(child), go_exe);
  d.Scan();
  std::optional<GoProcess> found = find_child();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->facts.exe, go_exe);
  EXPECT_EQ(found->exe.go_version, "go1.26.8");
  d.Scan();
  EXPECT_TRUE(find_child());
  EXPECT_EQ(probed[go_exe], 1);
  EXPECT_EQ(probed[own_exe], 1);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(go_on[1]);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace goheap2pprof
