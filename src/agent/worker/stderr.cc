#include "agent/worker/stderr.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "base/utf8.h"

namespace goheap2pprof {

WorkerStderr::WorkerStderr(pid_t worker, int out_fd, WorkerStderrLimits limits)
    : worker_(worker), out_fd_(out_fd), limits_(limits) {}

void WorkerStderr::BeginRequest(std::string label, int in_fd) {
  // What the worker wrote before this request (it writes before it
  // replies) belongs to the previous one: wait until the relay took it all.
  // Bounded: a worker that writes without end gets the new label anyway.
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      int pending = 0;
      if (in_fd < 0 || ioctl(in_fd, FIONREAD, &pending) != 0 || pending == 0) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::lock_guard<std::mutex> lock(mu_);
  FlushLocked();
  label_ = std::move(label);
  printed_ = 0;
  dropped_ = 0;
}

void WorkerStderr::Feed(std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  FeedLocked(bytes);
}

bool WorkerStderr::ReadOnce(int in_fd) {
  char buf[4096];
  // Read under the lock, so that BeginRequest sees each byte either still
  // in the pipe or already attributed.
  std::lock_guard<std::mutex> lock(mu_);
  const ssize_t n = read(in_fd, buf, sizeof(buf));
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  FeedLocked(std::string_view(buf, static_cast<size_t>(n)));
  return true;
}

void WorkerStderr::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  FlushLocked();
}

void WorkerStderr::FeedLocked(std::string_view bytes) {
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);
    bytes = nl == std::string_view::npos ? std::string_view() : bytes.substr(nl + 1);
    if (cutting_) {
      dropped_ += piece.size();
    } else {
      const size_t room = limits_.max_line - partial_.size();
      partial_.append(piece.substr(0, room));
      if (piece.size() > room) {
        dropped_ += piece.size() - room;
        Line(partial_, true);
        partial_.clear();
        cutting_ = true;
      }
    }
    if (nl == std::string_view::npos) return;
    if (!cutting_) Line(partial_, false);
    partial_.clear();
    cutting_ = false;
  }
}

void WorkerStderr::FlushLocked() {
  if (!partial_.empty()) Line(partial_, false);
  partial_.clear();
  cutting_ = false;
  if (dropped_ > 0) {
    Write("goheap2pprof worker " + std::to_string(worker_) + " (" + label_ + "): … " +
          std::to_string(dropped_) + " bytes dropped (lines are cut at " +
          std::to_string(limits_.max_line) + " bytes, a request gets " +
          std::to_string(limits_.budget) + ")\n");
    dropped_ = 0;
  }
}

void WorkerStderr::Line(std::string_view text, bool cut) {
  if (printed_ + text.size() > limits_.budget) {
    dropped_ += text.size();
    return;
  }
  printed_ += text.size();
  Write("goheap2pprof worker " + std::to_string(worker_) + " (" + label_ +
        "): " + LogSafeUtf8(text) + (cut ? " … (cut)\n" : "\n"));
}

void WorkerStderr::Write(const std::string& text) {
  // One write per line, so that lines of several workers do not interleave.
  // Best effort: a full or closed stderr of the server loses the text.
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = write(out_fd_, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<size_t>(w);
  }
}

void RelayWorkerStderr(int in_fd, WorkerStderr& relay) {
  while (true) {
    pollfd pfd{in_fd, POLLIN, 0};
    const int r = poll(&pfd, 1, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || !relay.ReadOnce(in_fd)) break;
  }
  relay.Finish();
}

}  // namespace goheap2pprof
