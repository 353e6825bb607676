// The agents' HTTP listener (serve, and push's --metrics-listen): plain or
// TLS (optionally mutual), on Boost.Beast/Asio, bounded before any
// authentication. Every connection's memory is bounded while it reads (the
// request line at most 8 KiB, the head at most 64 KiB and 64 fields, counted
// as they arrive, no body is ever read), the head has one deadline, idle
// keep-alive connections time out, connections are capped in total and per
// source (all of loopback is one, IPv6 counts by /64), and a request's Host
// header is checked on a loopback listener (DNS rebinding). A connection
// that has not authenticated gets one request and is the first closed when
// a new one finds the caps full, so clients without credentials cannot
// lock out those with them. The handler sees only complete, authenticated
// GET/HEAD requests; the ones that may block (captures) run on a bounded
// pool, never on the I/O thread. The token and the TLS files can be read
// again (Reload, on SIGHUP) without dropping connections.
// Why Beast and not libmicrohttpd: docs/security/listener.md.
//
//   class Routes : public HttpHandler { ... };
//   HttpListenerOptions o;  o.listen = "127.0.0.1:6061";  o.token = "...";
//   HttpListener listener(o);            // binds; throws Error
//   std::cout << listener.address();     // with the port the kernel chose
//   listener.Run(routes);                // until Stop() from another thread
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
  // Immutable and shared: the requests that joined one capture, and each
  // connection until its write ends, hold one copy, which the listener
  // counts once (ListenerLimits::max_reply_bytes_in_flight). Null: empty.
  // For HEAD only its length is sent.
  std::shared_ptr<const std::string> body;
  // Set when body is gzip that the client gets inflated, this many bytes
  // (the Content-Length): the connection inflates it a chunk at a time as
  // the client reads, and never holds it whole. A stream that ends
  // shorter cuts the connection; one that goes on is cut at this length.
  std::optional<uint64_t> inflated_length;

  void SetBody(std::string text) { body = std::make_shared<const std::string>(std::move(text)); }
  // The length the client is told.
  uint64_t length() const { return inflated_length.value_or(body ? body->size() : 0); }
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
  // With client_ca_file: the names a client certificate may carry (a
  // subjectAltName DNS or URI entry, or the subject CN); empty: any.
  std::vector<std::string> client_allowed_names;
  bool enabled() const { return !cert_file.empty(); }
};

// Defaults and their reasons: docs/security/listener.md.
struct ListenerLimits {
  int max_connections = 512;
  int max_connections_per_address = 32;
  std::chrono::milliseconds header_timeout{
      10'000};  // accept (TLS handshake included) to a whole head
  std::chrono::milliseconds idle_timeout{60'000};   // a keep-alive connection between requests
  std::chrono::milliseconds write_timeout{60'000};  // one whole reply
  int handler_threads = 16;                         // blocking handlers at once
  int handler_queue = 64;  // blocking requests waiting for a thread; more: 503
  // Bytes of replies being written, a body shared by several connections
  // counted once; a reply beyond gets 503 with Retry-After (one is always
  // let through when nothing else is held). Four of the largest captures
  // (--max-capture-bytes, 64 MiB).
  uint64_t max_reply_bytes_in_flight = uint64_t{256} << 20;
};

struct HttpListenerOptions {
  std::string listen = "127.0.0.1:6061";
  std::string token;       // bearer token every request must carry; empty: none
  std::string token_file;  // where token was read from: Reload reads it again
  // A path (e.g. /healthz) answered 200 "ok" by the listener itself, without
  // a token, for probes that must get through while clients without
  // credentials fill the caps; empty: none.
  std::string probe_path;
  // Host header values accepted on a loopback listener besides the listen
  // address, localhost and IP literals (DNS rebinding).
  std::vector<std::string> allowed_hosts;
  TlsFiles tls;
  ListenerLimits limits;
};

constexpr size_t kMaxRequestLine = 8 * 1024;
constexpr size_t kMaxRequestHead = 64 * 1024;
constexpr size_t kMaxHeaderFields = 64;
constexpr uint64_t kMinReplyBytesInFlight = 64 * 1024;

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
  // Reads token_file and the TLS files again; new requests and handshakes
  // use them, open connections stay. From any thread. Throws Error (and
  // keeps what was loaded) when one of them cannot be loaded.
  void Reload();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);
// The source a client address counts against for the per-source cap:
// "loopback" for 127.0.0.0/8, ::1 and their v4-mapped forms, the v4
// address for a v4-mapped one, an IPv6 address's /64 ("2001:db8::/64").
std::string ConnectionSource(const std::string& ip);
// The header lines in a head read so far (the request line not counted),
// up to the blank line that ends it: counted before the parser allocates
// one field for each.
size_t HeaderLines(std::string_view head);
// Whether a client certificate carries one of the allowed names, as a
// subjectAltName DNS (any case) or URI entry or as its subject CN.
// cert is an X509*; void* keeps OpenSSL out of this header.
bool ClientCertificateAllowed(void* cert, const std::vector<std::string>& allowed);
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
// Listener.Reload() for a SIGHUP, a boundary: a reload that fails keeps
// what was loaded and must not stop the role. Returns the line to log
// (who: "goheap2pprof serve"), saying what was reloaded or why not.
std::string ReloadOnSignal(HttpListener& listener, const std::string& who);
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
  std::string probe_path;  // HttpListenerOptions::probe_path

  // A role's listener: its option's name and default address.
  static ListenerFlags Named(std::string flag_name, std::string address) {
    ListenerFlags f;
    f.flag = std::move(flag_name);
    f.listen = std::move(address);
    return f;
  }
  // ValidateListenSecurity and ValidateListenerLimits; throws Error(kUsage).
  void Validate() const;
  // The listener's options, the token read from token_file (ReadTokenFile).
  HttpListenerOptions Options() const;
};

}  // namespace goheap2pprof
