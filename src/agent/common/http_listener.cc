#include "agent/common/http_listener.h"

#include <arpa/inet.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "agent/common/go_query.h"
#include "base/error.h"
#include "pprof/output.h"

namespace goheap2pprof {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

HttpReply HttpHandler::Error(int status, const std::string& text) const {
  HttpReply r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.SetBody(text + "\n");
  return r;
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }

// Threads for handlers that may block, with a bounded queue: a request
// that finds it full is answered 503 at once instead of piling up.
class BoundedPool {
 public:
  BoundedPool(int threads, int queue) : max_queue_(static_cast<size_t>(queue)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~BoundedPool() { Stop(); }

  bool TryPost(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Waiting: what is queued beyond the threads that are not running
      // a job (they take it at once).
      if (stopping_ || queue_.size() + running_ >= threads_.size() + max_queue_) return false;
      queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
  }

  // Runs what is queued, then joins.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        ++running_;
      }
      job();
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
  }

  size_t max_queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;  // threads running a job
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// A connection as admission sees it: Evict closes it (on the I/O thread).
class Evictable {
 public:
  virtual ~Evictable() = default;
  virtual void Evict() = 0;
};

// Open connections, in total and per source (ConnectionSource), in the
// order they were accepted. A cap that is full does not simply refuse the
// next connection: clients without credentials could then hold every slot
// (issue 38, finding 1), and with all of loopback one source a local
// scraper would share 32 slots with any local user. Instead a connection
// that is neither trusted (a request on it passed authentication) nor in a
// request (its head read, its reply not yet written) is closed to make
// room, the oldest first: one of the new connection's own source, else
// (total full) one of any source, each at least kGrace old; else, with the
// total full, the oldest whatever its age; only when there is none is the
// new one refused. A source at its cap whose connections are all younger
// than kGrace is let over its cap while the total has room. So a flood
// closes its own connections first, and a client that sends its head at
// once (every scraper and probe does) is not closed before it is read:
// it would take kGrace, or as many new connections as the whole total
// (not one source's cap), to reach it. Trusted connections are never
// closed for another. Sessions release their slot in their destructor,
// which may run on a pool thread.
class Admission {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kGrace = std::chrono::milliseconds(100);

  struct Entry {
    std::string source;
    std::weak_ptr<Evictable> connection;
    Clock::time_point accepted;
    bool trusted = false;
    bool in_request = false;
    bool evicted = false;  // closed to make room; no longer counted
  };
  using Slot = std::list<Entry>::iterator;

  Admission(int total, int per_source) : max_total_(total), max_per_(per_source) {}

  // The new connection's slot, or none when the caps are full of
  // connections that may not be closed. *victim: one to close first.
  std::optional<Slot> Admit(const std::string& source, std::weak_ptr<Evictable> connection,
                            std::shared_ptr<Evictable>* victim) {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    const bool source_full = per_source_[source] >= max_per_;
    const bool total_full = total_ >= max_total_;
    std::optional<Slot> oldest;
    if (source_full || total_full) oldest = Oldest(&source, now - kGrace);
    if (!oldest && total_full) oldest = Oldest(nullptr, now - kGrace);
    if (!oldest && total_full) oldest = Oldest(source_full ? &source : nullptr, now);
    if (oldest) {
      *victim = (*oldest)->connection.lock();
      Uncount(**oldest);
    } else if (total_full) {
      if (per_source_[source] == 0) per_source_.erase(source);
      return std::nullopt;
    }
    ++per_source_[source];
    ++total_;
    entries_.push_back(Entry{source, std::move(connection), now});
    return std::prev(entries_.end());
  }

  // What the connection is doing now.
  void Update(Slot slot, bool trusted, bool in_request) {
    std::lock_guard<std::mutex> lock(mu_);
    slot->trusted = trusted;
    slot->in_request = in_request;
  }

  void Release(Slot slot) {
    std::lock_guard<std::mutex> lock(mu_);
    Uncount(*slot);
    entries_.erase(slot);
  }

 private:
  // The oldest connection that may be closed, of source or of any,
  // accepted no later than before.
  std::optional<Slot> Oldest(const std::string* source, Clock::time_point before) {
    for (Slot it = entries_.begin(); it != entries_.end() && it->accepted <= before; ++it) {
      if (it->trusted || it->in_request || it->evicted) continue;
      if (source == nullptr || it->source == *source) return it;
    }
    return std::nullopt;
  }

  void Uncount(Entry& e) {
    if (e.evicted) return;
    e.evicted = true;
    auto it = per_source_.find(e.source);
    if (it != per_source_.end() && --it->second <= 0) per_source_.erase(it);
    --total_;
  }

  std::mutex mu_;
  int max_total_, max_per_;
  int total_ = 0;
  std::map<std::string, int> per_source_;
  std::list<Entry> entries_;
};

// The status line and headers; the body is written from the reply's own
// shared buffer, never copied behind them.
std::string SerializeHead(const HttpReply& reply, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " ";
  out += std::string(http::obsolete_reason(static_cast<http::status>(reply.status)));
  out += "\r\n";
  for (const auto& [name, value] : reply.headers) out += name + ": " + value + "\r\n";
  if (!reply.content_type.empty()) out += "Content-Type: " + reply.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(reply.length()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "\r\n";
  return out;
}

// The bytes that replies being written hold: each body once, however many
// connections write it (the joiners of one capture share it), plus each
// connection's own (its head, an inflating stream's state and chunk). A
// client that does not read keeps its reply's bytes until the write
// deadline; this bounds what all of them keep together.
class ReplyBudget {
 public:
  explicit ReplyBudget(uint64_t max) : max_(max) {}

  // Whether a connection may write `body` now with `own` bytes of its own;
  // then Release with the same arguments once the write ends. Always when
  // nothing is held, so a reply larger than the budget still goes out
  // alone.
  bool TryAcquire(const std::shared_ptr<const std::string>& body, uint64_t own) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool counted = body && bodies_.count(body.get()) != 0;
    const uint64_t more = own + (body && !counted ? body->size() : 0);
    if (held_ != 0 && held_ + more > max_) return false;
    held_ += more;
    if (body) ++bodies_[body.get()];
    return true;
  }

  void Release(const std::shared_ptr<const std::string>& body, uint64_t own) {
    std::lock_guard<std::mutex> lock(mu_);
    held_ -= own;
    if (!body) return;
    auto it = bodies_.find(body.get());
    if (it != bodies_.end() && --it->second == 0) {
      bodies_.erase(it);
      held_ -= body->size();
    }
  }

 private:
  std::mutex mu_;
  const uint64_t max_;
  uint64_t held_ = 0;
  std::map<const std::string*, int> bodies_;  // writers of each body held
};

// What a connection holds while it writes one reply, given back to the
// budget when it is destroyed (the write ended, or the connection did).
class ReplyInFlight {
 public:
  ReplyInFlight(ReplyBudget& budget, std::shared_ptr<const std::string> body, uint64_t own)
      : budget_(budget), body_(std::move(body)), own_(own) {}
  ~ReplyInFlight() { budget_.Release(body_, own_); }
  ReplyInFlight(const ReplyInFlight&) = delete;
  ReplyInFlight& operator=(const ReplyInFlight&) = delete;

 private:
  ReplyBudget& budget_;
  std::shared_ptr<const std::string> body_;
  uint64_t own_;
};

// The parts of the listener every connection shares.
struct Shared {
  HttpListenerOptions options;
  HttpHandler* handler = nullptr;  // set by Run
  bool check_host = false;
  std::string listen_host;
  // Requests need credentials (a token, or a client certificate checked in
  // the handshake): until a connection has shown them it gets one request.
  bool needs_credentials = false;
  // Replaced by Reload, on the I/O thread; a session keeps the TLS context
  // it was made with.
  std::string token;
  std::shared_ptr<ssl::context> tls;
  // Destroyed in reverse: the I/O context first, with the sessions its
  // pending handlers hold, while the admission table and the reply budget
  // they use still exist.
  Admission admission;
  ReplyBudget replies;
  BoundedPool pool;
  net::io_context io;

  explicit Shared(const HttpListenerOptions& o)
      : options(o),
        needs_credentials(!o.token.empty() || !o.tls.client_ca_file.empty()),
        token(o.token),
        admission(o.limits.max_connections, o.limits.max_connections_per_address),
        replies(o.limits.max_reply_bytes_in_flight),
        pool(o.limits.handler_threads, o.limits.handler_queue) {}
};

// ConnectionSource of a parsed address.
std::string SourceOf(net::ip::address a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    a = net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6());
  }
  // Every loopback address is one local user's to choose: 127.0.0.2 to
  // 127.0.0.17 are as cheap as one.
  if (a.is_loopback()) return "loopback";
  if (a.is_v4()) return a.to_string();
  // One host is routinely given a whole /64.
  net::ip::address_v6::bytes_type bytes = a.to_v6().to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return net::ip::address_v6(bytes).to_string() + "/64";
}

// Where the request line ends in the head read so far; its length when
// incomplete.
size_t RequestLineLength(std::string_view head) {
  size_t nl = head.find('\n');
  return nl == std::string_view::npos ? head.size() : nl;
}

// One connection: reads heads (never bodies) within the limits, answers
// what the listener decides itself, hands the rest to the handler, and
// writes replies; all on the I/O thread but the blocking handlers.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>>, public Evictable {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  // tls: the context stream was made with (null for plain HTTP), kept for
  // the session's life when Reload replaces it.
  Session(Shared& shared, std::shared_ptr<ssl::context> tls, Stream stream, std::string peer)
      : shared_(shared), tls_(std::move(tls)), stream_(std::move(stream)), peer_(std::move(peer)) {}
  ~Session() override {
    if (slot_) shared_.admission.Release(*slot_);
  }

  void Start(Admission::Slot slot) {
    slot_ = slot;
    // One deadline from accept to the first whole head, the TLS
    // handshake included.
    Lowest().expires_after(shared_.options.limits.header_timeout);
    head_started_ = true;
    if constexpr (kTls) {
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->Abort();
                                // The handshake checked the client's
                                // certificate when one is required.
                                self->trusted_ = !self->shared_.options.tls.client_ca_file.empty();
                                self->BeginRequest();
                              });
    } else {
      BeginRequest();
    }
  }

  // Over a cap with no connection to close for it: a best-effort answer
  // that cannot block, then close.
  void Busy() {
    static constexpr char kBusy[] =
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
        "Connection: close\r\n\r\n";
    if constexpr (!kTls) {
      (void)::send(Lowest().socket().native_handle(), kBusy, sizeof(kBusy) - 1,
                   MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    Abort();
  }

  // Closed to make room for a new connection (Admission).
  void Evict() override { Abort(); }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  // Tells admission whether this connection may be closed for another.
  void Track(bool in_request) { shared_.admission.Update(*slot_, trusted_, in_request); }

  void BeginRequest() {
    Track(/*in_request=*/false);
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(kMaxRequestHead));
    parser_->eager(false);
    // The body is never read: its length must not fail the head (the
    // answer to a body is 413, after the head). Not boost::none: Boost
    // 1.74 compares the length with the optional itself, and none loses.
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (buffer_.size() > 0 && !head_started_) {
      head_started_ = true;
      Lowest().expires_after(shared_.options.limits.header_timeout);
    }
    if (buffer_.size() > 0) return Parse();
    ReadSome();
  }

  void ReadSome() {
    size_t room = kMaxRequestHead + kReadChunk - buffer_.size();
    stream_.async_read_some(
        buffer_.prepare(std::min(room, kReadChunk)),
        [self = this->shared_from_this()](beast::error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(beast::error_code ec, size_t n) {
    if (ec) return Abort();
    buffer_.commit(n);
    if (!head_started_) {
      // The first byte after an idle keep-alive period starts the head's
      // deadline.
      head_started_ = true;
      Lowest().expires_after(shared_.options.limits.header_timeout);
    }
    Parse();
  }

  void Parse() {
    const auto data = buffer_.data();
    std::string_view seen(static_cast<const char*>(data.data()), data.size());
    if (RequestLineLength(seen) > kMaxRequestLine) {
      return Reject(414, "request line longer than " + std::to_string(kMaxRequestLine) + " bytes");
    }
    // Counted before the parser sees the head: it allocates every field
    // at once when the head is complete, about 70 bytes each, so 16,000
    // empty fields in 64 KiB would cost a connection 1.1 MB.
    if (HeaderLines(seen) > kMaxHeaderFields) return Reject(431, "too many header fields");
    beast::error_code ec;
    size_t used = parser_->put(data, ec);
    buffer_.consume(used);
    if (ec == http::error::need_more) {
      if (buffer_.size() >= kMaxRequestHead) {
        return Reject(431,
                      "request head larger than " + std::to_string(kMaxRequestHead) + " bytes");
      }
      return ReadSome();
    }
    if (ec == http::error::header_limit) {
      return Reject(431, "request head larger than " + std::to_string(kMaxRequestHead) + " bytes");
    }
    if (ec || !parser_->is_header_done()) {
      return Reject(400, "malformed HTTP request: " + ec.message());
    }
    Dispatch();
  }

  // Everything checked before the handler, in the order that reads least.
  void Dispatch() {
    const auto& req = parser_->get();
    request_ = HttpRequest{
        std::string(View(req.method_string())), std::string(View(req.target())), peer_, {}};
    keep_alive_ = req.keep_alive();
    Track(/*in_request=*/true);
    if (request_.method != "GET" && request_.method != "HEAD") {
      HttpReply r = shared_.handler->Error(405, "method not allowed");
      r.headers.emplace_back("Allow", "GET, HEAD");
      return Refuse(std::move(r));
    }
    const auto length = parser_->content_length();  // a boost::optional
    if ((length && *length > 0) || parser_->chunked() ||
        req.find(http::field::transfer_encoding) != req.end()) {
      // Never read: the connection closes after the answer.
      return Reject(413, "a request body is not accepted");
    }
    if (shared_.check_host && !HostAllowed(View(req[http::field::host]), shared_.listen_host,
                                           shared_.options.allowed_hosts)) {
      return Refuse(
          shared_.handler->Error(421, "misdirected request: Host \"" +
                                          std::string(View(req[http::field::host]).substr(0, 256)) +
                                          "\" is not this server's address (see --allowed-host)"));
    }
    // Before the token: a probe must get through without one. It is the
    // one answer a connection without credentials gets and keeps open
    // only where none are needed.
    if (IsProbe()) return Finish(ProbeReply(), shared_.needs_credentials && !trusted_);
    if (!shared_.token.empty() &&
        !BearerMatches(View(req[http::field::authorization]), shared_.token)) {
      HttpReply r = shared_.handler->Error(401, "unauthorized: send Authorization: Bearer <token>");
      r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"goheap2pprof\"");
      return Refuse(std::move(r));
    }
    if (shared_.needs_credentials && !trusted_) {
      trusted_ = true;
      Track(/*in_request=*/true);
    }
    if (!shared_.handler->Blocks(request_)) return Finish(Call(*shared_.handler, request_), false);
    RunOnPool();
  }

  // A handler that blocks runs on the pool, its reply written on the I/O
  // thread; a full queue answers 503 at once.
  void RunOnPool() {
    // While the handler runs nothing is read, and the write sets its own
    // deadline.
    Lowest().expires_never();
    auto self = this->shared_from_this();
    // Nothing reads the socket while the handler runs: a peer's FIN or RST
    // shows in poll as the client having gone.
    request_.client_gone = [fd = Lowest().socket().native_handle()] {
      pollfd p{fd, POLLRDHUP, 0};
      return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    };
    bool queued = shared_.pool.TryPost([self] {
      HttpReply reply = Call(*self->shared_.handler, self->request_);
      net::post(self->shared_.io, [self, reply = std::move(reply)]() mutable {
        self->Finish(std::move(reply), false);
      });
    });
    if (!queued) {
      HttpReply r = shared_.handler->Error(503, "server busy: too many requests waiting");
      r.headers.emplace_back("Retry-After", "1");
      Finish(std::move(r), false);
    }
  }

  static HttpReply Call(HttpHandler& handler, const HttpRequest& request) {
    try {
      return handler.Handle(request);
    } catch (const std::exception& e) {
      // Boundary: one request; the server keeps serving.
      return handler.Error(500, std::string("internal error: ") + e.what());
    }
  }

  bool IsProbe() const {
    const std::string& probe = shared_.options.probe_path;
    return !probe.empty() &&
           std::string_view(request_.target).substr(0, request_.target.find('?')) ==
               std::string_view(probe);
  }

  static HttpReply ProbeReply() {
    HttpReply r;
    r.content_type = "text/plain; charset=utf-8";
    r.headers.emplace_back("Cache-Control", "no-store");
    r.SetBody("ok\n");
    return r;
  }

  void Reject(int status, const std::string& text) {
    if (request_.method.empty()) request_.peer = peer_;
    Refuse(shared_.handler->Error(status, text));
  }

  // An error answer, after which the connection closes: the head and its
  // parser are freed first, so a connection that is only being answered
  // and drained holds nothing it read.
  void Refuse(HttpReply reply) {
    parser_.reset();
    buffer_.clear();
    buffer_.shrink_to_fit();
    Finish(std::move(reply), /*close=*/true);
  }

  void Finish(HttpReply reply, bool close) {
    if (close) keep_alive_ = false;
    // HEAD sends the head alone, with the body's length: it holds no body.
    const bool head_only = request_.method == "HEAD";
    head_ = SerializeHead(reply, keep_alive_);
    body_ = head_only ? nullptr : reply.body;
    bool inflate = body_ && reply.inflated_length;
    const uint64_t own = head_.size() + (inflate ? kChunk + kInflateState : 0);
    if (shared_.replies.TryAcquire(body_, own)) {
      in_flight_.emplace(shared_.replies, body_, own);
    } else {
      reply = OverBudget();
      head_ = SerializeHead(reply, keep_alive_);
      body_ = head_only ? nullptr : reply.body;
      inflate = false;
    }
    shared_.handler->Served(request_, reply);
    // One deadline for the whole reply, set once: a write that makes some
    // progress does not move it (beast's tcp_stream keeps the expiry
    // across its partial writes), so a client reading a byte now and then
    // cannot hold the reply longer.
    Lowest().expires_after(shared_.options.limits.write_timeout);
    if (!inflate) {
      const std::array<net::const_buffer, 2> buffers = {
          net::buffer(head_), body_ ? net::buffer(*body_) : net::const_buffer()};
      return net::async_write(
          stream_, buffers,
          [self = this->shared_from_this()](beast::error_code ec, size_t) { self->Written(ec); });
    }
    gunzip_.emplace(*body_);
    chunk_.resize(kChunk);
    unsent_ = *reply.inflated_length;
    net::async_write(stream_, net::buffer(head_),
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->Abort();
                       self->WriteChunk();
                     });
  }

  // Over the reply budget: the reply is dropped and the client told when to
  // retry, as the writes that hold the budget end within their deadline.
  // The answer is small and not counted; the connection closes after it.
  HttpReply OverBudget() {
    keep_alive_ = false;
    HttpReply r = shared_.handler->Error(
        503, "server busy: too many reply bytes are waiting for clients to read them");
    r.headers.emplace_back("Retry-After", "1");
    return r;
  }

  // The next chunk of an inflated body, inflated only once the client took
  // the last one: at most one chunk per connection, however slow it reads.
  void WriteChunk() {
    if (unsent_ == 0) return Written({});
    Expected<size_t> read = gunzip_->TryRead(
        std::span<char>(chunk_.data(), std::min<uint64_t>(chunk_.size(), unsent_)));
    // A worker's bad stream: the client sees a body short of its
    // Content-Length.
    if (!read || *read == 0) return Abort();
    const size_t n = *read;
    unsent_ -= n;
    net::async_write(stream_, net::buffer(chunk_.data(), n),
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->Abort();
                       self->WriteChunk();
                     });
  }

  void Written(beast::error_code ec) {
    EndReply();
    if (ec) return Abort();
    if (!keep_alive_) return Linger();
    request_ = HttpRequest{};
    head_started_ = false;
    Lowest().expires_after(shared_.options.limits.idle_timeout);
    BeginRequest();
  }

  // Gives back what the reply held, to the budget and the allocator.
  void EndReply() {
    gunzip_.reset();
    chunk_ = {};
    head_ = {};
    body_.reset();
    in_flight_.reset();
  }

  // After the last answer: the client may still be sending (a body never
  // read). Closing now would reset the connection and could discard the
  // answer at the client, so stop sending, drain a bounded amount for at
  // most a second, then close.
  void Linger() {
    Track(/*in_request=*/false);
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    Lowest().expires_after(std::chrono::seconds(1));
    Drain();
  }

  void Drain() {
    Lowest().async_read_some(net::buffer(drain_),
                             [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                               self->drained_ += n;
                               if (ec || self->drained_ > kMaxDrain) return self->Abort();
                               self->Drain();
                             });
  }

  void Abort() {
    beast::error_code ignored;
    Lowest().socket().close(ignored);
  }

  static constexpr size_t kReadChunk = 4096;
  // An inflated body goes out in chunks of this size; zlib's state and
  // window take about kInflateState more.
  static constexpr size_t kChunk = 64 * 1024;
  static constexpr size_t kInflateState = 48 * 1024;
  static constexpr size_t kMaxDrain = 1 << 20;

  Shared& shared_;
  std::shared_ptr<ssl::context> tls_;  // before stream_, which uses it
  Stream stream_;
  std::string peer_;
  std::optional<Admission::Slot> slot_;
  bool trusted_ = false;  // see Admission
  beast::flat_buffer buffer_{kMaxRequestHead + kReadChunk};
  std::optional<http::request_parser<http::empty_body>> parser_;
  HttpRequest request_;
  bool keep_alive_ = false;
  bool head_started_ = false;
  // The reply being written: its head and body, the budget's claim, and
  // for an inflated body the stream, its chunk and what is left to send.
  std::string head_;
  std::shared_ptr<const std::string> body_;
  std::optional<ReplyInFlight> in_flight_;
  std::optional<GunzipStream> gunzip_;
  std::vector<char> chunk_;
  uint64_t unsent_ = 0;
  std::array<char, 4096> drain_{};
  size_t drained_ = 0;
};

// The client CAs and, with allowed names, the check of the client's own
// certificate; throws Error(kIo).
void LoadClientCa(ssl::context& ctx, const TlsFiles& tls) {
  beast::error_code ec;
  ctx.load_verify_file(tls.client_ca_file, ec);
  if (ec) {
    throw Error(ErrorKind::kIo, "--tls-client-ca-file ", tls.client_ca_file, ": ", ec.message());
  }
  // Tell clients which CAs are accepted, then refuse those without one.
  if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str())) {
    SSL_CTX_set_client_CA_list(ctx.native_handle(), names);
  }
  ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  if (tls.client_allowed_names.empty()) return;
  ctx.set_verify_callback(
      [names = tls.client_allowed_names](bool preverified, ssl::verify_context& v) {
        X509_STORE_CTX* store = v.native_handle();
        // The chain above the client's own certificate is the CAs'
        // business; the names are checked on the client's (depth 0).
        if (!preverified || X509_STORE_CTX_get_error_depth(store) > 0) return preverified;
        return ClientCertificateAllowed(X509_STORE_CTX_get_current_cert(store), names);
      });
}

// A server context from the TLS files; throws Error(kIo).
std::shared_ptr<ssl::context> LoadTls(const TlsFiles& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  beast::error_code ec;
  ctx->use_certificate_chain_file(tls.cert_file, ec);
  if (ec) throw Error(ErrorKind::kIo, "--tls-cert-file ", tls.cert_file, ": ", ec.message());
  ctx->use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec) throw Error(ErrorKind::kIo, "--tls-key-file ", tls.key_file, ": ", ec.message());
  if (!tls.client_ca_file.empty()) LoadClientCa(*ctx, tls);
  return ctx;
}

}  // namespace

class HttpListener::Impl {
 public:
  explicit Impl(const HttpListenerOptions& options) : shared_(options), acceptor_(shared_.io) {
    auto [host, port] = SplitListenAddress(options.listen);
    shared_.listen_host = Lower(host);
    shared_.check_host = IsLoopbackHost(host);
    if (options.tls.enabled()) shared_.tls = LoadTls(options.tls);
    tcp::endpoint endpoint = Resolve(host, port, options.listen);
    beast::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) throw Error(ErrorKind::kIo, "cannot listen on ", options.listen, ": ", ec.message());
    tcp::endpoint bound = acceptor_.local_endpoint();
    std::string bound_host = bound.address().to_string();
    if (bound.address().is_v6()) bound_host = "[" + bound_host + "]";
    address_ =
        (port == 0 ? bound_host : (host.find(':') != std::string::npos ? "[" + host + "]" : host)) +
        ":" + std::to_string(bound.port());
  }

  const std::string& address() const { return address_; }

  void Run(HttpHandler& handler) {
    shared_.handler = &handler;
    Accept();
    shared_.io.run();
    shared_.pool.Stop();
  }

  void Stop() {
    net::post(shared_.io, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
      retry_.cancel();
      shared_.io.stop();
    });
  }

  // Loads on the calling thread (a slow file never holds the I/O thread),
  // swaps on the I/O thread, the only one that reads them.
  void Reload() {
    const HttpListenerOptions& o = shared_.options;
    std::string token = o.token_file.empty() ? o.token : ReadTokenFile(o.token_file);
    std::shared_ptr<ssl::context> tls = o.tls.enabled() ? LoadTls(o.tls) : nullptr;
    net::post(shared_.io, [this, token = std::move(token), tls = std::move(tls)]() mutable {
      shared_.token = std::move(token);
      if (tls) shared_.tls = std::move(tls);
    });
  }

 private:
  static tcp::endpoint Resolve(const std::string& host, int port, const std::string& listen) {
    beast::error_code ec;
    net::ip::address a = net::ip::make_address(host, ec);
    if (!ec) return tcp::endpoint(a, static_cast<unsigned short>(port));
    net::io_context io;
    tcp::resolver resolver(io);
    auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      throw Error(ErrorKind::kUsage, "cannot resolve the host of ", listen, ": ", ec.message());
    }
    return results.begin()->endpoint();
  }

  void Accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted) return;
      if (!ec) {
        Admit(std::move(socket));
        return Accept();
      }
      // Out of descriptors (EMFILE) or memory: accepting again at once
      // would spin; the connections that hold them end within their
      // deadlines.
      retry_.expires_after(std::chrono::milliseconds(100));
      retry_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) Accept();
      });
    });
  }

  void Admit(tcp::socket socket) {
    beast::error_code ec;
    tcp::endpoint remote = socket.remote_endpoint(ec);
    if (ec) return;
    std::string peer = remote.address().to_string();
    std::string source = SourceOf(remote.address());
    if (shared_.tls) {
      using TlsStream = beast::ssl_stream<beast::tcp_stream>;
      Open(std::make_shared<Session<TlsStream>>(
               shared_, shared_.tls, TlsStream(beast::tcp_stream(std::move(socket)), *shared_.tls),
               peer),
           source);
    } else {
      Open(std::make_shared<Session<beast::tcp_stream>>(shared_, nullptr,
                                                        beast::tcp_stream(std::move(socket)), peer),
           source);
    }
  }

  template <class Stream>
  void Open(const std::shared_ptr<Session<Stream>>& session, const std::string& source) {
    std::shared_ptr<Evictable> victim;
    std::optional<Admission::Slot> slot = shared_.admission.Admit(source, session, &victim);
    if (!slot) return session->Busy();
    if (victim) victim->Evict();
    session->Start(*slot);
  }

  Shared shared_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_{shared_.io};
  std::string address_;
};

HttpListener::HttpListener(const HttpListenerOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}
HttpListener::~HttpListener() = default;
void HttpListener::Reload() { impl_->Reload(); }
const std::string& HttpListener::address() const { return impl_->address(); }
void HttpListener::Run(HttpHandler& handler) { impl_->Run(handler); }
void HttpListener::Stop() { impl_->Stop(); }

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

bool BearerMatches(std::string_view authorization, const std::string& token) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() ||
      Lower(authorization.substr(0, kScheme.size())) != kScheme ||
      authorization[kScheme.size()] != ' ') {
    return false;
  }
  std::string_view credentials = authorization.substr(kScheme.size());
  while (!credentials.empty() && credentials.front() == ' ') credentials.remove_prefix(1);
  return TokenMatches(std::string(credentials), token);
}

bool HostAllowed(std::string_view host_header, const std::string& listen_host,
                 const std::vector<std::string>& allowed) {
  if (host_header.empty()) return true;  // HTTP/1.0; browsers always send one
  std::string host = Lower(host_header);
  for (const std::string& a : allowed) {
    if (Lower(a) == host) return true;
  }
  if (host.front() == '[') return host.find(']') != std::string::npos;  // an IPv6 literal
  size_t colon = host.rfind(':');
  if (colon != std::string::npos) {
    std::string_view port = std::string_view(host).substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    host.resize(colon);
  }
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return true;
  if (host == "localhost" || host == listen_host) return true;
  return std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& a) { return Lower(a) == host; });
}

std::string ConnectionSource(const std::string& ip) {
  beast::error_code ec;
  net::ip::address a = net::ip::make_address(ip, ec);
  return ec ? ip : SourceOf(a);
}

size_t HeaderLines(std::string_view head) {
  size_t lines = 0;
  for (size_t start = 0, nl; (nl = head.find('\n', start)) != std::string_view::npos;
       start = nl + 1) {
    std::string_view line = head.substr(start, nl - start);
    if (line.empty() || line == "\r") break;  // the blank line that ends the head
    ++lines;
  }
  return lines == 0 ? 0 : lines - 1;
}

namespace {

// An ASN1 string's bytes, embedded NULs included (a name with one must not
// match the name before it).
std::string_view Asn1Bytes(const ASN1_STRING* s) {
  return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
          static_cast<size_t>(ASN1_STRING_length(s))};
}

bool AnyNameIs(std::string_view name, const std::vector<std::string>& allowed, bool any_case) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) {
    return any_case ? Lower(a) == Lower(name) : a == name;
  });
}

}  // namespace

bool ClientCertificateAllowed(void* cert_ptr, const std::vector<std::string>& allowed) {
  X509* cert = static_cast<X509*>(cert_ptr);
  if (cert == nullptr) return false;
  bool found = false;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names) && !found; ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type == GEN_DNS) found = AnyNameIs(Asn1Bytes(n->d.dNSName), allowed, true);
    if (n->type == GEN_URI)
      found = AnyNameIs(Asn1Bytes(n->d.uniformResourceIdentifier), allowed, false);
  }
  GENERAL_NAMES_free(names);
  if (found) return true;
  const X509_NAME* subject = X509_get_subject_name(cert);
  for (int i = -1; (i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) >= 0;) {
    const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    if (AnyNameIs(Asn1Bytes(cn), allowed, false)) return true;
  }
  return false;
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

namespace {

// A bearer token over plain HTTP off loopback: anyone on the path reads it and then holds
// every right it grants. --insecure-listen opts out of authentication, so it cannot make a
// token safe either; the two together are refused rather than silently leaking the token.
[[noreturn]] void RefuseClearToken(const std::string& flag, const std::string& listen) {
  throw Error(ErrorKind::kUsage, "refusing to listen on ", listen, " (", flag,
              ") with a token over plain HTTP: a bearer token sent in clear text on the "
              "network is not authentication")
      .WithHint(
          "give --tls-cert-file and --tls-key-file (and --tls-client-ca-file for client "
          "certificates) with --token-file, or drop --token-file and give --insecure-listen "
          "if the network is trusted");
}

}  // namespace

void ValidateListenSecurity(const std::string& flag, const std::string& listen, bool has_token,
                            const TlsFiles& tls, bool insecure) {
  auto [host, port] = SplitListenAddress(listen);
  (void)port;
  if (tls.enabled() != !tls.key_file.empty()) {
    throw Error(ErrorKind::kUsage, "--tls-cert-file and --tls-key-file go together");
  }
  if (!tls.client_ca_file.empty() && !tls.enabled()) {
    throw Error(ErrorKind::kUsage, "--tls-client-ca-file needs --tls-cert-file and --tls-key-file");
  }
  if (!tls.client_allowed_names.empty() && tls.client_ca_file.empty()) {
    throw Error(ErrorKind::kUsage, "--tls-client-allowed-name needs --tls-client-ca-file");
  }
  if (IsLoopbackHost(host)) return;
  if (insecure) {
    if (has_token && !tls.enabled()) RefuseClearToken(flag, listen);
    return;
  }
  const bool mutual = !tls.client_ca_file.empty();
  if (tls.enabled() && (has_token || mutual)) return;
  if (!has_token && !mutual) {
    throw Error(ErrorKind::kUsage, "refusing to listen on ", listen, " (", flag,
                "), which is not a loopback address, without authentication: anyone who can "
                "reach it could read the heap profiles of every Go process on this machine")
        .WithHint(
            "give --tls-cert-file and --tls-key-file with --token-file FILE (clients send "
            "Authorization: Bearer <token>) or --tls-client-ca-file (client certificates), or "
            "--insecure-listen if the network is trusted");
  }
  RefuseClearToken(flag, listen);
}

void ValidateListenerLimits(const ListenerLimits& l) {
  if (l.max_connections < 1 || l.max_connections_per_address < 1) {
    throw Error(ErrorKind::kUsage,
                "--max-connections and --max-connections-per-address must be "
                "at least 1");
  }
  using std::chrono::milliseconds;
  if (l.header_timeout <= milliseconds::zero() || l.idle_timeout <= milliseconds::zero() ||
      l.write_timeout <= milliseconds::zero()) {
    throw Error(ErrorKind::kUsage,
                "--header-timeout, --idle-timeout and --write-timeout must be "
                "positive");
  }
  if (l.handler_threads < 1 || l.handler_threads > 256 || l.handler_queue < 0) {
    throw Error(ErrorKind::kUsage, "--handler-threads must be 1..256");
  }
  if (l.max_reply_bytes_in_flight < kMinReplyBytesInFlight) {
    throw Error(ErrorKind::kUsage, "--max-reply-bytes-in-flight must be at least ",
                kMinReplyBytesInFlight);
  }
}

std::string ReloadOnSignal(HttpListener& listener, const std::string& who) {
  try {
    listener.Reload();
    return who + ": SIGHUP: reloaded the token and TLS files";
  } catch (const std::exception& e) {
    // Rollback: a failed reload (an Error, or Asio's when OpenSSL fails)
    // keeps the files loaded before.
    return who + ": SIGHUP: reload failed, still using the token and TLS files loaded before: " +
           e.what();
  }
}

void ListenerFlags::Validate() const {
  ValidateListenSecurity(flag, listen, !token_file.empty(), tls, insecure_listen);
  ValidateListenerLimits(limits);
  if (!probe_path.empty() && probe_path[0] != '/') {
    throw Error(ErrorKind::kUsage, "--probe-path ", probe_path, ": a path starts with /");
  }
}

HttpListenerOptions ListenerFlags::Options() const {
  HttpListenerOptions o;
  o.listen = listen;
  if (!token_file.empty()) o.token = ReadTokenFile(token_file);
  o.token_file = token_file;
  o.probe_path = probe_path;
  o.allowed_hosts = allowed_hosts;
  o.tls = tls;
  o.limits = limits;
  return o;
}

std::string ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::kIo, "cannot read the token file ", path);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.size() < 16) {
    throw Error(ErrorKind::kUsage, "the token in ", path, " is shorter than 16 characters");
  }
  return token;
}

}  // namespace goheap2pprof
