// The agents' HTTP listener (serve, and push's --metrics-listen): plain or
// TLS (optionally mutual), on Boost.Beast/Asio, bounded before any
// authentication. Every connection's memory is bounded while it reads (the
// request line at most 8 KiB, the head at most 64 KiB, no body is ever
// read), the head has one deadline, idle keep-alive connections time out,
// connections are capped in total and per source address, and a request's
// Host header is checked on a loopback listener (DNS rebinding). The
// handler sees only complete, authenticated GET/HEAD requests; the ones
// that may block (captures) run on a bounded pool, never on the I/O thread.
// Why Beast and not libmicrohttpd: docs/security/listener.md.
//
//   class Routes : public HttpHandler { ... };
//   HttpListenerOptions o;  o.listen = "127.0.0.1:6061";  o.token = "...";
//   HttpListener listener(o);            // binds; throws Error
//   std::cout << listener.address();     // with the port the kernel chose
//   listener.Run(routes);                // until Stop() from another thread
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goheap2pprof {

// What a handler sees of a request: no headers beyond what the listener
// already checked (Host, Authorization), no body.
struct HttpRequest {
  std::string method;  // GET or HEAD
  std::string target;  // as sent: path and query
  std::string peer;    // the client's address
  // For a handler that may wait (Blocks): true once the client has closed
  // or reset the connection, so that work nobody will read can be dropped.
  // Quick (one poll), callable from any thread; empty on the I/O thread.
  std::function<bool()> client_gone;
};

struct HttpReply {
  int status = 200;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // for HEAD, only its length is sent
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // True when Handle may wait (a capture, a delta window): it then runs on
  // the listener's pool. False: it runs on the I/O thread and must be quick.
  virtual bool Blocks(const HttpRequest& request) const = 0;
  // Never throws to the listener: an exception becomes a 500.
  virtual HttpReply Handle(const HttpRequest& request) = 0;
  // The listener's own answers (401, 405, 413, 421, 431, 503, ...).
  virtual HttpReply Error(int status, const std::string& text) const;
  // Every answer, the listener's own included, once written or failed.
  virtual void Served(const HttpRequest& request, const HttpReply& reply) {
    (void)request;
    (void)reply;
  }
};

struct TlsFiles {
  std::string cert_file;       // PEM chain; TLS when set
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // PEM CAs; a client must present a certificate they signed
  bool enabled() const { return !cert_file.empty(); }
};

// Defaults and their reasons: docs/security/listener.md.
struct ListenerLimits {
  int max_connections = 512;
  int max_connections_per_address = 32;
  double header_timeout_seconds = 10;  // accept (TLS handshake included) to a whole head
  double idle_timeout_seconds = 60;    // a keep-alive connection between requests
  double write_timeout_seconds = 60;   // one whole reply
  int handler_threads = 16;            // blocking handlers at once
  int handler_queue = 64;              // blocking requests waiting for a thread; more: 503
};

struct HttpListenerOptions {
  std::string listen = "127.0.0.1:6061";
  std::string token;  // bearer token every request must carry; empty: none
  // Host header values accepted on a loopback listener besides the listen
  // address, localhost and IP literals (DNS rebinding).
  std::vector<std::string> allowed_hosts;
  TlsFiles tls;
  ListenerLimits limits;
};

constexpr size_t kMaxRequestLine = 8 * 1024;
constexpr size_t kMaxRequestHead = 64 * 1024;
constexpr size_t kMaxHeaderFields = 64;

class HttpListener {
 public:
  // Binds (and loads the TLS files); throws Error(kIo/kUsage).
  explicit HttpListener(const HttpListenerOptions& options);
  ~HttpListener();
  // host:port clients reach, with the port the kernel chose for port 0.
  const std::string& address() const;
  // Serves until Stop(); waits for running handlers before returning.
  void Run(HttpHandler& handler);
  // From any thread.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);
// Splits "host:port" / "[v6]:port"; throws Error(kUsage).
std::pair<std::string, int> SplitListenAddress(const std::string& listen);
// Constant-time comparison of a presented token with the configured one.
bool TokenMatches(const std::string& presented, const std::string& expected);
// An Authorization header value carrying the token: scheme "Bearer" in any
// case (RFC 9110 11.1), then one or more spaces, then the token.
bool BearerMatches(std::string_view authorization, const std::string& token);
// Whether a Host header may reach a listener on listen_host: empty, an IP
// literal, localhost, the listen host or one of allowed (with or without
// port). Only applied to loopback listeners.
bool HostAllowed(std::string_view host_header, const std::string& listen_host,
                 const std::vector<std::string>& allowed);
// The rule for every listener of the agents: on a loopback address
// anything goes; elsewhere requests must be authenticated (a token over
// TLS, or TLS client certificates) unless insecure is set. flag names the
// listen option in the message. Throws Error(kUsage).
void ValidateListenSecurity(const std::string& flag, const std::string& listen, bool has_token,
                            const TlsFiles& tls, bool insecure);
// Throws Error(kUsage) for limits that cannot work.
void ValidateListenerLimits(const ListenerLimits& limits);
// Reads the first line of a token file, trailing blanks removed; throws
// Error(kIo) or Error(kUsage) for a token under 16 characters.
std::string ReadTokenFile(const std::string& path);

// A listener as an agent's command line describes it (serve's --listen,
// push's --metrics-listen): checked and turned into HttpListenerOptions the
// same way for every role.
struct ListenerFlags {
  std::string flag = "--listen";  // the listen option's name, for messages
  std::string listen;
  std::string token_file;  // empty: no token
  bool insecure_listen = false;
  std::vector<std::string> allowed_hosts;
  TlsFiles tls;
  ListenerLimits limits;

  // ValidateListenSecurity and ValidateListenerLimits; throws Error(kUsage).
  void Validate() const;
  // The listener's options, the token read from token_file (ReadTokenFile).
  HttpListenerOptions Options() const;
};

}  // namespace goheap2pprof
