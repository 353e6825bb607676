#include "agent/common/http_listener.h"

#include <arpa/inet.h>
#include <openssl/ssl.h>
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
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/common/query.h"
#include "base/error.h"

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
  r.body = text + "\n";
  return r;
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }

std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

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

// Open connections, in total and per source address. Sessions release
// their slot in their destructor, which may run on a pool thread.
class ConnectionCounts {
 public:
  ConnectionCounts(int total, int per_address) : max_total_(total), max_per_(per_address) {}
  bool TryAcquire(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    int& n = per_address_[address];
    if (total_ >= max_total_ || n >= max_per_) {
      if (n == 0) per_address_.erase(address);
      return false;
    }
    ++n;
    ++total_;
    return true;
  }
  void Release(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = per_address_.find(address);
    if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
    --total_;
  }

 private:
  std::mutex mu_;
  int max_total_, max_per_;
  int total_ = 0;
  std::map<std::string, int> per_address_;
};

std::string SerializeReply(const HttpReply& reply, bool head, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " ";
  out += std::string(http::obsolete_reason(static_cast<http::status>(reply.status)));
  out += "\r\n";
  for (const auto& [name, value] : reply.headers) out += name + ": " + value + "\r\n";
  if (!reply.content_type.empty()) out += "Content-Type: " + reply.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "\r\n";
  if (!head) out += reply.body;
  return out;
}

// The parts of the listener every connection shares.
struct Shared {
  HttpListenerOptions options;
  HttpHandler* handler = nullptr;  // set by Run
  bool check_host = false;
  std::string listen_host;
  // Destroyed in reverse: the I/O context first, with the sessions its
  // pending handlers hold, while the counts and the TLS context they use
  // still exist.
  ConnectionCounts counts;
  std::optional<ssl::context> tls;
  BoundedPool pool;
  net::io_context io;

  explicit Shared(const HttpListenerOptions& o)
      : options(o),
        counts(o.limits.max_connections, o.limits.max_connections_per_address),
        pool(o.limits.handler_threads, o.limits.handler_queue) {}
};

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
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(Shared& shared, Stream stream, std::string peer)
      : shared_(shared), stream_(std::move(stream)), peer_(std::move(peer)) {}
  ~Session() { shared_.counts.Release(peer_); }

  void Start() {
    // One deadline from accept to the first whole head, the TLS
    // handshake included.
    Lowest().expires_after(Seconds(shared_.options.limits.header_timeout_seconds));
    head_started_ = true;
    if constexpr (kTls) {
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->Abort();
                                self->BeginRequest();
                              });
    } else {
      BeginRequest();
    }
  }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void BeginRequest() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(kMaxRequestHead));
    parser_->eager(false);
    // The body is never read: its length must not fail the head (the
    // answer to a body is 413, after the head). Not boost::none: Boost
    // 1.74 compares the length with the optional itself, and none loses.
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (buffer_.size() > 0 && !head_started_) {
      head_started_ = true;
      Lowest().expires_after(Seconds(shared_.options.limits.header_timeout_seconds));
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
      Lowest().expires_after(Seconds(shared_.options.limits.header_timeout_seconds));
    }
    Parse();
  }

  void Parse() {
    const auto data = buffer_.data();
    std::string_view seen(static_cast<const char*>(data.data()), data.size());
    if (RequestLineLength(seen) > kMaxRequestLine) {
      return Reject(414, "request line longer than " + std::to_string(kMaxRequestLine) + " bytes");
    }
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
    size_t fields = static_cast<size_t>(std::distance(req.begin(), req.end()));
    if (fields > kMaxHeaderFields) return Reject(431, "too many header fields");
    if (request_.method != "GET" && request_.method != "HEAD") {
      HttpReply r = shared_.handler->Error(405, "method not allowed");
      r.headers.emplace_back("Allow", "GET, HEAD");
      return Finish(std::move(r), /*close=*/true);
    }
    const auto length = parser_->content_length();  // a boost::optional
    if ((length && *length > 0) || parser_->chunked() ||
        req.find(http::field::transfer_encoding) != req.end()) {
      // Never read: the connection closes after the answer.
      return Reject(413, "a request body is not accepted");
    }
    if (shared_.check_host && !HostAllowed(View(req[http::field::host]), shared_.listen_host,
                                           shared_.options.allowed_hosts)) {
      return Finish(
          shared_.handler->Error(421, "misdirected request: Host \"" +
                                          std::string(View(req[http::field::host]).substr(0, 256)) +
                                          "\" is not this server's address (see --allowed-host)"),
          /*close=*/true);
    }
    if (!shared_.options.token.empty() &&
        !BearerMatches(View(req[http::field::authorization]), shared_.options.token)) {
      HttpReply r = shared_.handler->Error(401, "unauthorized: send Authorization: Bearer <token>");
      r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"goheap2pprof\"");
      return Finish(std::move(r), /*close=*/false);
    }
    if (!shared_.handler->Blocks(request_)) return Finish(Call(*shared_.handler, request_), false);
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
      // One request's boundary: the server keeps serving.
      return handler.Error(500, std::string("internal error: ") + e.what());
    }
  }

  void Reject(int status, const std::string& text) {
    if (request_.method.empty()) request_.peer = peer_;
    Finish(shared_.handler->Error(status, text), /*close=*/true);
  }

  void Finish(HttpReply reply, bool close) {
    if (close) keep_alive_ = false;
    out_ = SerializeReply(reply, request_.method == "HEAD", keep_alive_);
    shared_.handler->Served(request_, reply);
    Lowest().expires_after(Seconds(shared_.options.limits.write_timeout_seconds));
    net::async_write(
        stream_, net::buffer(out_),
        [self = this->shared_from_this()](beast::error_code ec, size_t) {
          self->out_.clear();
          self->out_.shrink_to_fit();
          if (ec) return self->Abort();
          if (!self->keep_alive_) return self->Linger();
          self->request_ = HttpRequest{};
          self->head_started_ = false;
          self->Lowest().expires_after(Seconds(self->shared_.options.limits.idle_timeout_seconds));
          self->BeginRequest();
        });
  }

  // After the last answer: the client may still be sending (a body never
  // read). Closing now would reset the connection and could discard the
  // answer at the client, so stop sending, drain a bounded amount for at
  // most a second, then close.
  void Linger() {
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
  static constexpr size_t kMaxDrain = 1 << 20;

  Shared& shared_;
  Stream stream_;
  std::string peer_;
  beast::flat_buffer buffer_{kMaxRequestHead + kReadChunk};
  std::optional<http::request_parser<http::empty_body>> parser_;
  HttpRequest request_;
  bool keep_alive_ = false;
  bool head_started_ = false;
  std::string out_;
  std::array<char, 4096> drain_{};
  size_t drained_ = 0;
};

void LoadTls(ssl::context& ctx, const TlsFiles& tls) {
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  beast::error_code ec;
  ctx.use_certificate_chain_file(tls.cert_file, ec);
  if (ec) throw Error(ErrorKind::kIo, "--tls-cert-file ", tls.cert_file, ": ", ec.message());
  ctx.use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec) throw Error(ErrorKind::kIo, "--tls-key-file ", tls.key_file, ": ", ec.message());
  if (tls.client_ca_file.empty()) return;
  ctx.load_verify_file(tls.client_ca_file, ec);
  if (ec) {
    throw Error(ErrorKind::kIo, "--tls-client-ca-file ", tls.client_ca_file, ": ", ec.message());
  }
  // Tell clients which CAs are accepted, then refuse those without one.
  if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str())) {
    SSL_CTX_set_client_CA_list(ctx.native_handle(), names);
  }
  ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
}

}  // namespace

class HttpListener::Impl {
 public:
  explicit Impl(const HttpListenerOptions& options) : shared_(options), acceptor_(shared_.io) {
    auto [host, port] = SplitListenAddress(options.listen);
    shared_.listen_host = Lower(host);
    shared_.check_host = IsLoopbackHost(host);
    if (options.tls.enabled()) {
      shared_.tls.emplace(ssl::context::tls_server);
      LoadTls(*shared_.tls, options.tls);
    }
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
    if (!shared_.counts.TryAcquire(peer)) {
      // Over a cap: a best-effort answer that cannot block, then close.
      static constexpr char kBusy[] =
          "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
          "Connection: close\r\n\r\n";
      if (!shared_.tls) {
        (void)::send(socket.native_handle(), kBusy, sizeof(kBusy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      }
      socket.close(ec);
      return;
    }
    if (shared_.tls) {
      using TlsStream = beast::ssl_stream<beast::tcp_stream>;
      std::make_shared<Session<TlsStream>>(
          shared_, TlsStream(beast::tcp_stream(std::move(socket)), *shared_.tls), peer)
          ->Start();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(shared_, beast::tcp_stream(std::move(socket)),
                                                   peer)
          ->Start();
    }
  }

  Shared shared_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_{shared_.io};
  std::string address_;
};

HttpListener::HttpListener(const HttpListenerOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}
HttpListener::~HttpListener() = default;
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
  if (IsLoopbackHost(host) || insecure) return;
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
  throw Error(ErrorKind::kUsage, "refusing to listen on ", listen, " (", flag,
              ") with a token over plain HTTP: a bearer token sent in clear text on the "
              "network is not authentication")
      .WithHint(
          "give --tls-cert-file and --tls-key-file (and --tls-client-ca-file for client "
          "certificates), or --insecure-listen if the network is trusted");
}

void ValidateListenerLimits(const ListenerLimits& l) {
  if (l.max_connections < 1 || l.max_connections_per_address < 1) {
    throw Error(ErrorKind::kUsage,
                "--max-connections and --max-connections-per-address must be "
                "at least 1");
  }
  if (!(l.header_timeout_seconds > 0) || !(l.idle_timeout_seconds > 0) ||
      !(l.write_timeout_seconds > 0)) {
    throw Error(ErrorKind::kUsage,
                "--header-timeout, --idle-timeout and --write-timeout must be "
                "positive");
  }
  if (l.handler_threads < 1 || l.handler_threads > 256 || l.handler_queue < 0) {
    throw Error(ErrorKind::kUsage, "--handler-threads must be 1..256");
  }
}

void ListenerFlags::Validate() const {
  ValidateListenSecurity(flag, listen, !token_file.empty(), tls, insecure_listen);
  ValidateListenerLimits(limits);
}

HttpListenerOptions ListenerFlags::Options() const {
  HttpListenerOptions o;
  o.listen = listen;
  if (!token_file.empty()) o.token = ReadTokenFile(token_file);
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
