// A capture worker's stderr, relayed to the server's own: bounded and
// attributed. A worker runs code that parses hostile bytes, so what it
// writes is untrusted too: every line the server prints from a worker names
// the worker's pid and the request it was serving (as the server knows it,
// not as the worker says), a line is cut at max_line bytes, and a request
// gets budget bytes of stderr, after which one line says how many bytes
// were dropped. Each worker has its own pipe and relay thread (agent/worker/pool.cc).
//
//   WorkerStderr relay(worker_pid, STDERR_FILENO);
//   relay.BeginRequest("heap of pid 1234");   // before the request is sent
//   RelayWorkerStderr(pipe_read_end, relay);   // on the relay thread, until EOF
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace goheap2pprof {

struct WorkerStderrLimits {
  size_t max_line = 4096;            // longer lines are cut
  size_t budget = size_t{64} << 10;  // bytes printed per request
};

class WorkerStderr {
 public:
  WorkerStderr(pid_t worker, int out_fd, WorkerStderrLimits limits = {});

  // The request the worker serves from now on; what it wrote before is
  // printed under the previous one (or "starting"). in_fd, when given, is
  // the pipe the relay reads: this waits (at most 200 ms) until the relay
  // has taken everything the worker wrote so far.
  void BeginRequest(std::string label, int in_fd = -1);
  // Bytes read from the worker's stderr.
  void Feed(std::string_view bytes);
  // Reads what in_fd holds (it must be readable: poll first) and feeds it;
  // false at EOF or on an error other than EINTR.
  bool ReadOnce(int in_fd);
  // The worker's stderr is closed: prints a partial last line and what was
  // dropped.
  void Finish();

 private:
  void FeedLocked(std::string_view bytes);
  void FlushLocked();
  void Line(std::string_view text, bool cut);
  void ReportDropped();
  void Write(const std::string& text);

  const pid_t worker_;
  const int out_fd_;
  const WorkerStderrLimits limits_;
  std::mutex mu_;  // the relay thread feeds, the pool's threads begin requests
  std::string label_ = "starting";
  std::string partial_;   // a line not ended yet, at most max_line bytes
  bool cutting_ = false;  // dropping the rest of a line that was cut
  size_t printed_ = 0;    // this request's bytes printed
  uint64_t dropped_ = 0;  // this request's bytes dropped
};

// Reads in_fd until EOF or an error, feeding relay, then finishes it.
void RelayWorkerStderr(int in_fd, WorkerStderr& relay);

}  // namespace goheap2pprof
