// Delivery of pushed profiles to one backend (Pyroscope or Parca): a
// bounded queue (when full, the oldest profile is dropped and counted) and
// one sender thread that POSTs each request with a per-push timeout and
// retries 5xx answers and connection errors with exponential backoff and
// jitter, never a 4xx (the request itself is wrong; sending it again cannot
// help). A retry sends the same bytes, so for Pyroscope the profile keeps
// the UUID in its ID field. https URLs use the system CA store, or the
// --ca-file; a bearer token or basic-auth credentials come from a file.
//
//   BackendSender s(options, metrics, log);
//   s.Enqueue({body, "pid 1234"});
//   s.Stop(5);  // sends what is queued, for at most 5 s
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/push_metrics.h"

namespace goheap2pprof {

struct BackendOptions {
  std::string name;          // "pyroscope" or "parca", for metrics and logs
  std::string url;           // scheme://host[:port][/prefix]
  std::string route;         // appended to the URL's path
  std::string content_type;  // of the request body
  std::vector<std::pair<std::string, std::string>> headers;
  std::string ca_file;          // PEM bundle for https; empty: the system store
  std::string token_file;       // Authorization: Bearer <first line>
  std::string basic_auth_file;  // first line user:password
  double timeout_seconds = 10;  // connect, and each read and write
  size_t queue_limit = 64;      // profiles waiting
  int max_attempts = 8;         // first try included
  double backoff_initial_seconds = 0.5;
  double backoff_max_seconds = 30;
};

struct PushItem {
  std::string body;
  std::string what;  // for the log: "pid 1234 (server)"
};

// Splits scheme://host[:port][/path]; throws Error(kUsage).
struct ParsedUrl {
  std::string scheme_host_port;  // "https://host:443"
  std::string path;              // "" or "/prefix" (no trailing slash)
};
ParsedUrl ParsePushUrl(const std::string& url);

// The delay before attempt number `attempt` (1: the first retry): the
// exponential step min(max, initial * 2^(attempt-1)), of which the second
// half is random (`unit` in [0, 1)), so that agents restarted together do
// not retry in step.
double BackoffSeconds(int attempt, double initial, double max, double unit);

class BackendSender {
 public:
  BackendSender(BackendOptions options, PushMetrics& metrics,
                std::function<void(const std::string&)> log);
  ~BackendSender();
  BackendSender(const BackendSender&) = delete;
  BackendSender& operator=(const BackendSender&) = delete;

  void Enqueue(PushItem item);
  // Stops retrying, sends what is queued (one attempt each) until the queue
  // is empty or `drain_seconds` passed, and joins the thread.
  void Stop(double drain_seconds);

 private:
  enum class Result { kSent, kRetry, kRejected };
  void Loop();
  Result Send(const PushItem& item, std::string& why);

  BackendOptions options_;
  ParsedUrl url_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::string bearer_token_, basic_user_, basic_password_;
  PushMetrics& metrics_;
  std::function<void(const std::string&)> log_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<PushItem> queue_;
  bool stopping_ = false;
  double drain_deadline_ = 0;  // monotonic seconds
  std::thread thread_;
};

}  // namespace goheap2pprof
