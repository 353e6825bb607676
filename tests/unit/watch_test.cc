// The pieces of `watch` around the trigger machine: file names, rotation
// that deletes only our own files, watch.jsonl, how a process ended (on real
// child processes left as zombies), PSI triggers on this kernel, and the
// strict option parsers.
#include "agent/watch/watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "agent/watch/files.h"
#include "agent/watch/process.h"
#include "agent/watch/psi.h"
#include "base/error.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/g2p-watch-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string Touch(const std::string& name) const {
    std::ofstream(path_ + "/" + name) << name;
    return path_ + "/" + name;
  }

 private:
  std::string path_;
};

TEST(WatchFiles, NamesAreUtcSortableAndSafe) {
  // 2026-11-30 21:45:01.123 UTC
  auto t = std::chrono::system_clock::time_point(milliseconds(1796075101123));
  EXPECT_EQ(UtcFileStamp(t), "20261130T214501.123Z");
  EXPECT_EQ(UtcIsoTime(t), "2026-11-30T21:45:01.123Z");
  EXPECT_EQ(ProfileFileName("my server", 42, t, "above90"),
            "my_server-42-20261130T214501.123Z-above90.heap.pb.gz");
  EXPECT_EQ(ProfileFileName("../..", 7, t, "rss-above-1.5GiB"),
            ".._..-7-20261130T214501.123Z-rss-above-1.5GiB.heap.pb.gz");
  EXPECT_EQ(ProfileFileName("", 7, t, ""), "go-7-20261130T214501.123Z-trigger.heap.pb.gz");
  // The growth report's too: a comm may hold a terminal escape.
  EXPECT_EQ(GrowthReportBaseName("gr\x1B[2J/\xFF", 9), "gr__2J__-9-growth");
}

TEST(FileRotation, KeepsTheNewestAndDeletesOnlyOwnFiles) {
  TempDir dir;
  const std::string foreign = dir.Touch("someone-elses.heap.pb.gz");
  FileRotation rot(2);
  std::vector<std::string> deleted;
  for (int i = 0; i < 5; ++i) {
    for (const FileRotation::Written& w : rot.Add(dir.Touch("p" + std::to_string(i)))) {
      EXPECT_TRUE(FileRotation::Delete(w));
      deleted.push_back(fs::path(w.path).filename());
    }
  }
  EXPECT_EQ(deleted, (std::vector<std::string>{"p0", "p1", "p2"}));
  EXPECT_EQ(rot.size(), 2u);
  EXPECT_TRUE(fs::exists(foreign));
  EXPECT_TRUE(fs::exists(dir.path() + "/p3"));
  EXPECT_TRUE(fs::exists(dir.path() + "/p4"));
  EXPECT_FALSE(fs::exists(dir.path() + "/p0"));
}

TEST(FileRotation, LeavesAFileReplacedBySomeoneElse) {
  TempDir dir;
  FileRotation rot(1);
  const std::string a = dir.Touch("a");
  EXPECT_TRUE(rot.Add(a).empty());
  // Someone replaces our file with theirs (a new inode) under the same name.
  const std::string theirs = dir.Touch("theirs");
  fs::rename(theirs, a);
  std::vector<FileRotation::Written> drop = rot.Add(dir.Touch("b"));
  ASSERT_EQ(drop.size(), 1u);
  EXPECT_FALSE(FileRotation::Delete(drop[0]));
  EXPECT_TRUE(fs::exists(a));
}

TEST(FileRotation, AGoroutineProfileGoesWithItsHeapProfile) {
  EXPECT_EQ(GoroutineFileName("srv-42-20261130T214501.123Z-above90.heap.pb.gz"),
            "srv-42-20261130T214501.123Z-above90.goroutine.pb.gz");
  TempDir dir;
  FileRotation rot(1);
  rot.AddCompanion(dir.Touch("before-any"));  // nothing to attach to: ignored
  EXPECT_TRUE(rot.Add(dir.Touch("a.heap.pb.gz")).empty());
  rot.AddCompanion(dir.Touch("a.goroutine.pb.gz"));
  std::vector<FileRotation::Written> drop = rot.Add(dir.Touch("b.heap.pb.gz"));
  ASSERT_EQ(drop.size(), 1u);
  ASSERT_EQ(drop[0].companions.size(), 1u);
  EXPECT_EQ(fs::path(drop[0].companions[0].path).filename(), "a.goroutine.pb.gz");
  EXPECT_TRUE(FileRotation::Delete(drop[0].companions[0]));
  EXPECT_FALSE(fs::exists(dir.path() + "/a.goroutine.pb.gz"));
  EXPECT_TRUE(fs::exists(dir.path() + "/before-any"));
}

TEST(WatchLog, AppendsOneLinePerRecord) {
  TempDir dir;
  const std::string path = dir.path() + "/watch.jsonl";
  OutputDir out(dir.path());
  {
    WatchLog log(out, "watch.jsonl");
    EXPECT_TRUE(log.Append({{"pid", 1}, {"reason", "baseline"}}));
  }
  WatchLog again(out, "watch.jsonl");  // appends, never truncates
  EXPECT_TRUE(again.Append({{"pid", 2}, {"skipped", "cool-down: 5 ms left"}}));
  std::ifstream in(path);
  std::string l1, l2, l3;
  std::getline(in, l1);
  std::getline(in, l2);
  EXPECT_EQ(l1, R"({"pid":1,"reason":"baseline"})");
  EXPECT_EQ(l2, R"({"pid":2,"skipped":"cool-down: 5 ms left"})");
  EXPECT_FALSE(std::getline(in, l3));
  EXPECT_THROW(OutputDir("/nonexistent-dir"), Error);
}

TEST(WatchLog, ALostRecordLeavesNoTornLineAndIsCounted) {
  TempDir dir;
  OutputDir out(dir.path());
  WatchLog log(out, "watch.jsonl");
  ASSERT_TRUE(log.Append({{"n", 1}}));  // {"n":1}\n: 8 bytes
  // A file size limit stands for a full disk: the next record fits in part
  // (a torn line), the one after not at all.
  struct sigaction ignore {
  }, old_action{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ignore, &old_action), 0);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 20;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const bool second = log.Append({{"n", 2}, {"pad", "xxxxxxxxxxxxxxxxxxxx"}});
  const bool third = log.Append({{"n", 3}, {"pad", "xxxxxxxxxxxxxxxxxxxx"}});
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
  ASSERT_EQ(sigaction(SIGXFSZ, &old_action, nullptr), 0);
  EXPECT_FALSE(second);
  EXPECT_FALSE(third);
  EXPECT_EQ(log.lost(), 2u);
  EXPECT_EQ(log.last_error(), std::strerror(EFBIG));
  std::stringstream torn;
  torn << std::ifstream(dir.path() + "/watch.jsonl").rdbuf();
  EXPECT_EQ(torn.str(), "{\"n\":1}\n");
  ASSERT_TRUE(log.Append({{"n", 4}}));
  EXPECT_EQ(log.lost(), 0u);
  std::ifstream in(dir.path() + "/watch.jsonl");
  std::string l1, l2, l3, l4;
  std::getline(in, l1);
  std::getline(in, l2);
  std::getline(in, l3);
  EXPECT_EQ(l1, R"({"n":1})");
  const nlohmann::json gap = nlohmann::json::parse(l2);
  EXPECT_EQ(gap["event"], "records-lost");
  EXPECT_EQ(gap["count"], 2);
  EXPECT_EQ(l3, R"({"n":4})");
  EXPECT_FALSE(std::getline(in, l4));
}

ErrorKind WatchKindOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kInternal;
}

TEST(OutputDir, RefusesADirectoryOthersCanWriteWithoutTheStickyBit) {
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  EXPECT_EQ(WatchKindOf([&] { OutputDir d(dir.path()); }), ErrorKind::kUsage);
  ASSERT_EQ(::chmod(dir.path().c_str(), 01777), 0);  // as /tmp: others cannot replace our files
  EXPECT_NO_THROW(OutputDir d(dir.path()));
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  EXPECT_NO_THROW(OutputDir d(dir.path()));
}

TEST(OutputDir, RefusesADirectoryOfAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give the directory to another user";
  TempDir dir;
  ASSERT_EQ(::chown(dir.path().c_str(), 12345, 12345), 0);
  EXPECT_EQ(WatchKindOf([&] { OutputDir d(dir.path()); }), ErrorKind::kUsage);
}

TEST(OutputDir, WritesThroughNoPlantedLink) {
  TempDir dir;
  const std::string victim = dir.Touch("victim");
  ASSERT_EQ(::symlink(victim.c_str(), (dir.path() + "/p.heap.pb.gz").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir.path() + "/q.heap.pb.gz").c_str(), 0600), 0);
  OutputDir out(dir.path());
  out.WriteAtomically("p.heap.pb.gz", "profile");
  out.WriteAtomically("q.heap.pb.gz", "profile");  // must not block on the FIFO
  std::stringstream v, p;
  v << std::ifstream(victim).rdbuf();
  p << std::ifstream(dir.path() + "/p.heap.pb.gz").rdbuf();
  EXPECT_EQ(v.str(), "victim");
  EXPECT_EQ(p.str(), "profile");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir.path() + "/p.heap.pb.gz")));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir.path() + "/q.heap.pb.gz")));
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 3);
}

TEST(OutputDir, AppendsToNoLinkFifoOrForeignFile) {
  TempDir dir;
  const std::string victim = dir.Touch("victim");
  ASSERT_EQ(::symlink(victim.c_str(), (dir.path() + "/link.jsonl").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir.path() + "/fifo.jsonl").c_str(), 0600), 0);
  ASSERT_EQ(::link(victim.c_str(), (dir.path() + "/hard.jsonl").c_str()), 0);
  OutputDir out(dir.path());
  EXPECT_EQ(WatchKindOf([&] { out.OpenForAppend("link.jsonl"); }), ErrorKind::kIo);
  EXPECT_EQ(WatchKindOf([&] { out.OpenForAppend("fifo.jsonl"); }), ErrorKind::kIo);
  EXPECT_EQ(WatchKindOf([&] { out.OpenForAppend("hard.jsonl"); }), ErrorKind::kIo);
  EXPECT_TRUE(out.OpenForAppend("new.jsonl").valid());
}

TEST(ParseZombieStat, ReadsStateStartTimeAndExitCode) {
  std::string line =
      "4242 (a) b) Z 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 0 0 "
      "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 9\n";
  std::optional<ZombieStat> z = ParseZombieStat(line);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->state, 'Z');
  EXPECT_EQ(z->start_time, 987654u);
  EXPECT_EQ(z->exit_code, 9);
  EXPECT_FALSE(ParseZombieStat("12 (x) S 1 2 3"));
  EXPECT_FALSE(ParseZombieStat(""));
}

// Forks a child that runs `body` and returns its pid, unreaped.
template <typename F>
pid_t WatchChild(F body) {
  pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  return pid;
}

// Waits (bounded) until the pidfd reports the end.
bool WaitEnded(const ProcessEndObserver& obs) {
  for (int i = 0; i < 500 && !obs.Exited(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  return obs.Exited();
}

TEST(ProcessEndObserver, ExitCodeOfAZombie) {
  pid_t pid = WatchChild([] {
    std::this_thread::sleep_for(milliseconds(100));
    _exit(3);
  });
  ProcessEndObserver obs(pid, ReadProcStat(pid).start_time);
  EXPECT_FALSE(obs.Exited());
  ASSERT_TRUE(WaitEnded(obs));
  ProcessEnd end = obs.Observe();  // not reaped yet: a zombie
  ASSERT_TRUE(end.wait_status);
  EndSummary s = DescribeEnd(end, 0, 0);
  EXPECT_EQ(s.how, "exit");
  EXPECT_EQ(s.exit_code, 3);
  EXPECT_EQ(s.oom_kill_rose, false);
  EXPECT_EQ(s.text,
            "exited with code 3; its memory cgroup's oom_kill counter did not change while "
            "it was watched (0): not an OOM kill");
  waitpid(pid, nullptr, 0);
}

TEST(ProcessEndObserver, SignalOfAZombie) {
  pid_t pid = WatchChild([] { pause(); });
  ProcessEndObserver obs(pid, ReadProcStat(pid).start_time);
  kill(pid, SIGKILL);
  ASSERT_TRUE(WaitEnded(obs));
  // The pidfd may report the exit a moment before the zombie's status is
  // visible (exit_notify runs after the pidfd wakes); wait for state Z.
  ProcessEnd end;
  for (int i = 0; i < 100; ++i) {
    end = obs.Observe();
    if (end.wait_status) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_TRUE(end.wait_status) << end.status_unknown_because;
  EndSummary s = DescribeEnd(end, 1, 2);
  EXPECT_EQ(s.how, "signal");
  EXPECT_EQ(s.signal, SIGKILL);
  EXPECT_EQ(s.oom_kill_rose, true);
  EXPECT_EQ(s.text,
            "killed by signal 9 (SIGKILL); its memory cgroup's oom_kill counter rose "
            "from 1 to 2 while it was watched: the OOM killer killed it");
  waitpid(pid, nullptr, 0);
}

TEST(ProcessEndObserver, ReapedBeforeWeLookedIsUnknown) {
  pid_t pid = WatchChild([] { _exit(0); });
  ProcessEndObserver obs(pid, ReadProcStat(pid).start_time);
  ASSERT_TRUE(WaitEnded(obs));
  waitpid(pid, nullptr, 0);  // the parent wins the race
  ProcessEnd end = obs.Observe();
  EXPECT_FALSE(end.wait_status);
  EndSummary s = DescribeEnd(end, 0, 1);
  EXPECT_EQ(s.how, "unknown");
  EXPECT_FALSE(s.signal);
  EXPECT_NE(s.text.find("reaped it before its exit status could be read"), std::string::npos);
  EXPECT_NE(s.text.find("most likely the OOM killer killed it"), std::string::npos);
  EXPECT_NE(DescribeEnd(end, std::nullopt, std::nullopt).text.find("no oom_kill counter"),
            std::string::npos);
}

TEST(ProcessEndObserver, RefusesAPidThatIsGone) {
  pid_t pid = WatchChild([] { _exit(0); });
  uint64_t start = ReadProcStat(pid).start_time;
  waitpid(pid, nullptr, 0);
  EXPECT_THROW(ProcessEndObserver(pid, start), Error);
}

TEST(Psi, ParsesSpecsAndRejectsWhatTheKernelWould) {
  PsiSpec s = ParsePsiSpec("some:150ms/1s");
  EXPECT_FALSE(s.full);
  EXPECT_EQ(s.stall.count(), 150000);
  EXPECT_EQ(s.window.count(), 1000000);
  EXPECT_EQ(PsiTriggerLine(s), std::string("some 150000 1000000\0", 20));
  EXPECT_TRUE(ParsePsiSpec("full:1s/2s").full);
  for (const char* bad : {"", "some", "some:150ms", "half:1ms/1s", "some:150/1s", "some:1s/100ms",
                          "some:2s/1s", "some:0ms/1s", "some:1s/11s", "some:150ms/1s/2"}) {
    EXPECT_THROW(ParsePsiSpec(bad), Error) << bad;
  }
}

bool HasCapSysResource() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> 24) & 1;
  }
  return false;
}

TEST(Psi, RegistersATriggerOnTheSystemPressureFile) {
  const std::string file = "/proc/pressure/memory";
  // A 2 s window: accepted with or without CAP_SYS_RESOURCE (Linux 6.4+).
  const PsiSpec spec = ParsePsiSpec("some:150ms/2s");
  struct stat st;
  if (::stat(file.c_str(), &st) != 0) {
    // No PSI here: the error must say so.
    try {
      RegisterPsiTrigger(file, spec);
      ADD_FAILURE() << "registration succeeded without " << file;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("PSI is not available"), std::string::npos) << e.what();
    }
    GTEST_SKIP() << file << " does not exist on this kernel (checked the error instead)";
  }
  UniqueFd fd = RegisterPsiTrigger(file, spec);
  EXPECT_TRUE(fd.valid());
  // The kernel accepted it: the descriptor is a trigger now, and another
  // write on it is refused (one trigger per descriptor).
  std::string again = PsiTriggerLine(spec);
  EXPECT_LT(::write(fd.get(), again.data(), again.size()), 0);
  EXPECT_EQ(errno, EBUSY);
}

TEST(Psi, OneSecondWindowNeedsCapSysResource) {
  const std::string file = "/proc/pressure/memory";
  struct stat st;
  if (::stat(file.c_str(), &st) != 0) GTEST_SKIP() << file << " does not exist on this kernel";
  const PsiSpec spec = ParsePsiSpec("some:150ms/1s");
  if (HasCapSysResource()) {
    EXPECT_TRUE(RegisterPsiTrigger(file, spec).valid());
    return;
  }
  try {
    RegisterPsiTrigger(file, spec);
    FAIL() << "the kernel accepted a 1s window without CAP_SYS_RESOURCE";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPermission);
    EXPECT_NE(std::string(e.what()).find("multiples of 2s"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("CAP_SYS_RESOURCE"), std::string::npos);
  }
}

TEST(Psi, APlantedFifoOrSymlinkIsNoPressureFile) {
  // A target that shapes its own mount namespace could put these where
  // memory.pressure should be: a FIFO (our trigger line would go into its
  // pipe, and its writes would fire the trigger), or a symlink (we would
  // write the trigger line, read-write, into the file it names).
  const fs::path dir = fs::temp_directory_path() / ("psi_test." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  std::ofstream(dir / "victim") << "keep\n";
  fs::create_symlink(dir / "victim", dir / "link");
  const PsiSpec spec = ParsePsiSpec("some:150ms/2s");
  for (const char* name : {"fifo", "link"}) {
    SCOPED_TRACE(name);
    Expected<UniqueFd> fd = TryRegisterPsiTrigger((dir / name).string(), spec);
    EXPECT_FALSE(fd.has_value());
  }
  std::ifstream in(dir / "victim");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep\n");
  fs::remove_all(dir);
}

TEST(Psi, ClearErrorWithoutPsi) {
  try {
    RegisterPsiTrigger("/nonexistent/pressure/memory", ParsePsiSpec("some:150ms/1s"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("PSI is not available"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("CONFIG_PSI"), std::string::npos);
  }
}

TEST(WatchOptionParsers, StrictValues) {
  EXPECT_EQ(ParsePercentList("90,70%"), (std::vector<double>{70, 90}));
  EXPECT_EQ(ParsePercentList("92.5%"), (std::vector<double>{92.5}));
  for (const char* bad : {"", "0", "101", "x", "70,,90", "-5"}) {
    EXPECT_THROW(ParsePercentList(bad), Error) << bad;
  }
  EXPECT_EQ(ParseSizeList("1G,512M"), (std::vector<uint64_t>{512ull << 20, 1ull << 30}));
  EXPECT_EQ(ParseSizeList("1.5GiB"), (std::vector<uint64_t>{3ull << 29}));
  EXPECT_EQ(ParseSizeList("4096"), (std::vector<uint64_t>{4096}));
  for (const char* bad : {"", "M", "1X", "-1M", "0"}) {
    EXPECT_THROW(ParseSizeList(bad), Error) << bad;
  }
  TriggerConfig c;
  ParseEventList("oom", c);
  EXPECT_TRUE(c.on_oom);
  EXPECT_FALSE(c.on_max);
  ParseEventList("max,oom", c);
  EXPECT_TRUE(c.on_max);
  EXPECT_THROW(ParseEventList("high", c), Error);
}

}  // namespace
}  // namespace goheap2pprof
