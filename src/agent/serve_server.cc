#include "agent/serve_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agent/discovery.h"
#include "agent/serve_metrics.h"
#include "agent/serve_pool.h"
#include "agent/serve_query.h"
#include "agent/service_name.h"
#include "base/error.h"
#include "pprof/output.h"
#include "pprof/profile_delta.h"
#include "proc/address_space.h"

namespace goheap2pprof {
namespace {

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// net/http/pprof's serveError.
void ServeError(httplib::Response& res, int status, const std::string& text) {
  res.status = status;
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Go-Pprof", "1");
  res.set_content(text + "\n", "text/plain; charset=utf-8");
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Seconds since the epoch at which the system booted (/proc/stat btime).
uint64_t BootTime() {
  std::ifstream in("/proc/stat");
  std::string key;
  uint64_t value = 0;
  while (in >> key) {
    if (key == "btime" && (in >> value)) return value;
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

struct Flight {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  PoolResult result;
};

class Service {
 public:
  Service(const ServeOptions& options, std::ostream& log, std::string listen_address)
      : options_(options),
        log_(log),
        listen_address_(std::move(listen_address)),
        pool_(PoolOptions{options.max_concurrent, "/proc/self/exe",
                          static_cast<int64_t>(options.timeout_seconds * 1000),
                          static_cast<int64_t>(options.capture_timeout_seconds * 1000),
                          options.worker_limits}),
        discovery_(DiscoveryOptions(options), [this](pid_t pid) { return ProbeExe(pid); }),
        boot_time_(BootTime()),
        clock_ticks_(sysconf(_SC_CLK_TCK)) {
    if (!options.token_file.empty()) token_ = ReadToken(options.token_file);
  }

  void Start() { discovery_.Start(); }

  const std::string& token() const { return token_; }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    ServeQueryLimits limits;
    limits.max_seconds = options_.max_delta_seconds;
    ServeRoute route = ParseServeTarget(req.target, limits);
    if (route.error) {
      ServeError(res, route.error->status, route.error->text);
      return;
    }
    switch (route.endpoint) {
      case Endpoint::kIndex:
        return Index(res);
      case Endpoint::kTargets:
        return Targets(res);
      case Endpoint::kMetrics:
        discovery_stats_to_metrics();
        res.set_content(metrics_.Render(), "text/plain; version=0.0.4; charset=utf-8");
        return;
      case Endpoint::kProfile:
        return Profile(route.profile, res);
    }
  }

  ServeMetrics& metrics() { return metrics_; }
  // One whole line at a time: requests are handled on many threads.
  void Log(const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu_);
    log_ << line << std::flush;
  }
  void Stop() { stopping_ = true; }

 private:
  static Discovery::Options DiscoveryOptions(const ServeOptions& o) {
    return Discovery::Options::For(o.filter, o.discover_interval_seconds, o.service_name_from);
  }

  static std::string ReadToken(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(ErrorKind::kIo, "cannot read the token file ", path);
    std::string token;
    std::getline(in, token);
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
      token.pop_back();
    if (token.size() < 16) {
      throw Error(ErrorKind::kUsage, "the token in ", path, " is shorter than 16 characters");
    }
    return token;
  }

  ExeInfo ProbeExe(pid_t pid) { return ProbeInWorker(pool_, metrics_, pid); }

  void discovery_stats_to_metrics() {
    // Processes first: the scan count read after it is never smaller than
    // the scan that found them.
    uint64_t processes = discovery_.Processes().size();
    metrics_.SetDiscovery(processes, discovery_.scans(), discovery_.analyses(),
                          discovery_.cache_hits());
    metrics_.SetDiscoveryHealth(discovery_.scan_errors(), discovery_.last_success_seconds());
  }

  // One capture per (pid, op) at a time: later requests wait for the
  // running one and share its answer. With may_join false the caller gets
  // a capture of its own, begun now, which others may join.
  PoolResult SharedCapture(pid_t pid, WorkerOp op, const std::string& affinity,
                           bool may_join = true) {
    std::shared_ptr<Flight> flight;
    bool leader = false;
    const auto key = std::make_pair(pid, static_cast<int>(op));
    {
      std::lock_guard<std::mutex> lock(flights_mu_);
      auto it = flights_.find(key);
      if (it != flights_.end() && may_join) {
        flight = it->second;
      } else {
        flight = std::make_shared<Flight>();
        flights_[key] = flight;
        leader = true;
      }
    }
    if (!leader) {
      std::unique_lock<std::mutex> lock(flight->mu);
      flight->cv.wait(lock, [&] { return flight->done; });
      return flight->result;
    }
    auto started = std::chrono::steady_clock::now();
    PoolResult result = pool_.Run({op, pid}, affinity);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (options_.verbose) {
      // What isolation costs: the round trip to the worker minus its own time.
      std::ostringstream line;
      line << std::fixed << std::setprecision(2) << "goheap2pprof serve: capture pid " << pid
           << " op " << static_cast<int>(op) << ": " << seconds * 1000 << " ms, "
           << static_cast<double>(result.reply.worker_ns) / 1e6 << " ms in the worker, "
           << result.reply.body.size() << " bytes\n";
      Log(line.str());
    }
    metrics_.CaptureDone(PoolOutcomeName(result), seconds, result.reply.bytes_read);
    if (result.outcome == PoolOutcome::kReplied) metrics_.CaptureAnalyses(result.reply.analyses);
    if (result.outcome == PoolOutcome::kCrashed) metrics_.WorkerRestarted("crash");
    if (result.outcome == PoolOutcome::kTimedOut) metrics_.WorkerRestarted("timeout");
    {
      std::lock_guard<std::mutex> lock(flights_mu_);
      auto it = flights_.find(key);
      if (it != flights_.end() && it->second == flight) flights_.erase(it);
    }
    {
      std::lock_guard<std::mutex> lock(flight->mu);
      flight->result = result;
      flight->done = true;
    }
    flight->cv.notify_all();
    return result;
  }

  // A capture of the process the request was for, as discovery found it
  // (facts), and nothing else: a reply from whatever held the pid later, or
  // from a process the filter refuses as the worker found it, is turned
  // into the 410 or 404 it deserves (KeepToRequestedProcess).
  PoolResult CaptureOf(const ProcessFacts& facts, WorkerOp op, bool may_join = true) {
    PoolResult r = SharedCapture(facts.pid, op, facts.key.ToString(), may_join);
    if (r.outcome == PoolOutcome::kReplied) KeepToRequestedProcess(facts, options_.filter, r.reply);
    return r;
  }

  // Answers a failed capture; false if r is a success.
  bool ServeFailure(const PoolResult& r, pid_t pid, httplib::Response& res) {
    switch (r.outcome) {
      case PoolOutcome::kBusy:
        res.set_header("Retry-After",
                       std::to_string(static_cast<int>(std::ceil(options_.timeout_seconds))));
        ServeError(res, 503,
                   "busy: " + std::to_string(options_.max_concurrent) +
                       " captures are running and none finished within the timeout; retry later");
        return true;
      case PoolOutcome::kCrashed:
        ServeError(res, 500, "capture of process " + std::to_string(pid) + " failed: " + r.detail);
        return true;
      case PoolOutcome::kTimedOut:
        ServeError(res, 504,
                   "capture of process " + std::to_string(pid) + " did not finish in " +
                       std::to_string(options_.capture_timeout_seconds) +
                       " s; its worker was stopped");
        return true;
      case PoolOutcome::kReplied:
        break;
    }
    if (r.reply.error_kind == 0) return false;
    int status = 500;
    switch (static_cast<ErrorKind>(r.reply.error_kind)) {
      case ErrorKind::kNoSuchProcess:
        // Exited: 404, as for a pid that never existed. Replaced under the
        // same pid (reused, or an exec in place): 410, the process the
        // request was for is gone for good and the pid means another now.
        if (r.reply.replaced) {
          ServeError(res, 410,
                     "process " + std::to_string(pid) +
                         " was replaced by another process under the same pid: " + r.reply.message);
          return true;
        }
        status = 404;
        break;
      case ErrorKind::kNotGo:
        status = 404;
        break;
      case ErrorKind::kPermission:
        status = 403;
        break;
      case ErrorKind::kSamplingDisabled:
        status = 409;
        break;
      default:
        break;
    }
    ServeError(res, status, r.reply.message);
    return true;
  }

  void Profile(const ProfileRequest& p, httplib::Response& res) {
    bool forbidden = false;
    std::optional<ProcessFacts> facts = discovery_.Visible(p.pid, &forbidden);
    if (!facts && forbidden) {
      ServeError(res, 403,
                 "permission denied: this server may not read process " + std::to_string(p.pid) +
                     " (ptrace access to it is not allowed)");
      return;
    }
    if (!facts) {
      // Filtered processes are answered exactly like absent ones.
      ServeError(res, 404, "no such process: " + std::to_string(p.pid));
      return;
    }
    const char* name = p.name == ProfileName::kHeap ? "heap" : "allocs";
    const WorkerOp op = p.name == ProfileName::kHeap ? WorkerOp::kHeap : WorkerOp::kAllocs;
    if (p.seconds > 0) return Delta(p, op, name, *facts, res);
    if (p.debug != 0) {
      PoolResult r = CaptureOf(*facts, WorkerOp::kHeapDebugText);
      if (ServeFailure(r, p.pid, res)) return;
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_content(std::move(r.reply.body), "text/plain; charset=utf-8");
      return;
    }
    PoolResult r = CaptureOf(*facts, op);
    NoteSampling(p.pid, r);
    if (ServeFailure(r, p.pid, res)) return;
    SetProfileHeaders(res, name);
    res.set_content(std::move(r.reply.body), "application/octet-stream");
  }

  void NoteSampling(pid_t pid, const PoolResult& r) {
    if (r.outcome != PoolOutcome::kReplied) return;
    if (r.reply.error_kind == 0) discovery_.NoteSampling(pid, r.reply.start_time, "on");
    if (r.reply.error_kind == static_cast<int>(ErrorKind::kSamplingDisabled)) {
      if (std::optional<ProcessFacts> f = discovery_.Visible(pid)) {
        discovery_.NoteSampling(pid, f->start_time, "off");
      }
    }
  }

  static void SetProfileHeaders(httplib::Response& res, const std::string& filename) {
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Content-Disposition", "attachment; filename=\"" + filename + "\"");
  }

  // net/http/pprof's serveDeltaProfile.
  void Delta(const ProfileRequest& p, WorkerOp op, const char* name, const ProcessFacts& facts,
             httplib::Response& res) {
    // Anchored before the first capture starts: an exec in place between
    // the two captures keeps pid and start time, and only the address
    // space tells (proc/address_space.h). Not opened: the capture says why.
    const std::optional<AddressSpaceAnchor> anchor = AddressSpaceAnchor::TryOpen(p.pid);
    // The first capture must begin after the anchor: it joins no capture
    // that is already running.
    PoolResult r0 = CaptureOf(facts, op, /*may_join=*/false);
    const int64_t t0 = NowNanos();
    if (ServeFailure(r0, p.pid, res)) return;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(p.seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (stopping_) {
        ServeError(res, 503, "the server is shutting down");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    PoolResult r1 = CaptureOf(facts, op);
    const int64_t t1 = NowNanos();
    if (ServeFailure(r1, p.pid, res)) return;
    if (!anchor) {
      ServeError(res, 500,
                 "cannot open /proc/" + std::to_string(p.pid) +
                     "/mem, so a replacement of the process during the delta window could not "
                     "be ruled out");
      return;
    }
    if (r0.reply.start_time != r1.reply.start_time || !anchor->StillLive()) {
      ServeError(res, 410,
                 "process " + std::to_string(p.pid) +
                     " was replaced by another process during the delta window");
      return;
    }
    pb::Profile p0, p1;
    try {
      if (!p0.ParseFromString(Gunzip(r0.reply.body, size_t{1} << 30)) ||
          !p1.ParseFromString(Gunzip(r1.reply.body, size_t{1} << 30))) {
        throw Error(ErrorKind::kMalformed, "unparsable profile from a worker");
      }
      pb::Profile delta = DeltaProfile(p0, p1);
      delta.set_time_nanos(t1);
      delta.set_duration_nanos(t1 - t0);
      SetProfileHeaders(res, std::string(name) + "-delta");
      res.set_content(EncodeProfile(delta), "application/octet-stream");
    } catch (const Error& e) {
      // One request's boundary: its error is its response.
      ServeError(res, 500, "failed to compute delta");
    }
  }

  std::string ServiceName(const GoProcess& p) const {
    return ServiceNameOf(p.facts, options_.service_name_from);
  }

  std::string StartTime(const GoProcess& p) const {
    if (clock_ticks_ <= 0) return std::to_string(p.facts.start_time);
    return std::to_string(boot_time_ + p.facts.start_time / static_cast<uint64_t>(clock_ticks_));
  }

  void Targets(httplib::Response& res) {
    nlohmann::json groups = nlohmann::json::array();
    for (const GoProcess& p : discovery_.Processes()) {
      nlohmann::json labels = {
          {"__param_pid", std::to_string(p.facts.pid)},
          {"pid", std::to_string(p.facts.pid)},
          {"service_name", ServiceName(p)},
          {"exe", p.facts.exe},
          {"comm", p.facts.comm},
          {"go_version", p.exe.go_version},
          {"build_id", p.exe.build_id},
          {"start_time", StartTime(p)},
      };
      if (!p.facts.cgroup.empty()) labels["cgroup"] = p.facts.cgroup;
      if (!p.facts.container_id.empty()) labels["container_id"] = p.facts.container_id;
      groups.push_back({{"targets", {listen_address_}}, {"labels", labels}});
    }
    res.set_content(groups.dump(), "application/json");
  }

  void Index(httplib::Response& res) {
    std::string html =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>goheap2pprof serve</title>"
        "</head><body>\n<h1>goheap2pprof serve</h1>\n<p>Go processes this server may read "
        "(rescanned every " +
        HtmlEscape(std::to_string(options_.discover_interval_seconds)) +
        " s). <a href=\"/targets\">/targets</a> (Prometheus HTTP SD), "
        "<a href=\"/metrics\">/metrics</a>.</p>\n<table border=\"1\" cellpadding=\"4\">\n"
        "<tr><th>pid</th><th>service</th><th>executable</th><th>Go</th><th>heap sampling</th>"
        "<th>profiles</th></tr>\n";
    for (const GoProcess& p : discovery_.Processes()) {
      std::string pid = std::to_string(p.facts.pid);
      std::string sampling = p.sampling.empty()    ? "not captured yet"
                             : p.sampling == "off" ? "off (409)"
                                                   : "on";
      html += "<tr><td>" + pid + "</td><td>" + HtmlEscape(ServiceName(p)) + "</td><td>" +
              HtmlEscape(p.facts.exe) + "</td><td>" + HtmlEscape(p.exe.go_version) + "</td><td>" +
              sampling + "</td><td><a href=\"/debug/pprof/heap?pid=" + pid +
              "\">heap</a> <a href=\"/debug/pprof/allocs?pid=" + pid +
              "\">allocs</a> <a href=\"/debug/pprof/heap?pid=" + pid +
              "&amp;debug=1\">heap?debug=1</a></td></tr>\n";
    }
    html += "</table>\n</body></html>\n";
    res.set_content(html, "text/html; charset=utf-8");
  }

  const ServeOptions& options_;
  std::ostream& log_;
  std::string listen_address_;
  std::string token_;
  ServeMetrics metrics_;
  WorkerPool pool_;
  Discovery discovery_;
  uint64_t boot_time_;
  long clock_ticks_;
  std::atomic<bool> stopping_{false};
  std::mutex flights_mu_;
  std::mutex log_mu_;
  std::map<std::pair<pid_t, int>, std::shared_ptr<Flight>> flights_;
};

}  // namespace

bool TokenMatches(const std::string& presented, const std::string& expected) {
  // Compares every byte of the longer string, so the time does not say
  // where the first difference is.
  size_t n = std::max(presented.size(), expected.size());
  unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    unsigned char a = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    unsigned char b = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    diff |= a ^ b;
  }
  return diff == 0;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  return false;
}

std::pair<std::string, int> SplitListenAddress(const std::string& listen) {
  std::string host;
  std::string port;
  if (!listen.empty() && listen[0] == '[') {
    size_t close = listen.find("]:");
    if (close == std::string::npos)
      throw Error(ErrorKind::kUsage, "--listen ", listen, ": expected [v6]:port");
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else {
    size_t colon = listen.rfind(':');
    if (colon == std::string::npos)
      throw Error(ErrorKind::kUsage, "--listen ", listen, ": expected host:port");
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  std::optional<int64_t> p = GoParseInt(port);
  if (host.empty() || !p || *p < 0 || *p > 65535 || port[0] == '+' || port[0] == '-') {
    throw Error(ErrorKind::kUsage, "--listen ", listen, ": expected host:port");
  }
  return {host, static_cast<int>(*p)};
}

void ValidateServeOptions(const ServeOptions& o) {
  auto [host, port] = SplitListenAddress(o.listen);
  (void)port;
  if (!IsLoopbackHost(host) && o.token_file.empty() && !o.insecure_listen) {
    throw Error(ErrorKind::kUsage, "refusing to listen on ", o.listen,
                ", which is not a loopback address, without --token-file: anyone who can reach "
                "it could read the heap profiles of every Go process on this machine")
        .WithHint(
            "give --token-file FILE (clients send Authorization: Bearer <token>), or "
            "--insecure-listen if the network is trusted");
  }
  if (o.max_concurrent < 1 || o.max_concurrent > 64) {
    throw Error(ErrorKind::kUsage, "--max-concurrent must be 1..64");
  }
  if (!(o.timeout_seconds > 0) || !(o.discover_interval_seconds > 0) ||
      !(o.capture_timeout_seconds > 0)) {
    throw Error(ErrorKind::kUsage, "--timeout and --discover-interval must be positive");
  }
  const std::string& s = o.service_name_from;
  if (s != "exe" && s != "comm" && s != "cgroup" && !(s.rfind("env:", 0) == 0 && s.size() > 4)) {
    throw Error(ErrorKind::kUsage, "--service-name-from must be exe, comm, cgroup or env:VAR");
  }
}

int RunServe(const ServeOptions& options, std::ostream& log) {
  ValidateServeOptions(options);
  auto [host, port] = SplitListenAddress(options.listen);

  // Signals are taken by one thread with sigwait; block them before any
  // thread exists so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client or worker that went away is an error return

  // Bind first: with port 0 the kernel picks the port, and /targets must
  // name the address clients really reach.
  httplib::Server server;
  std::string listen_address = options.listen;
  if (port == 0) {
    int bound = server.bind_to_any_port(host);
    if (bound < 0) throw Error(ErrorKind::kIo, "cannot listen on ", options.listen);
    listen_address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                     std::to_string(bound);
  } else if (!server.bind_to_port(host, port)) {
    throw Error(ErrorKind::kIo, "cannot listen on ", options.listen);
  }
  Service service(options, log, listen_address);
  // Request line and each header line are bounded by the library
  // (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH, CPPHTTPLIB_HEADER_MAX_LENGTH: 8192
  // in Debian's build; longer gets 414/400); the number of headers here.
  constexpr size_t kMaxHeaders = 64;
  server.new_task_queue = [] { return new httplib::ThreadPool(16); };
  server.set_read_timeout(5, 0);
  server.set_write_timeout(30, 0);
  server.set_payload_max_length(4096);
  server.set_keep_alive_max_count(100);
  server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    if (req.headers.size() > kMaxHeaders) {
      ServeError(res, 431, "too many header fields");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!service.token().empty()) {
      std::string auth = req.get_header_value("Authorization");
      constexpr std::string_view kBearer = "Bearer ";
      bool ok = auth.size() > kBearer.size() && auth.compare(0, kBearer.size(), kBearer) == 0 &&
                TokenMatches(auth.substr(kBearer.size()), service.token());
      if (!ok) {
        res.set_header("WWW-Authenticate", "Bearer realm=\"goheap2pprof\"");
        ServeError(res, 401, "unauthorized: send Authorization: Bearer <token>");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server.Get(".*", [&](const httplib::Request& req, httplib::Response& res) {
    try {
      service.Handle(req, res);
    } catch (const std::exception& e) {
      // One request's boundary: the server keeps serving.
      ServeError(res, 500, std::string("internal error: ") + e.what());
    }
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      std::string text =
          res.status == 404 ? "404 page not found" : "status " + std::to_string(res.status);
      res.set_content(text + "\n", "text/plain; charset=utf-8");
    }
  });
  server.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    service.metrics().RequestServed(res.status);
    if (options.verbose) {
      std::ostringstream line;
      line << "goheap2pprof serve: " << req.remote_addr << " \"" << req.method << " "
           << req.target.substr(0, 512) << "\" " << res.status << " " << res.body.size() << "\n";
      service.Log(line.str());
    }
  });

  service.Start();
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    log << "goheap2pprof serve: signal " << sig << ", shutting down\n" << std::flush;
    service.Stop();
    server.stop();
  });
  log << "goheap2pprof serve: listening on " << listen_address << "\n" << std::flush;
  bool ok = server.listen_after_bind();
  // listen_after_bind also returns when the socket fails; wake the signal
  // thread so it can be joined.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  return ok ? 0 : static_cast<int>(ErrorKind::kIo);
}

}  // namespace goheap2pprof
