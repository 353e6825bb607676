// The relay of a capture worker's stderr (agent/worker/stderr.h): every line
// names the worker and its request, long lines are cut, and a request's
// stderr is bounded, the rest counted in one line.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/worker/stderr.h"

namespace goheap2pprof {
namespace {

// What the relay printed (to a file in memory), one string per line.
class Printed {
 public:
  Printed() : fd_(memfd_create("printed", MFD_CLOEXEC)) { EXPECT_GE(fd_, 0); }
  ~Printed() { close(fd_); }
  int fd() const { return fd_; }
  std::vector<std::string> Lines() {
    std::string all;
    char buf[65536];
    ssize_t n;
    while ((n = pread(fd_, buf, sizeof(buf), static_cast<off_t>(all.size()))) > 0) {
      all.append(buf, static_cast<size_t>(n));
    }
    std::vector<std::string> lines;
    std::istringstream in(all);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

 private:
  int fd_;
};

TEST(WorkerStderr, EveryLineNamesTheWorkerAndItsRequest) {
  Printed out;
  WorkerStderr relay(4242, out.fd());
  relay.Feed("before any request\n");
  relay.BeginRequest("heap of pid 17");
  relay.Feed("one\ntw");
  relay.Feed("o\n");
  relay.BeginRequest("probe of pid 18");
  relay.Feed("unfinished");
  relay.Finish();
  EXPECT_EQ(out.Lines(), (std::vector<std::string>{
                             "goheap2pprof worker 4242 (starting): before any request",
                             "goheap2pprof worker 4242 (heap of pid 17): one",
                             "goheap2pprof worker 4242 (heap of pid 17): two",
                             "goheap2pprof worker 4242 (probe of pid 18): unfinished",
                         }));
}

TEST(WorkerStderr, LongLinesAreCut) {
  Printed out;
  WorkerStderr relay(7, out.fd(), {.max_line = 10, .budget = 1000});
  relay.BeginRequest("heap of pid 1");
  relay.Feed(std::string(25, 'x') + "\nshort\n");
  relay.Finish();
  EXPECT_EQ(out.Lines(),
            (std::vector<std::string>{
                "goheap2pprof worker 7 (heap of pid 1): xxxxxxxxxx … (cut)",
                "goheap2pprof worker 7 (heap of pid 1): short",
                "goheap2pprof worker 7 (heap of pid 1): … 15 bytes dropped (lines are cut at 10 "
                "bytes, a request gets 1000)",
            }));
}

TEST(WorkerStderr, ARequestGetsItsBudgetThenOneLineSaysWhatWasDropped) {
  Printed out;
  WorkerStderr relay(7, out.fd(), {.max_line = 100, .budget = 12});
  relay.BeginRequest("heap of pid 1");
  for (int i = 0; i < 1000; ++i) relay.Feed("12345\n");  // 2 lines fit, 998 do not
  relay.BeginRequest("heap of pid 2");                   // a fresh budget
  relay.Feed("again\n");
  relay.Finish();
  const std::vector<std::string> lines = out.Lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "goheap2pprof worker 7 (heap of pid 1): 12345");
  EXPECT_EQ(lines[1], "goheap2pprof worker 7 (heap of pid 1): 12345");
  EXPECT_EQ(lines[2],
            "goheap2pprof worker 7 (heap of pid 1): … 4990 bytes dropped (lines are cut at 100 "
            "bytes, a request gets 12)");
  EXPECT_EQ(lines[3], "goheap2pprof worker 7 (heap of pid 2): again");
}

// A worker parses hostile bytes and may print them (or be made to): its
// lines reach the server's log and terminal with control characters
// escaped and invalid UTF-8 replaced.
TEST(WorkerStderr, ControlBytesAreEscapedAndInvalidUtf8Replaced) {
  Printed out;
  WorkerStderr relay(7, out.fd());
  relay.BeginRequest("heap of pid 1");
  relay.Feed("\x1B]0;owned\x07\x1B[2Jname \xFF\xFE\rmain.gr\x9BwHeap\tok\n");
  relay.Finish();
  EXPECT_EQ(out.Lines(),
            (std::vector<std::string>{
                "goheap2pprof worker 7 (heap of pid 1): \\x1b]0;owned\\x07\\x1b[2Jname "
                "\xEF\xBF\xBD\xEF\xBF\xBD\\x0dmain.gr\\x9bwHeap\tok",
            }));
}

// The relay on a real pipe: a worker that floods its stderr costs the
// server its budget, whatever it writes.
TEST(WorkerStderr, RelayOnAPipeIsBounded) {
  int in[2];
  ASSERT_EQ(pipe2(in, O_CLOEXEC), 0);
  Printed out;
  WorkerStderr relay(99, out.fd());
  relay.BeginRequest("allocs of pid 5", in[0]);
  std::thread reader([&] { RelayWorkerStderr(in[0], relay); });
  const std::string line(1000, 'a');
  for (int i = 0; i < 1024; ++i) {  // 1 MiB in 1000-byte lines
    ASSERT_EQ(write(in[1], (line + "\n").data(), line.size() + 1),
              static_cast<ssize_t>(line.size() + 1));
  }
  ASSERT_EQ(write(in[1], std::string(10000, 'b').data(), 10000), 10000);  // no newline
  close(in[1]);
  reader.join();
  close(in[0]);
  const std::vector<std::string> lines = out.Lines();
  size_t bytes = 0;
  for (const std::string& l : lines) {
    bytes += l.size() + 1;
    EXPECT_EQ(l.rfind("goheap2pprof worker 99 (allocs of pid 5): ", 0), 0u) << l;
  }
  EXPECT_LE(bytes, (size_t{64} << 10) + lines.size() * 64);
  ASSERT_FALSE(lines.empty());
  // 65 of the 1000-byte lines fit in 64 KiB; the rest of the 1,025,024
  // bytes are dropped.
  EXPECT_EQ(lines.back(), "goheap2pprof worker 99 (allocs of pid 5): … " +
                              std::to_string(1024 * 1000 + 10000 - 65 * 1000) +
                              " bytes dropped (lines are cut at 4096 bytes, a request gets 65536)");
}

}  // namespace
}  // namespace goheap2pprof
