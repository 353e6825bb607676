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
#include <cerrno>
#include <chrono>
#include <fstream>
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
  HttpListener& listener() { return listener_; }
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

// Sends what on fd and reads one answer (its head and Content-Length bytes).
std::string Ask(int fd, const std::string& what) {
  (void)send(fd, what.data(), what.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  for (;;) {
    size_t end = got.find("\r\n\r\n");
    size_t length_at = got.find("Content-Length: ");
    if (end != std::string::npos && length_at != std::string::npos &&
        got.size() >= end + 4 + std::stoul(got.substr(length_at + 16))) {
      break;
    }
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// Whether the server closed fd (end of stream or reset) rather than
// leaving it open until the test's 5 s receive timeout.
bool ClosedByServer(int fd) {
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

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

TEST(HttpListener, FullCapsCloseTheOldestIdleConnection) {
  HttpListenerOptions o;
  o.limits.max_connections_per_address = 3;
  o.limits.max_connections = 5;
  Running r{o};
  // All of loopback is one source: 127.0.0.2 and 127.0.0.3 share its cap.
  std::vector<int> held{Connect(r.port(), "127.0.0.2"), Connect(r.port(), "127.0.0.3"),
                        Connect(r.port(), "127.0.0.2")};
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // The fourth gets in and is answered; the oldest idle one makes room.
  int fourth = Connect(r.port(), "127.0.0.4");
  EXPECT_EQ(StatusLine(Ask(fourth, "GET / HTTP/1.1\r\n\r\n")), "HTTP/1.1 200 OK");
  EXPECT_TRUE(ClosedByServer(held[0]));
  close(fourth);
  for (int fd : held) close(fd);
}

TEST(HttpListener, FullCapsOfRequestsInProgressAnswer503) {
  HttpListenerOptions o;
  o.limits.max_connections = 2;
  Running r{o};
  std::thread a([&] { Exchange(r.port(), "GET /slow HTTP/1.1\r\nConnection: close\r\n\r\n"); });
  std::thread b([&] { Exchange(r.port(), "GET /slow HTTP/1.1\r\nConnection: close\r\n\r\n"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Nothing may be closed for it: both are in a request.
  EXPECT_EQ(StatusLine(Exchange(r.port(), "GET / HTTP/1.1\r\n\r\n")),
            "HTTP/1.1 503 Service Unavailable");
  a.join();
  b.join();
}

TEST(HttpListener, AuthenticatedConnectionsAreNotClosedForOthers) {
  HttpListenerOptions o;
  o.token = "secret-token-0123456789";
  o.limits.max_connections = 2;
  Running r{o};
  int trusted = Connect(r.port());
  const std::string authorized =
      "GET /a HTTP/1.1\r\nAuthorization: Bearer secret-token-0123456789\r\n";
  EXPECT_EQ(StatusLine(Ask(trusted, authorized + "\r\n")), "HTTP/1.1 200 OK");
  int silent = Connect(r.port(), "127.0.0.2");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // At the cap: the silent one is closed for the newcomer, never the
  // authenticated one.
  EXPECT_EQ(StatusLine(Exchange(r.port(), authorized + "Connection: close\r\n\r\n")),
            "HTTP/1.1 200 OK");
  EXPECT_TRUE(ClosedByServer(silent));
  EXPECT_EQ(StatusLine(Ask(trusted, authorized + "\r\n")), "HTTP/1.1 200 OK");
  close(silent);
  close(trusted);
}

TEST(HttpListener, ConnectionsWithoutCredentialsGetOneAnswer) {
  HttpListenerOptions o;
  o.token = "secret-token-0123456789";
  o.probe_path = "/healthz";
  Running r{o};
  // A 401 closes the connection: it cannot be kept to hold a slot.
  int fd = Connect(r.port());
  EXPECT_EQ(StatusLine(Ask(fd, "GET /a HTTP/1.1\r\n\r\n")), "HTTP/1.1 401 Unauthorized");
  EXPECT_TRUE(ClosedByServer(fd));
  close(fd);
  // The probe needs no token, and is that connection's only answer.
  fd = Connect(r.port());
  std::string probe = Ask(fd, "GET /healthz?x=1 HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusLine(probe), "HTTP/1.1 200 OK");
  EXPECT_NE(probe.find("\r\n\r\nok\n"), std::string::npos) << probe;
  EXPECT_TRUE(ClosedByServer(fd));
  close(fd);
  EXPECT_EQ(r.handler.handled.load(), 0);
}

TEST(HttpListener, ProbeKeepsAliveWhereNoCredentialsAreNeeded) {
  HttpListenerOptions o;
  o.probe_path = "/healthz";
  Running r{o};
  std::string two = Exchange(r.port(),
                             "GET /healthz HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nConnection: "
                             "close\r\n\r\n");
  EXPECT_NE(two.find("ok\n"), std::string::npos) << two;
  EXPECT_NE(two.find("target=/b"), std::string::npos) << two;
}

TEST(HttpListener, ReloadReadsTheTokenFileAgain) {
  char dir[] = "/tmp/listener_reload_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/token";
  std::ofstream(file) << "old-token-0123456789\n";
  HttpListenerOptions o;
  o.token_file = file;
  o.token = ReadTokenFile(file);
  Running r{o};
  auto with = [&](const std::string& token) {
    return StatusLine(Exchange(r.port(), "GET / HTTP/1.1\r\nAuthorization: Bearer " + token +
                                             "\r\nConnection: close\r\n\r\n"));
  };
  int kept = Connect(r.port());
  EXPECT_EQ(StatusLine(Ask(kept,
                           "GET / HTTP/1.1\r\nAuthorization: Bearer old-token-0123456789"
                           "\r\n\r\n")),
            "HTTP/1.1 200 OK");
  std::ofstream(file) << "new-token-0123456789\n";
  r.listener().Reload();
  EXPECT_EQ(with("old-token-0123456789"), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(with("new-token-0123456789"), "HTTP/1.1 200 OK");
  // The connection open before the reload stays, and needs the new token.
  EXPECT_EQ(StatusLine(Ask(kept,
                           "GET / HTTP/1.1\r\nAuthorization: Bearer new-token-0123456789"
                           "\r\n\r\n")),
            "HTTP/1.1 200 OK");
  close(kept);
  // A reload that fails keeps the token it had, and says why.
  std::ofstream(file) << "short\n";
  const std::string line = ReloadOnSignal(r.listener(), "test");
  EXPECT_NE(line.find("reload failed"), std::string::npos) << line;
  EXPECT_NE(line.find("shorter than 16"), std::string::npos) << line;
  EXPECT_EQ(with("new-token-0123456789"), "HTTP/1.1 200 OK");
  unlink(file.c_str());
  rmdir(dir);
}

TEST(HttpListener, SourcesOfTheConnectionCaps) {
  EXPECT_EQ(ConnectionSource("127.0.0.1"), "loopback");
  EXPECT_EQ(ConnectionSource("127.3.4.5"), "loopback");
  EXPECT_EQ(ConnectionSource("::1"), "loopback");
  EXPECT_EQ(ConnectionSource("::ffff:127.0.0.9"), "loopback");
  EXPECT_EQ(ConnectionSource("10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(ConnectionSource("::ffff:10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(ConnectionSource("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(ConnectionSource("2001:db8:1:2:bbbb:1:2:3"), "2001:db8:1:2::/64");
  EXPECT_EQ(ConnectionSource("2001:db8:1:3::1"), "2001:db8:1:3::/64");
}

TEST(HttpListener, HeaderLinesCountedBeforeTheHeadIsWhole) {
  EXPECT_EQ(HeaderLines(""), 0u);
  EXPECT_EQ(HeaderLines("GET / HTTP/1.1\r\n"), 0u);
  EXPECT_EQ(HeaderLines("GET / HTTP/1.1\r\na:\r\nb: 1\r\nc"), 2u);
  // The blank line ends the head: what follows is the next request's.
  EXPECT_EQ(HeaderLines("GET / HTTP/1.1\r\na:\r\n\r\nGET / HTTP/1.1\r\nb:\r\n"), 1u);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 16000; ++i) many += "a:\r\n";
  EXPECT_EQ(HeaderLines(many), 16000u);
}

TEST(HttpListener, ManyEmptyFieldsRefusedBeforeTheHeadEnds) {
  Running r{HttpListenerOptions{}};
  // No blank line: the head is incomplete, yet 65 fields are enough.
  std::string head = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 65; ++i) head += "a:\r\n";
  std::string got = Exchange(r.port(), head);
  EXPECT_EQ(StatusLine(got), "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_NE(got.find("too many header fields"), std::string::npos);
}

TEST(HttpListener, HeadDeadlineClosesSlowClients) {
  HttpListenerOptions o;
  o.limits.header_timeout = std::chrono::seconds(1);
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
  o.limits.idle_timeout = std::chrono::seconds(1);
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
  TlsFiles tls{"cert.pem", "key.pem", "", {}};
  TlsFiles mtls{"cert.pem", "key.pem", "ca.pem", {}};
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "127.0.0.1:1", false, none, false));
  EXPECT_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", false, none, false), Error);
  // A bearer token in clear text off loopback is not authentication.
  EXPECT_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", true, none, false), Error);
  // --insecure-listen cannot make it one either: the token would still travel in clear.
  try {
    ValidateListenSecurity("--listen", "0.0.0.0:1", true, none, true);
    ADD_FAILURE() << "--insecure-listen --token-file without TLS off loopback was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token over plain HTTP"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("--tls-cert-file"), std::string::npos) << e.hint();
  }
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", false, none, true));
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", true, tls, true));
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "127.0.0.1:1", true, none, true));
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", true, tls, false));
  EXPECT_NO_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", false, mtls, false));
  // TLS alone authenticates no one.
  EXPECT_THROW(ValidateListenSecurity("--listen", "0.0.0.0:1", false, tls, false), Error);
  EXPECT_THROW(
      ValidateListenSecurity("--listen", "127.0.0.1:1", false, TlsFiles{"c", "", "", {}}, false),
      Error);
  EXPECT_THROW(
      ValidateListenSecurity("--listen", "127.0.0.1:1", false, TlsFiles{"", "", "ca", {}}, false),
      Error);
  // A name allow-list means nothing without client certificates.
  EXPECT_THROW(ValidateListenSecurity("--listen", "127.0.0.1:1", false,
                                      TlsFiles{"c", "k", "", {"client"}}, false),
               Error);
}

}  // namespace
}  // namespace goheap2pprof
