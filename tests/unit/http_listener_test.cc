// The agents' HTTP listener (agent/common/http_listener.h) over real loopback
// sockets: the limits it enforces before any handler or token check, the
// Host check, the bearer scheme, the connection caps and deadlines.
#include "agent/common/http_listener.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "pprof/output.h"

namespace goheap2pprof {
namespace {

class EchoHandler : public HttpHandler {
 public:
  bool Blocks(const HttpRequest& r) const override { return r.target.rfind("/slow", 0) == 0; }
  HttpReply Handle(const HttpRequest& r) override {
    ++handled;
    if (r.target.rfind("/slow", 0) == 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    HttpReply reply;
    reply.content_type = "text/plain";
    reply.SetBody("target=" + r.target + "\n");
    return reply;
  }
  std::atomic<int> handled{0};
};

// Large replies: /big a body of its own per request, /shared one body for
// every request, /gz a gzipped text the client gets inflated.
class LargeHandler : public HttpHandler {
 public:
  static constexpr size_t kSize = 8 << 20;
  LargeHandler()
      : shared_(std::make_shared<const std::string>(kSize, 's')), text_(Text()), gz_(Gzip(text_)) {}
  bool Blocks(const HttpRequest&) const override { return false; }
  HttpReply Handle(const HttpRequest& r) override {
    HttpReply reply;
    if (r.target == "/shared") reply.body = shared_;
    if (r.target == "/big") reply.SetBody(std::string(kSize, 'b'));
    if (r.target == "/gz") {
      reply.SetBody(gz_);
      reply.inflated_length = text_.size();
    }
    return reply;
  }
  const std::string& text() const { return text_; }

 private:
  static std::string Text() {
    std::string t;
    for (int i = 0; t.size() < 3 * LargeHandler::kSize / 2; ++i)
      t += "line " + std::to_string(i) + "\n";
    return t;
  }
  std::shared_ptr<const std::string> shared_;
  std::string text_;
  std::string gz_;
};

// A listener on a kernel-chosen loopback port, run on its own thread.
template <class Handler = EchoHandler>
class Running {
 public:
  explicit Running(HttpListenerOptions o) : listener_(Listen(o)) {
    thread_ = std::thread([this] { listener_.Run(handler); });
    port_ = std::stoi(listener_.address().substr(listener_.address().rfind(':') + 1));
  }
  ~Running() {
    listener_.Stop();
    thread_.join();
  }
  int port() const { return port_; }
  Handler handler;

 private:
  static const HttpListenerOptions& Listen(HttpListenerOptions& o) {
    if (o.listen == "127.0.0.1:6061") o.listen = "127.0.0.1:0";
    return o;
  }
  HttpListener listener_;
  std::thread thread_;
  int port_ = 0;
};

// A connected socket with a 5 s receive timeout; from is the source address,
// receive_buffer when not 0 its SO_RCVBUF.
int Connect(int port, const char* from = "127.0.0.1", int receive_buffer = 0) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (receive_buffer != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, from, &src.sin_addr);
  bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends what (ignoring a reset: the server may close early) and reads
// until the server closes or 5 s pass.
std::string Exchange(int port, const std::string& what, bool wait_close = true) {
  int fd = Connect(port);
  EXPECT_GE(fd, 0);
  (void)send(fd, what.data(), what.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
    if (!wait_close && got.find("\r\n\r\n") != std::string::npos) break;
  }
  close(fd);
  return got;
}

std::string StatusLine(const std::string& reply) { return reply.substr(0, reply.find("\r\n")); }

TEST(HttpListener, AnswersGetAndHead) {
  Running r{HttpListenerOptions{}};
  std::string get = Exchange(r.port(),
                             "GET /x?a=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Connection: close\r\n\r\n");
  EXPECT_EQ(StatusLine(get), "HTTP/1.1 200 OK");
  EXPECT_NE(get.find("Content-Length: 14\r\n"), std::string::npos) << get;
  EXPECT_NE(get.find("\r\n\r\ntarget=/x?a=1\n"), std::string::npos) << get;
  std::string head = Exchange(r.port(), "HEAD /x HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(StatusLine(head), "HTTP/1.1 200 OK");
  EXPECT_NE(head.find("Content-Length: 10\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "");
}

TEST(HttpListener, KeepAliveServesSeveralRequests) {
  Running r{HttpListenerOptions{}};
  std::string two = Exchange(r.port(),
                             "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nConnection: "
                             "close\r\n\r\n");
  EXPECT_NE(two.find("target=/a"), std::string::npos) << two;
  EXPECT_NE(two.find("target=/b"), std::string::npos) << two;
}

TEST(HttpListener, BoundsTheRequestLineAndHead) {
  Running r{HttpListenerOptions{}};
  // No newline at all: refused once 8 KiB are in, not after the rest.
  EXPECT_EQ(StatusLine(Exchange(r.port(), "GET /" + std::string(9000, 'a'))),
            "HTTP/1.1 414 URI Too Long");
  std::string head = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 40; ++i) head += "X-Filler: " + std::string(2000, 'b') + "\r\n";
  EXPECT_EQ(StatusLine(Exchange(r.port(), head)), "HTTP/1.1 431 Request Header Fields Too Large");
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 80; ++i) many += "X-F" + std::to_string(i) + ": 1\r\n";
  std::string got = Exchange(r.port(), many + "\r\n");
  EXPECT_EQ(StatusLine(got), "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_NE(got.find("too many header fields"), std::string::npos);
  EXPECT_EQ(StatusLine(Exchange(r.port(), "NOT HTTP\r\n\r\n")), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(r.handler.handled.load(), 0);
}

TEST(HttpListener, RefusesOtherMethodsAndBodiesUnread) {
  Running r{HttpListenerOptions{}};
  std::string post = Exchange(r.port(), "POST / HTTP/1.1\r\nContent-Length: 100000000\r\n\r\nxxxx");
  EXPECT_EQ(StatusLine(post), "HTTP/1.1 405 Method Not Allowed") << post;
  EXPECT_NE(post.find("Allow: GET, HEAD\r\n"), std::string::npos);
  EXPECT_NE(post.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(StatusLine(Exchange(r.port(), "GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")),
            "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(StatusLine(Exchange(r.port(),
                                "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "5\r\nhello\r\n")),
            "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(r.handler.handled.load(), 0);
}

TEST(HttpListener, HostHeaderOnLoopback) {
  HttpListenerOptions o;
  o.allowed_hosts = {"profiler.internal"};
  Running r{o};
  auto host = [&](const std::string& h) {
    return StatusLine(
        Exchange(r.port(), "GET / HTTP/1.1\r\nHost: " + h + "\r\nConnection: close\r\n\r\n"));
  };
  EXPECT_EQ(host("attacker.example:" + std::to_string(r.port())),
            "HTTP/1.1 421 Misdirected Request");
  EXPECT_EQ(host("127.0.0.1:" + std::to_string(r.port())), "HTTP/1.1 200 OK");
  EXPECT_EQ(host("localhost"), "HTTP/1.1 200 OK");
  EXPECT_EQ(host("[::1]:80"), "HTTP/1.1 200 OK");
  EXPECT_EQ(host("Profiler.Internal:9"), "HTTP/1.1 200 OK");
}

TEST(HttpListener, BearerSchemeIsCaseInsensitive) {
  HttpListenerOptions o;
  o.token = "secret-token-0123456789";
  Running r{o};
  auto with = [&](const std::string& auth) {
    return StatusLine(
        Exchange(r.port(), "GET / HTTP/1.1\r\n" + auth + "Connection: close\r\n\r\n"));
  };
  EXPECT_EQ(with(""), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(with("Authorization: Bearer secret-token-0123456780\r\n"), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(with("Authorization: Bearer secret-token-0123456789\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(with("Authorization: bearer secret-token-0123456789\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(with("Authorization: BEARER  secret-token-0123456789\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(with("Authorization: Basic secret-token-0123456789\r\n"), "HTTP/1.1 401 Unauthorized");
}

TEST(HttpListener, CapsConnectionsPerAddress) {
  HttpListenerOptions o;
  o.limits.max_connections_per_address = 3;
  o.limits.max_connections = 5;
  Running r{o};
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) held.push_back(Connect(r.port(), "127.0.0.2"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // The fourth from the same address is answered 503 and closed at once.
  int fourth = Connect(r.port(), "127.0.0.2");
  char buf[256] = {};
  ssize_t n = recv(fourth, buf, sizeof(buf) - 1, 0);
  EXPECT_GT(n, 0);
  EXPECT_EQ(std::string(buf).rfind("HTTP/1.1 503", 0), 0u) << buf;
  close(fourth);
  // Another address still gets in, up to the total.
  EXPECT_EQ(StatusLine(Exchange(r.port(), "GET / HTTP/1.1\r\nConnection: close\r\n\r\n")),
            "HTTP/1.1 200 OK");
  for (int fd : held) close(fd);
}

TEST(HttpListener, HeadDeadlineClosesSlowClients) {
  HttpListenerOptions o;
  o.limits.header_timeout_seconds = 1;
  Running r{o};
  int fd = Connect(r.port());
  auto start = std::chrono::steady_clock::now();
  // One byte at a time, each well within any per-read timeout.
  std::string got;
  for (int i = 0; i < 8; ++i) {
    if (send(fd, "G", 1, MSG_NOSIGNAL) != 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  char buf[64];
  while (recv(fd, buf, sizeof(buf), 0) > 0) {
  }
  double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  EXPECT_LT(elapsed_s, 4.0);  // closed at the 1 s deadline, not kept while bytes trickle
}

TEST(HttpListener, IdleKeepAliveConnectionsTimeOut) {
  HttpListenerOptions o;
  o.limits.idle_timeout_seconds = 1;
  Running r{o};
  int fd = Connect(r.port());
  std::string req = "GET /a HTTP/1.1\r\n\r\n";
  ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  auto start = std::chrono::steady_clock::now();
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, static_cast<size_t>(n));
  double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  EXPECT_NE(got.find("Connection: keep-alive"), std::string::npos) << got;
  EXPECT_NE(got.find("target=/a"), std::string::npos) << got;
  // Kept open after the answer, then closed at the idle deadline (the
  // test's own receive timeout is 5 s).
  EXPECT_GT(elapsed_s, 0.5);
  EXPECT_LT(elapsed_s, 4.0);
}

TEST(HttpListener, BlockingHandlersDoNotHoldTheIoThread) {
  Running r{HttpListenerOptions{}};
  std::thread slow([&] { Exchange(r.port(), "GET /slow HTTP/1.1\r\nConnection: close\r\n\r\n"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(StatusLine(Exchange(r.port(), "GET /fast HTTP/1.1\r\nConnection: close\r\n\r\n")),
            "HTTP/1.1 200 OK");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  slow.join();
}

TEST(HttpListener, FullPoolAnswers503) {
  HttpListenerOptions o;
  o.limits.handler_threads = 1;
  o.limits.handler_queue = 0;
  Running r{o};
  std::thread slow([&] { Exchange(r.port(), "GET /slow HTTP/1.1\r\nConnection: close\r\n\r\n"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::string busy = Exchange(r.port(), "GET /slow2 HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(StatusLine(busy), "HTTP/1.1 503 Service Unavailable");
  EXPECT_NE(busy.find("Retry-After: 1\r\n"), std::string::npos) << busy;
  slow.join();
  // Once the thread is free again, it takes the next one. The client has its
  // answer a moment before the handler thread is back in the pool, so a
  // request in that moment may still get 503; within 2 s one must get 200.
  std::string next;
  for (int i = 0; i < 100; ++i) {
    next = StatusLine(Exchange(r.port(), "GET /fast HTTP/1.1\r\nConnection: close\r\n\r\n"));
    if (next != "HTTP/1.1 503 Service Unavailable") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(next, "HTTP/1.1 200 OK");
}

// A client that asks for target and reads only the reply's status line,
// with a receive buffer as small as the kernel allows: the rest of the
// reply stays with the server. -1 if it could not connect.
int AskAndStall(int port, const std::string& target, std::string* status) {
  int fd = Connect(port, "127.0.0.1", 4096);
  if (fd < 0) return -1;
  const std::string req = "GET " + target + " HTTP/1.1\r\n\r\n";
  (void)send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  char buf[64] = {};
  ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
  *status = StatusLine(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0));
  return fd;
}

TEST(HttpListener, RepliesWaitingForReadersAreBudgeted) {
  HttpListenerOptions o;
  o.limits.max_reply_bytes_in_flight = LargeHandler::kSize + (1 << 20);
  Running<LargeHandler> r{o};
  std::string status;
  std::vector<int> held;
  // One body shared by two stalled clients is counted once: both get it.
  held.push_back(AskAndStall(r.port(), "/shared", &status));
  EXPECT_EQ(status, "HTTP/1.1 200 OK");
  held.push_back(AskAndStall(r.port(), "/shared", &status));
  EXPECT_EQ(status, "HTTP/1.1 200 OK");
  // A body of its own would go past the budget: 503, retry later.
  std::string busy = Exchange(r.port(), "GET /big HTTP/1.1\r\n\r\n", /*wait_close=*/false);
  EXPECT_EQ(StatusLine(busy), "HTTP/1.1 503 Service Unavailable") << busy.substr(0, 300);
  EXPECT_NE(busy.find("Retry-After: 1\r\n"), std::string::npos) << busy.substr(0, 300);
  // Once the stalled clients are gone, their bytes are free again.
  for (int fd : held) close(fd);
  std::string got;
  for (int i = 0; i < 100; ++i) {
    got = StatusLine(Exchange(r.port(), "GET /big HTTP/1.1\r\n\r\n", /*wait_close=*/false));
    if (got == "HTTP/1.1 200 OK") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(got, "HTTP/1.1 200 OK");
}

TEST(HttpListener, GzipBodiesAreSentInflated) {
  Running<LargeHandler> r{HttpListenerOptions{}};
  std::string got = Exchange(r.port(), "GET /gz HTTP/1.1\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(StatusLine(got), "HTTP/1.1 200 OK");
  EXPECT_NE(got.find("Content-Length: " + std::to_string(r.handler.text().size()) + "\r\n"),
            std::string::npos);
  EXPECT_TRUE(got.substr(got.find("\r\n\r\n") + 4) == r.handler.text());
  std::string head = Exchange(r.port(), "HEAD /gz HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(head.find("Content-Length: " + std::to_string(r.handler.text().size()) + "\r\n"),
            std::string::npos);
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "");
}

TEST(HttpListener, HostRules) {
  std::vector<std::string> none;
  EXPECT_TRUE(HostAllowed("", "127.0.0.1", none));
  EXPECT_TRUE(HostAllowed("127.0.0.1:6061", "127.0.0.1", none));
  EXPECT_TRUE(HostAllowed("10.1.2.3", "127.0.0.1", none));
  EXPECT_TRUE(HostAllowed("LOCALHOST:6061", "127.0.0.1", none));
  EXPECT_TRUE(HostAllowed("[::1]:6061", "::1", none));
  EXPECT_FALSE(HostAllowed("evil.example", "127.0.0.1", none));
  EXPECT_FALSE(HostAllowed("evil.example:6061", "127.0.0.1", none));
  EXPECT_FALSE(HostAllowed("localhost.evil.example", "127.0.0.1", none));
  EXPECT_FALSE(HostAllowed("localhost:x", "127.0.0.1", none));
  EXPECT_TRUE(HostAllowed("node1:6061", "127.0.0.1", {"node1"}));
  EXPECT_TRUE(HostAllowed("node1:6061", "127.0.0.1", {"node1:6061"}));
  EXPECT_FALSE(HostAllowed("node1:7000", "127.0.0.1", {"node1:6061"}));
}

TEST(HttpListener, BearerRules) {
  const std::string t = "secret-token-1234";
  EXPECT_TRUE(BearerMatches("Bearer secret-token-1234", t));
  EXPECT_TRUE(BearerMatches("bEaReR secret-token-1234", t));
  EXPECT_FALSE(BearerMatches("Bearersecret-token-1234", t));
  EXPECT_FALSE(BearerMatches("Bearer secret-token-12345", t));
  EXPECT_FALSE(BearerMatches("Bearer", t));
  EXPECT_FALSE(BearerMatches("", t));
}

TEST(HttpListener, ListenSecurityRule) {
  TlsFiles none;
  TlsFiles tls{"cert.pem", "key.pem", ""};
  TlsFiles mtls{"cert.pem", "key.pem", "ca.pem"};
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "127.0.0.1:1", false, none, false));
  EXPECT_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", false, none, false), Error);
  // A bearer token in clear text off loopback is not authentication.
  EXPECT_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", true, none, false), Error);
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", true, none, true));
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", true, tls, false));
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", false, mtls, false));
  // TLS alone authenticates no one.
  EXPECT_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", false, tls, false), Error);
  EXPECT_THROW(
      ValidateListenSecurity("--listen", "127.0.0.1:1", false, TlsFiles{"c", "", ""}, false),
      Error);
  EXPECT_THROW(
      ValidateListenSecurity("--listen", "127.0.0.1:1", false, TlsFiles{"", "", "ca"}, false),
      Error);
}

}  // namespace
}  // namespace goheap2pprof
