#include "agent/push_sender.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>

#include "base/error.h"

namespace goheap2pprof {
namespace {

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

}  // namespace

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
      log_(std::move(log)) {
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
  if (!options_.ca_file.empty()) {
    std::ifstream probe(options_.ca_file);
    if (!probe) throw Error(ErrorKind::kIo, "cannot read the CA file ", options_.ca_file);
  }
  {
    // A client that cannot be made (https without TLS support) fails now.
    httplib::Client probe(url_.scheme_host_port);
    if (!probe.is_valid()) {
      throw Error(ErrorKind::kUsage, "cannot make an HTTP client for ", options_.url);
    }
  }
  metrics_.QueueLength(options_.name, 0);
  thread_ = std::thread([this] { Loop(); });
}

BackendSender::~BackendSender() { Stop(0); }

void BackendSender::Enqueue(PushItem item) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  queue_.push_back(std::move(item));
  while (queue_.size() > options_.queue_limit) {
    log_(options_.name + ": queue full (" + std::to_string(options_.queue_limit) +
         "), dropped the oldest profile, " + queue_.front().what);
    queue_.pop_front();
    metrics_.Outcome(options_.name, "dropped");
  }
  metrics_.QueueLength(options_.name, queue_.size());
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

BackendSender::Result BackendSender::Send(const PushItem& item, std::string& why) {
  httplib::Client client(url_.scheme_host_port);
  const time_t sec = static_cast<time_t>(options_.timeout_seconds);
  const time_t usec =
      static_cast<time_t>((options_.timeout_seconds - static_cast<double>(sec)) * 1e6);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
  client.set_keep_alive(false);
  if (!options_.ca_file.empty()) client.set_ca_cert_path(options_.ca_file);
  client.enable_server_certificate_verification(true);
  if (!bearer_token_.empty()) client.set_bearer_token_auth(bearer_token_);
  if (!options_.basic_auth_file.empty()) client.set_basic_auth(basic_user_, basic_password_);
  httplib::Headers headers;
  for (const auto& [k, v] : headers_) headers.emplace(k, v);
  httplib::Result res =
      client.Post(url_.path + options_.route, headers, item.body, options_.content_type.c_str());
  if (!res) {
    why = "no answer: " + httplib::to_string(res.error());
    return Result::kRetry;
  }
  if (res->status >= 200 && res->status < 300) return Result::kSent;
  std::string body = res->body.substr(0, 300);
  std::replace(body.begin(), body.end(), '\n', ' ');
  why = "HTTP " + std::to_string(res->status) + ": " + body;
  return res->status >= 500 ? Result::kRetry : Result::kRejected;
}

void BackendSender::Loop() {
  std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> unit(0, 1);
  while (true) {
    PushItem item;
    bool draining = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_ && (queue_.empty() || NowSeconds() >= drain_deadline_)) {
        for (size_t i = 0; i < queue_.size(); ++i) metrics_.Outcome(options_.name, "shutdown");
        queue_.clear();
        metrics_.QueueLength(options_.name, 0);
        return;
      }
      draining = stopping_;
      item = std::move(queue_.front());
      queue_.pop_front();
      metrics_.QueueLength(options_.name, queue_.size());
    }
    for (int attempt = 1;; ++attempt) {
      std::string why;
      Result r = Send(item, why);
      if (r == Result::kSent) {
        metrics_.Outcome(options_.name, "sent");
        metrics_.SentBytes(options_.name, item.body.size());
        break;
      }
      if (r == Result::kRejected) {
        metrics_.Outcome(options_.name, "rejected");
        log_(options_.name + ": rejected, not retried: " + item.what + ": " + why);
        break;
      }
      if (draining || attempt >= options_.max_attempts) {
        metrics_.Outcome(options_.name, "failed");
        log_(options_.name + ": gave up after " + std::to_string(attempt) +
             " attempts: " + item.what + ": " + why);
        break;
      }
      double delay = BackoffSeconds(attempt, options_.backoff_initial_seconds,
                                    options_.backoff_max_seconds, unit(random));
      metrics_.Retry(options_.name);
      log_(options_.name + ": attempt " + std::to_string(attempt) + " failed (" + why +
           "), retrying " + item.what + " in " + std::to_string(delay) + " s");
      std::unique_lock<std::mutex> lock(mu_);
      if (wake_.wait_for(lock, std::chrono::duration<double>(delay), [&] { return stopping_; })) {
        draining = true;
      }
    }
  }
}

}  // namespace goheap2pprof
