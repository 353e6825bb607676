// The wire between serve's server and its capture workers (agent/worker/worker.h):
// requests carry a bounded payload, and the server reads a reply into a
// buffer that grows with the bytes that arrive, never to the length the
// worker declares, and refuses a body over its limit.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "agent/worker/worker.h"

namespace goheap2pprof {
namespace {

class SocketPair {
 public:
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0); }
  ~SocketPair() {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  int server() const { return fds_[0]; }
  int worker() const { return fds_[1]; }
  void CloseWorker() {
    close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

// A reply header as a worker writes it, with its body length changed to
// body_len: found as the 8 bytes that hold a first, distinctive length, so
// that the test does not depend on the header's layout.
std::string ReplyHeaderDeclaring(uint64_t body_len) {
  constexpr uint64_t kMark = 130321;
  WorkerReply reply;
  reply.body = std::string(kMark, 'b');
  SocketPair p;
  std::thread writer([&] {
    EXPECT_TRUE(WriteWorkerReply(p.worker(), reply));
    p.CloseWorker();
  });
  std::string all;
  char buf[65536];
  while (true) {
    const ssize_t n = read(p.server(), buf, sizeof(buf));
    if (n <= 0) break;
    all.append(buf, static_cast<size_t>(n));
  }
  writer.join();
  std::string header = all.substr(0, all.size() - kMark);
  const size_t at = header.find(std::string(reinterpret_cast<const char*>(&kMark), 8));
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) std::memcpy(header.data() + at, &body_len, 8);
  return header;
}

int64_t Soon() { return MonotonicMillis() + 5000; }

TEST(WorkerWire, RequestCarriesItsPayload) {
  SocketPair p;
  WorkerRequest sent{WorkerOp::kHeapDelta, 42, std::string(100000, 'x')};
  std::thread writer([&] { EXPECT_TRUE(WriteWorkerRequest(p.server(), sent)); });
  WorkerRequest got;
  EXPECT_TRUE(ReadWorkerRequest(p.worker(), got, 1 << 20));
  writer.join();
  EXPECT_EQ(got.op, WorkerOp::kHeapDelta);
  EXPECT_EQ(got.pid, 42);
  EXPECT_EQ(got.payload, sent.payload);
}

TEST(WorkerWire, WorkerRefusesAPayloadOverItsLimit) {
  SocketPair p;
  std::thread writer([&] {
    WriteWorkerRequest(p.server(), {WorkerOp::kHeapDelta, 42, std::string(5000, 'x')});
  });
  WorkerRequest got;
  EXPECT_FALSE(ReadWorkerRequest(p.worker(), got, 4096));
  writer.join();  // it fits in the socket's buffer: no reader needed
  EXPECT_TRUE(got.payload.empty());
}

TEST(WorkerWire, ReplyRoundTrips) {
  SocketPair p;
  WorkerReply sent;
  sent.body = std::string(3 << 20, 'b');
  sent.message = "m";
  sent.start_time = 7;
  std::thread writer([&] { EXPECT_TRUE(WriteWorkerReply(p.worker(), sent)); });
  WorkerReply got;
  EXPECT_EQ(ReadWorkerReply(p.server(), got, Soon(), 64 << 20), ReplyReadError::kNone);
  writer.join();
  EXPECT_EQ(got.body, sent.body);
  EXPECT_EQ(got.message, "m");
  EXPECT_EQ(got.start_time, 7u);
}

TEST(WorkerWire, ServerRefusesABodyOverItsLimitWithoutReadingIt) {
  SocketPair p;
  const std::string header = ReplyHeaderDeclaring(uint64_t{65} << 20);
  ASSERT_EQ(write(p.worker(), header.data(), header.size()), static_cast<ssize_t>(header.size()));
  WorkerReply got;
  EXPECT_EQ(ReadWorkerReply(p.server(), got, Soon(), 64 << 20), ReplyReadError::kTooLarge);
  EXPECT_EQ(got.body.capacity() < (1 << 20), true);
}

// A worker that declares 1 GiB and sends 100 bytes: the server's buffer is
// what arrived (rounded to its growth step), not what was declared.
TEST(WorkerWire, ServerGrowsTheBodyAsBytesArrive) {
  SocketPair p;
  const std::string header = ReplyHeaderDeclaring(uint64_t{1} << 30);
  ASSERT_EQ(write(p.worker(), header.data(), header.size()), static_cast<ssize_t>(header.size()));
  ASSERT_EQ(write(p.worker(), std::string(100, 'b').data(), 100), 100);
  p.CloseWorker();
  WorkerReply got;
  EXPECT_EQ(ReadWorkerReply(p.server(), got, Soon(), uint64_t{1} << 30), ReplyReadError::kBroken);
  EXPECT_LE(got.body.capacity(), size_t{2} << 20);
}

TEST(WorkerWire, ServerTimesOutOnASilentWorker) {
  SocketPair p;
  WorkerReply got;
  EXPECT_EQ(ReadWorkerReply(p.server(), got, MonotonicMillis() + 100, 1 << 20),
            ReplyReadError::kTimedOut);
}

}  // namespace
}  // namespace goheap2pprof
