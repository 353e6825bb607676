// Delivery of pushed profiles to one backend (Pyroscope or Parca): a queue
// bounded by profiles and by bytes (over either bound, the oldest profiles
// are dropped and counted) and one sender thread that POSTs each request
// with libcurl, a per-attempt time limit, and retries with exponential
// backoff and jitter: 5xx answers, connection errors, 408 (the server timed
// the request out) and 429 (rate limited) are retried, the other 4xx are not
// (the request itself is wrong; sending it again cannot help). A Retry-After
// on a retried answer sets the wait instead of the backoff, up to a maximum.
// A retry sends the same bytes, so for Pyroscope the profile keeps the UUID
// in its ID field. https URLs use the CA store libcurl was built with, or
// --ca-file; a bearer token or basic-auth credentials come from a file.
// Proxies come from the environment as libcurl reads them (http_proxy,
// HTTPS_PROXY, ALL_PROXY, NO_PROXY), and HTTP_PROXY in upper case too.
//
//   HttpClientGlobalInit();  // once, before any thread starts
//   BackendSender s(options, metrics, log);
//   s.Enqueue({body, "pid 1234"});
//   s.Stop(5);  // sends what is queued, for at most 5 s
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "agent/push/metrics.h"

namespace goheap2pprof {

// How push delivers to every backend, as PushOptions holds it (the
// --ca-file, --push-timeout, --queue, --max-queue-bytes, --attempts,
// --backoff-max and --retry-after-max flags), typed once.
struct DeliverySettings {
  std::string ca_file;                       // PEM bundle for https; empty: the system store
  std::chrono::milliseconds timeout{10000};  // one attempt, connecting included
  size_t queue_limit = 64;                   // profiles waiting
  size_t queue_bytes_limit = 64ull << 20;    // their request bodies together
  int max_attempts = 8;                      // first try included
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::milliseconds retry_after_max{60000};  // the longest Retry-After obeyed
};

struct BackendOptions {
  std::string name;          // "pyroscope" or "parca", for metrics and logs
  std::string url;           // scheme://host[:port][/prefix]
  std::string route;         // appended to the URL's path
  std::string content_type;  // of the request body
  std::vector<std::pair<std::string, std::string>> headers;
  std::string token_file;       // Authorization: Bearer <first line>
  std::string basic_auth_file;  // first line user:password
  DeliverySettings delivery;
  // For a rejected request: a sentence that explains the rejection (from
  // the "HTTP <status>: <body>" it is given) when it is one that every
  // request will meet until someone acts, such as a protocol version the
  // server does not speak; said once in the log instead of per request.
  // Empty: the usual line per rejected request.
  std::function<std::string(const std::string&)> explain_rejection;
  // A unary gRPC call instead of a plain POST: `route` is
  // /package.Service/Method, each enqueued body the serialized request
  // message (Enqueue frames it: GrpcFrame), sent over HTTP/2 (prior
  // knowledge for http://, ALPN for https://) with TE: trailers; the answer
  // is the grpc-status its trailers carry (ClassifyGrpcStatus).
  bool grpc = false;
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

// libcurl's process-wide initialization (curl_global_init is not safe to
// run while other threads start); later calls do nothing.
void HttpClientGlobalInit();

// What an HTTP status means for delivery: 2xx sent; 408, 429 and 5xx
// retried; anything else (other 4xx, 1xx and 3xx: redirects are not
// followed) rejected.
enum class PushVerdict { kSent, kRetry, kRejected };
PushVerdict ClassifyStatus(long status);

// A gRPC message on the wire (the gRPC over HTTP/2 spec's
// Length-Prefixed-Message): a 0 byte (not compressed), the length as 4
// bytes big-endian, the message.
std::string GrpcFrame(std::string_view message);

// What a gRPC status code means for delivery, as OTLP's exporters read it:
// 0 (OK) sent; CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED,
// OUT_OF_RANGE, UNAVAILABLE and DATA_LOSS retried; the others rejected.
PushVerdict ClassifyGrpcStatus(long code);

// The wait a Retry-After header value asks for (RFC 9110 10.2.3):
// delta-seconds, or an HTTP-date taken relative to `now_unix`; a date in the
// past is 0. nullopt for a value that is neither.
std::optional<double> ParseRetryAfter(std::string_view value, int64_t now_unix);

// The waiting profiles, bounded by count and by the bytes of their bodies.
// Push keeps the profile it is given and drops the oldest until both bounds
// hold again, returning what it dropped: the newest profile carries the
// process's latest state, and a backend that recovers gets current data
// first. A single profile larger than the byte bound is kept alone (it is in
// memory already; the bound limits how much waits behind it).
class PushQueue {
 public:
  PushQueue(size_t max_items, size_t max_bytes) : max_items_(max_items), max_bytes_(max_bytes) {}
  std::vector<PushItem> Push(PushItem item);
  std::optional<PushItem> Pop();
  std::vector<PushItem> TakeAll();
  size_t size() const { return items_.size(); }
  size_t bytes() const { return bytes_; }
  bool empty() const { return items_.empty(); }

 private:
  size_t max_items_, max_bytes_;
  std::deque<PushItem> items_;
  size_t bytes_ = 0;
};

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
  struct Attempt;  // one request's answer (agent/push/sender.cc)
  void Loop();
  void Deliver(void* curl, const PushItem& item, bool draining);
  PushVerdict Send(void* curl, const PushItem& item, std::string& why,
                   std::optional<double>& retry_after);
  void Configure(void* curl);
  PushVerdict GrpcVerdict(const Attempt& attempt, std::string& why);

  BackendOptions options_;
  ParsedUrl url_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::string bearer_token_, basic_user_, basic_password_;
  std::string proxy_;  // HTTP_PROXY for an http URL when http_proxy is unset
  std::vector<std::string> header_lines_;
  std::vector<char> error_buffer_;  // libcurl's message of the sender thread's last failure
  bool explained_ = false;          // explain_rejection's sentence was logged
  PushMetrics& metrics_;
  std::function<void(const std::string&)> log_;
  std::mutex mu_;
  std::condition_variable wake_;
  PushQueue queue_;
  bool stopping_ = false;
  double drain_deadline_ = 0;  // monotonic seconds
  std::thread thread_;
};

}  // namespace goheap2pprof
