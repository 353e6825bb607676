// The process facts proc/ gives the agent's scans (discovery, watch,
// liveness): the bounded small-file reader and the reads that return their
// expected failures instead of throwing them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <string>

#include "agent/common/liveness.h"
#include "agent/common/pod_identity.h"
#include "base/error.h"
#include "pprof/output.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

namespace fs = std::filesystem;

class SmallFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/goheap2pprof-proc-facts-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  fs::path dir_;
};

TEST_F(SmallFileTest, ReadsAWholeFileAndBoundsALongOne) {
  EXPECT_EQ(ReadSmallFile(Write("a", "hello\n")), "hello\n");
  EXPECT_EQ(ReadSmallFile(Write("b", std::string(100000, 'x')), 4096), std::string(4096, 'x'));
}

TEST_F(SmallFileTest, SaysWhyItCannotReadAndRefusesSymlinksAndFifos) {
  int err = 0;
  EXPECT_FALSE(ReadSmallFile((dir_ / "missing").string(), kSmallFileMax, &err));
  EXPECT_EQ(err, ENOENT);
  fs::create_symlink(Write("target", "secret"), dir_ / "link");
  EXPECT_FALSE(ReadSmallFile((dir_ / "link").string(), kSmallFileMax, &err));
  EXPECT_EQ(err, ELOOP);
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(ReadSmallFile(fifo));  // at once: no writer is waited for
}

TEST(TryParseProcStat, ReturnsTheErrorInsteadOfThrowingIt) {
  Expected<ProcStat> bad = TryParseProcStat("4242 (x) S 1 2");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::kMalformed);
  EXPECT_THROW(ParseProcStat("4242 (x) S 1 2"), Error);
}

TEST(ReadLiveProcStat, ReadsThisProcessAndNothingForAGoneOne) {
  std::optional<ProcStat> self = ReadLiveProcStat(getpid());
  ASSERT_TRUE(self);
  EXPECT_EQ(self->pid, getpid());
  EXPECT_EQ(self->start_time, ReadProcStat(getpid()).start_time);
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_FALSE(ReadLiveProcStat(child));
  EXPECT_EQ(ProcessLiveness(child, std::nullopt), Liveness::kGone);
  EXPECT_EQ(ProcessLiveness(getpid(), self->start_time), Liveness::kRunning);
}

TEST(ProcessFacts, ThisProcessOwnerExecutableAndEnvironment) {
  EXPECT_EQ(ProcessUid(getpid()), getuid());
  bool denied = true;
  std::optional<std::string> exe = ReadExeLink(getpid(), &denied);
  ASSERT_TRUE(exe);
  EXPECT_FALSE(denied);
  EXPECT_EQ(*exe, fs::read_symlink("/proc/self/exe").string());
  std::optional<struct stat> st = StatProcExe(getpid());
  ASSERT_TRUE(st);
  EXPECT_TRUE(S_ISREG(st->st_mode));
  bool seen = false;
  ForEachProcess([&](pid_t pid, const struct stat*) { seen = seen || pid == getppid(); });
  EXPECT_TRUE(seen);
}

TEST(ParseEnviron, KeepsOnlyTheWantedVariables) {
  const std::string env("A=1\0B=two=2\0C\0D=4", 17);
  std::map<std::string, std::string> got = ParseEnviron(env, {"B", "C", "D"});
  EXPECT_EQ(got, (std::map<std::string, std::string>{{"B", "two=2"}, {"D", "4"}}));
}

TEST(OwnEffectiveCapabilities, MatchesCapEffOfThisProcess) {
  std::ifstream status("/proc/self/status");
  std::string line;
  uint64_t want = 0;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) want = std::stoull(line.substr(7), nullptr, 16);
  }
  EXPECT_EQ(OwnEffectiveCapabilities(), want);
}

TEST(TryParseBundleAnnotations, ReturnsTheErrorForAConfigThatIsNotAnObject) {
  EXPECT_FALSE(TryParseBundleAnnotations("[1,2]"));
  EXPECT_TRUE(TryParseBundleAnnotations(R"({"annotations":{}})"));
}

TEST(GunzipStreamTryRead, ReturnsTheErrorForATruncatedStream) {
  const std::string gz = Gzip(std::string(1 << 20, 'x'));
  const std::string cut = gz.substr(0, gz.size() / 2);
  GunzipStream in(cut);
  std::string chunk(4096, '\0');
  Expected<size_t> n = size_t{0};
  while ((n = in.TryRead(std::span<char>(chunk.data(), chunk.size()))) && *n > 0) {
  }
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().kind(), ErrorKind::kMalformed);
}

}  // namespace
}  // namespace goheap2pprof
