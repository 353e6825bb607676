#include "agent/push/sender.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>

#include "agent/push/curl_library.h"
#include "base/duration.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

// What is kept of a response body, for the log: a backend (or whatever
// answers in its place) cannot make the agent buffer more.
constexpr size_t kMaxResponseBody = 64 << 10;
// What the log shows of it.
constexpr size_t kLoggedResponseBody = 512;
constexpr size_t kMaxRetryAfterValue = 128;

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string FirstLine(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::kIo, "cannot read the ", what, " file ", path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.pop_back();
  }
  if (line.empty()) throw Error(ErrorKind::kUsage, "the ", what, " file ", path, " is empty");
  return line;
}

// The response body bytes as one log line: control bytes from the remote
// side would otherwise forge log lines.
std::string Printable(const std::string& body) {
  std::string out = body.substr(0, kLoggedResponseBody);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

struct CurlFree {
  void operator()(CURL* curl) const { Curl().easy_cleanup(curl); }
  void operator()(curl_slist* list) const { Curl().slist_free_all(list); }
};

}  // namespace

void HttpClientGlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (Curl().global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      throw Error(ErrorKind::kInternal, "libcurl's global initialization failed");
    }
  });
}

PushVerdict ClassifyStatus(long status) {
  if (status >= 200 && status < 300) return PushVerdict::kSent;
  if (status == 408 || status == 429 || (status >= 500 && status < 600)) {
    return PushVerdict::kRetry;
  }
  return PushVerdict::kRejected;
}

PushVerdict ClassifyGrpcStatus(long code) {
  switch (code) {
    case 0:
      return PushVerdict::kSent;
    case 1:   // CANCELLED
    case 4:   // DEADLINE_EXCEEDED
    case 8:   // RESOURCE_EXHAUSTED: the server's 429
    case 10:  // ABORTED
    case 11:  // OUT_OF_RANGE
    case 14:  // UNAVAILABLE
    case 15:  // DATA_LOSS
      return PushVerdict::kRetry;
    default:
      return PushVerdict::kRejected;
  }
}

std::string GrpcFrame(std::string_view message) {
  std::string out(5, '\0');
  const auto n = static_cast<uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  out.append(message);
  return out;
}

std::optional<double> ParseRetryAfter(std::string_view value, int64_t now_unix) {
  value = Trim(value);
  if (value.empty() || value.size() > kMaxRetryAfterValue) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    // delta-seconds; more digits than a double holds exactly are a very
    // long wait all the same (the caller caps it).
    return std::strtod(std::string(value).c_str(), nullptr);
  }
  // HTTP-date: IMF-fixdate, or the obsolete RFC 850 and asctime forms, which
  // RFC 9110 asks recipients to accept; curl_getdate reads all three (and
  // more: a value without a day or month name is none of them).
  if (std::none_of(value.begin(), value.end(),
                   [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; })) {
    return std::nullopt;
  }
  time_t when = Curl().getdate(std::string(value).c_str(), nullptr);
  if (when == -1) return std::nullopt;
  return std::max<double>(0, static_cast<double>(when - now_unix));
}

std::vector<PushItem> PushQueue::Push(PushItem item) {
  bytes_ += item.body.size();
  items_.push_back(std::move(item));
  std::vector<PushItem> dropped;
  while (items_.size() > 1 && (items_.size() > max_items_ || bytes_ > max_bytes_)) {
    bytes_ -= items_.front().body.size();
    dropped.push_back(std::move(items_.front()));
    items_.pop_front();
  }
  return dropped;
}

std::optional<PushItem> PushQueue::Pop() {
  if (items_.empty()) return std::nullopt;
  PushItem item = std::move(items_.front());
  items_.pop_front();
  bytes_ -= item.body.size();
  return item;
}

std::vector<PushItem> PushQueue::TakeAll() {
  std::vector<PushItem> all(std::make_move_iterator(items_.begin()),
                            std::make_move_iterator(items_.end()));
  items_.clear();
  bytes_ = 0;
  return all;
}

ParsedUrl ParsePushUrl(const std::string& url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    throw Error(ErrorKind::kUsage, "URL ", url, ": expected http://host[:port][/path]");
  }
  std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    throw Error(ErrorKind::kUsage, "URL ", url, ": the scheme must be http or https");
  }
  size_t path_start = url.find('/', scheme_end + 3);
  ParsedUrl parsed;
  parsed.scheme_host_port = url.substr(0, path_start);
  if (parsed.scheme_host_port.size() <= scheme_end + 3) {
    throw Error(ErrorKind::kUsage, "URL ", url, ": no host");
  }
  if (path_start != std::string::npos) parsed.path = url.substr(path_start);
  while (!parsed.path.empty() && parsed.path.back() == '/') parsed.path.pop_back();
  if (parsed.path.find_first_of("?#") != std::string::npos) {
    throw Error(ErrorKind::kUsage, "URL ", url, ": a query or fragment is not allowed");
  }
  return parsed;
}

double BackoffSeconds(int attempt, double initial, double max, double unit) {
  double step = initial * std::pow(2.0, std::max(0, attempt - 1));
  step = std::min(step, max);
  return step / 2 + step / 2 * unit;
}

BackendSender::BackendSender(BackendOptions options, PushMetrics& metrics,
                             std::function<void(const std::string&)> log)
    : options_(std::move(options)),
      url_(ParsePushUrl(options_.url)),
      headers_(options_.headers),
      metrics_(metrics),
      log_(std::move(log)),
      queue_(options_.delivery.queue_limit, options_.delivery.queue_bytes_limit) {
  HttpClientGlobalInit();
  if (!options_.token_file.empty()) {
    bearer_token_ = FirstLine(options_.token_file, "bearer token");
  }
  if (!options_.basic_auth_file.empty()) {
    std::string credentials = FirstLine(options_.basic_auth_file, "basic auth");
    size_t colon = credentials.find(':');
    if (colon == std::string::npos) {
      throw Error(ErrorKind::kUsage, "the basic auth file ", options_.basic_auth_file,
                  " must hold user:password on its first line");
    }
    basic_user_ = credentials.substr(0, colon);
    basic_password_ = credentials.substr(colon + 1);
  }
  if (!options_.delivery.ca_file.empty()) {
    std::ifstream probe(options_.delivery.ca_file);
    if (!probe) throw Error(ErrorKind::kIo, "cannot read the CA file ", options_.delivery.ca_file);
  }
  curl_version_info_data* curl = Curl().version_info(CURLVERSION_NOW);
  if (url_.scheme_host_port.rfind("https:", 0) == 0 && !(curl->features & CURL_VERSION_SSL)) {
    throw Error(ErrorKind::kUsage, "cannot push to ", options_.url, ": libcurl ", curl->version,
                " has no TLS support");
  }
  if (options_.grpc && !(curl->features & CURL_VERSION_HTTP2)) {
    throw Error(ErrorKind::kUsage, "cannot push over gRPC to ", options_.url, ": libcurl ",
                curl->version, " has no HTTP/2 support")
        .WithHint("use --otlp-protocol http/protobuf");
  }
  // libcurl reads only the lower-case http_proxy (upper case is settable
  // by a CGI request's Proxy header, "httpoxy"); the agent is no CGI
  // program, and operators set HTTP_PROXY as for every other tool.
  if (url_.scheme_host_port.rfind("http:", 0) == 0 && std::getenv("http_proxy") == nullptr) {
    if (const char* upper = std::getenv("HTTP_PROXY"); upper != nullptr) proxy_ = upper;
  }
  header_lines_.push_back("Content-Type: " + options_.content_type);
  // gRPC servers refuse a request that does not say it accepts trailers.
  if (options_.grpc) header_lines_.push_back("TE: trailers");
  for (const auto& [k, v] : headers_) header_lines_.push_back(k + ": " + v);
  if (!bearer_token_.empty()) header_lines_.push_back("Authorization: Bearer " + bearer_token_);
  // No "Expect: 100-continue" round trip before large bodies.
  header_lines_.push_back("Expect:");
  metrics_.QueueLength(options_.name, 0);
  metrics_.QueueBytes(options_.name, 0);
  thread_ = std::thread([this] { Loop(); });
}

BackendSender::~BackendSender() { Stop(0); }

void BackendSender::Enqueue(PushItem item) {
  if (options_.grpc) item.body = GrpcFrame(item.body);
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  for (const PushItem& gone : queue_.Push(std::move(item))) {
    log_(options_.name + ": queue over " + std::to_string(options_.delivery.queue_limit) +
         " profiles or " + std::to_string(options_.delivery.queue_bytes_limit) +
         " bytes, dropped the oldest profile, " + gone.what + " (" +
         std::to_string(gone.body.size()) + " bytes)");
    metrics_.Outcome(options_.name, "dropped");
    metrics_.DroppedBytes(options_.name, gone.body.size());
  }
  metrics_.QueueLength(options_.name, queue_.size());
  metrics_.QueueBytes(options_.name, queue_.bytes());
  wake_.notify_all();
}

void BackendSender::Stop(double drain_seconds) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    if (!stopping_) {
      stopping_ = true;
      drain_deadline_ = NowSeconds() + drain_seconds;
    }
  }
  wake_.notify_all();
  thread_.join();
}

// One request's answer, filled in by libcurl's callbacks.
struct BackendSender::Attempt {
  std::string body;  // at most kMaxResponseBody
  std::optional<std::string> retry_after;
  // A gRPC answer's, from its trailers (or its headers: a trailers-only answer).
  std::optional<std::string> grpc_status, grpc_message;

  // The value of `line` if it is header `name`'s.
  static std::optional<std::string> Value(std::string_view line, std::string_view name) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !EqualsIgnoringCase(line.substr(0, colon), name)) {
      return std::nullopt;
    }
    return std::string(Trim(line.substr(colon + 1)).substr(0, kLoggedResponseBody));
  }

  static size_t OnBody(char* data, size_t size, size_t n, void* self) {
    std::string& body = static_cast<Attempt*>(self)->body;
    size_t bytes = size * n;
    body.append(data, std::min(bytes, kMaxResponseBody - body.size()));
    return bytes;  // the rest is read and discarded, so the connection stays usable
  }

  static size_t OnHeader(char* data, size_t size, size_t n, void* self) {
    Attempt& a = *static_cast<Attempt*>(self);
    std::string_view line(data, size * n);
    // A proxy's CONNECT answer or an interim 100 come first: only the final
    // response's headers count.
    if (line.rfind("HTTP/", 0) == 0) {
      a.retry_after.reset();
      a.grpc_status.reset();
      a.grpc_message.reset();
    }
    if (auto v = Value(line, "retry-after")) a.retry_after = v->substr(0, kMaxRetryAfterValue + 1);
    if (auto v = Value(line, "grpc-status")) a.grpc_status = std::move(v);
    if (auto v = Value(line, "grpc-message")) a.grpc_message = std::move(v);
    return size * n;
  }
};

void BackendSender::Configure(void* curl) {
  const long timeout_ms = std::max<long>(1, options_.delivery.timeout.count());
  const std::string url = url_.scheme_host_port + url_.path + options_.route;
  const CurlLibrary& lib = Curl();
  lib.easy_setopt(curl, CURLOPT_URL, url.c_str());  // libcurl copies strings
  lib.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  lib.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  lib.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // several threads; no SIGALRM
  lib.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  lib.easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  // The same protocol whatever nghttp2 libcurl was built with (the static
  // build has none); gRPC is HTTP/2 only, so a cleartext URL speaks it
  // from the first byte (no Upgrade, which gRPC servers do not answer).
  const bool tls = url.rfind("https:", 0) == 0;
  const long version = !options_.grpc ? CURL_HTTP_VERSION_1_1
                       : tls          ? CURL_HTTP_VERSION_2TLS
                                      : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
  lib.easy_setopt(curl, CURLOPT_HTTP_VERSION, version);
  // libcurl 7.88 (Debian 12) fails the second gRPC call on a reused HTTP/2
  // connection with "Error in the HTTP2 framing layer" (curl's own client
  // does too, against the Collector's Go gRPC server): one connection per
  // call, a handshake per process and interval.
  if (options_.grpc) lib.easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
  lib.easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  lib.easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.delivery.ca_file.empty()) {
    // The file replaces the store: Debian's libcurl also has a CA path
    // (/etc/ssl/certs), which would otherwise stay trusted beside it.
    lib.easy_setopt(curl, CURLOPT_CAINFO, options_.delivery.ca_file.c_str());
    lib.easy_setopt(curl, CURLOPT_CAPATH, nullptr);
  }
  if (!proxy_.empty()) lib.easy_setopt(curl, CURLOPT_PROXY, proxy_.c_str());
  if (!options_.basic_auth_file.empty()) {
    lib.easy_setopt(curl, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    lib.easy_setopt(curl, CURLOPT_USERNAME, basic_user_.c_str());
    lib.easy_setopt(curl, CURLOPT_PASSWORD, basic_password_.c_str());
  }
  lib.easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Attempt::OnBody);
  lib.easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Attempt::OnHeader);
  error_buffer_.assign(CURL_ERROR_SIZE + 1, '\0');
  lib.easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer_.data());
}

PushVerdict BackendSender::Send(void* curl, const PushItem& item, std::string& why,
                                std::optional<double>& retry_after) {
  Attempt attempt;
  const CurlLibrary& lib = Curl();
  lib.easy_setopt(curl, CURLOPT_POSTFIELDS, item.body.data());
  lib.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(item.body.size()));
  lib.easy_setopt(curl, CURLOPT_WRITEDATA, &attempt);
  lib.easy_setopt(curl, CURLOPT_HEADERDATA, &attempt);
  error_buffer_[0] = '\0';
  CURLcode rc = lib.easy_perform(curl);
  // A gRPC server that refuses a call may answer with its status at once
  // (trailers-only) and reset the stream before it has read the request:
  // libcurl then fails the transfer, but the status stands.
  if (rc != CURLE_OK && options_.grpc && attempt.grpc_status) return GrpcVerdict(attempt, why);
  if (rc != CURLE_OK) {
    why = std::string("no answer: ") +
          (error_buffer_[0] != '\0' ? error_buffer_.data() : lib.easy_strerror(rc));
    return PushVerdict::kRetry;
  }
  long status = 0;
  lib.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  PushVerdict verdict = ClassifyStatus(status);
  if (verdict == PushVerdict::kSent && options_.grpc) return GrpcVerdict(attempt, why);
  if (verdict == PushVerdict::kSent) return verdict;
  why = "HTTP " + std::to_string(status) + ": " + Printable(attempt.body);
  if (verdict == PushVerdict::kRetry && attempt.retry_after) {
    retry_after = ParseRetryAfter(*attempt.retry_after, static_cast<int64_t>(std::time(nullptr)));
  }
  return verdict;
}

PushVerdict BackendSender::GrpcVerdict(const Attempt& attempt, std::string& why) {
  // An answer that ends without a status was cut short: a proxy or a
  // server that died mid-answer.
  if (!attempt.grpc_status) {
    why = "gRPC answer without grpc-status";
    return PushVerdict::kRetry;
  }
  const std::string& text = *attempt.grpc_status;
  const bool digits =
      !text.empty() && text.size() <= 3 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long code = digits ? std::stol(text) : -1;
  const PushVerdict verdict = ClassifyGrpcStatus(code);
  if (verdict != PushVerdict::kSent) {
    why = "grpc-status " + Printable(text) + ": " + Printable(attempt.grpc_message.value_or(""));
  }
  return verdict;
}

void BackendSender::Loop() {
  // One easy handle for the thread's life: it keeps the connection (and the
  // TLS session) to the backend between pushes.
  const CurlLibrary& lib = Curl();
  std::unique_ptr<curl_slist, CurlFree> headers;  // outlives the handle that points to it
  std::unique_ptr<CURL, CurlFree> curl(lib.easy_init());
  for (const std::string& line : header_lines_) {
    curl_slist* more = lib.slist_append(headers.get(), line.c_str());
    if (more == nullptr) break;
    headers.release();
    headers.reset(more);
  }
  if (curl) {
    Configure(curl.get());
    lib.easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  }
  while (true) {
    PushItem item;
    bool draining = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_ && (queue_.empty() || NowSeconds() >= drain_deadline_)) {
        for (size_t i = queue_.TakeAll().size(); i > 0; --i) {
          metrics_.Outcome(options_.name, "shutdown");
        }
        metrics_.QueueLength(options_.name, 0);
        metrics_.QueueBytes(options_.name, 0);
        return;
      }
      draining = stopping_;
      item = std::move(*queue_.Pop());
      metrics_.QueueLength(options_.name, queue_.size());
      metrics_.QueueBytes(options_.name, queue_.bytes());
    }
    if (!curl) {
      metrics_.Outcome(options_.name, "failed");
      log_(options_.name + ": libcurl could not make a handle; dropped " + item.what);
      continue;
    }
    Deliver(curl.get(), item, draining);
  }
}

void BackendSender::Deliver(void* curl, const PushItem& item, bool draining) {
  static thread_local std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> unit(0, 1);
  for (int attempt = 1;; ++attempt) {
    std::string why;
    std::optional<double> retry_after;
    PushVerdict verdict = Send(curl, item, why, retry_after);
    if (verdict == PushVerdict::kSent) {
      metrics_.Outcome(options_.name, "sent");
      metrics_.SentBytes(options_.name, item.body.size());
      return;
    }
    if (verdict == PushVerdict::kRejected) {
      metrics_.Outcome(options_.name, "rejected");
      const std::string note =
          options_.explain_rejection ? options_.explain_rejection(why) : std::string();
      if (note.empty()) {
        log_(options_.name + ": rejected, not retried: " + item.what + ": " + why);
      } else if (!explained_) {
        explained_ = true;
        log_(options_.name + ": " + note + " (" + why + "); said once, later requests are " +
             "rejected the same way and counted");
      }
      return;
    }
    if (draining || attempt >= options_.delivery.max_attempts) {
      metrics_.Outcome(options_.name, "failed");
      log_(options_.name + ": gave up after " + std::to_string(attempt) +
           " attempts: " + item.what + ": " + why);
      return;
    }
    // The server's own word on when to come back beats our guess, up to a
    // limit: a Retry-After of a day must not stop delivery for a day.
    const DeliverySettings& d = options_.delivery;
    double delay = retry_after ? std::min(*retry_after, Seconds(d.retry_after_max))
                               : BackoffSeconds(attempt, Seconds(d.backoff_initial),
                                                Seconds(d.backoff_max), unit(random));
    metrics_.Retry(options_.name);
    log_(options_.name + ": attempt " + std::to_string(attempt) + " failed (" + why +
         "), retrying " + item.what + " in " + std::to_string(delay) + " s" +
         (retry_after ? " (Retry-After)" : ""));
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_for(lock, std::chrono::duration<double>(delay), [&] { return stopping_; })) {
      draining = true;
    }
  }
}

}  // namespace goheap2pprof
