// `goheap2pprof serve`'s option checks, token comparison and the cgroup
// container-id rule.
#include <gtest/gtest.h>
#include <unistd.h>

#include "agent/common/discovery.h"
#include "agent/serve/server.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

TEST(ServeOptions, LoopbackAndListenAddresses) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("::"));
  EXPECT_EQ(SplitListenAddress("127.0.0.1:6061"), (std::pair<std::string, int>("127.0.0.1", 6061)));
  EXPECT_EQ(SplitListenAddress("[::1]:0"), (std::pair<std::string, int>("::1", 0)));
  EXPECT_THROW(SplitListenAddress("6061"), Error);
  EXPECT_THROW(SplitListenAddress("host:70000"), Error);
  EXPECT_THROW(SplitListenAddress("host:+1"), Error);
  EXPECT_THROW(SplitListenAddress(":80"), Error);
}

TEST(ServeOptions, NonLoopbackNeedsATokenOrExplicitInsecurity) {
  ServeOptions o;
  o.listener.listen = "0.0.0.0:6061";
  try {
    ValidateServeOptions(o);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
  // A token in clear text is not enough off loopback: TLS too.
  o.listener.token_file = "/some/file";
  EXPECT_THROW(ValidateServeOptions(o), Error);
  o.listener.tls = TlsFiles{"/some/cert.pem", "/some/key.pem", "", {}};
  EXPECT_NO_THROW(ValidateServeOptions(o));
  o.listener.token_file.clear();
  EXPECT_THROW(ValidateServeOptions(o), Error);
  o.listener.tls.client_ca_file = "/some/ca.pem";
  EXPECT_NO_THROW(ValidateServeOptions(o));
  o.listener.tls = TlsFiles{};
  o.listener.insecure_listen = true;
  EXPECT_NO_THROW(ValidateServeOptions(o));
  o = ServeOptions();
  o.discovery.service_name_from = "env:";
  EXPECT_THROW(ValidateServeOptions(o), Error);
  o.discovery.service_name_from = "env:SERVICE";
  EXPECT_NO_THROW(ValidateServeOptions(o));
  o.workers.max_concurrent = 0;
  EXPECT_THROW(ValidateServeOptions(o), Error);
  o = ServeOptions();
  o.max_deltas = 0;
  EXPECT_THROW(ValidateServeOptions(o), Error);
  o = ServeOptions();
  o.listener.limits.max_connections_per_address = 0;
  EXPECT_THROW(ValidateServeOptions(o), Error);
}

TEST(ServeOptions, TokenComparison) {
  EXPECT_TRUE(TokenMatches("secret-token-1234", "secret-token-1234"));
  EXPECT_FALSE(TokenMatches("secret-token-1235", "secret-token-1234"));
  EXPECT_FALSE(TokenMatches("secret-token-123", "secret-token-1234"));
  EXPECT_FALSE(TokenMatches("secret-token-12345", "secret-token-1234"));
  EXPECT_FALSE(TokenMatches("", "secret-token-1234"));
  // A presented token padded with NULs is not the token.
  EXPECT_FALSE(TokenMatches(std::string("secret-token-1234\0", 18), "secret-token-1234"));
}

TEST(Discovery, ContainerIdFromCgroupPaths) {
  const std::string id(64, 'a');
  EXPECT_EQ(ContainerIdFromCgroup("/system.slice/docker-" + id + ".scope"), id);
  EXPECT_EQ(ContainerIdFromCgroup("/kubepods/burstable/pod1234/cri-containerd-" + id + ".scope"),
            id);
  EXPECT_EQ(ContainerIdFromCgroup("/docker/" + id), id);
  EXPECT_EQ(ContainerIdFromCgroup("/user.slice/user-1000.slice/session-2.scope"), "");
  EXPECT_EQ(ContainerIdFromCgroup("/docker/" + std::string(65, 'b')), "");  // not 64 digits
  EXPECT_EQ(ContainerIdFromCgroup(""), "");
}

TEST(Discovery, ReadsOwnProcessFactsAndAppliesFilters) {
  const pid_t self = getpid();
  std::optional<ProcessFacts> f = ReadProcessFacts(self, {}, {"PATH"});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->pid, self);
  EXPECT_GT(f->start_time, 0u);
  EXPECT_FALSE(f->exe.empty());
  EXPECT_NE(f->key.inode, 0u);
  ProcessFilter deny;
  deny.deny_pids = {self};
  bool forbidden = true;
  EXPECT_FALSE(ReadProcessFacts(self, deny, {}, &forbidden));
  EXPECT_FALSE(forbidden);  // filtered: invisible, not forbidden
  ProcessFilter uid;
  uid.allow_uids = {static_cast<uid_t>(getuid() + 1)};
  EXPECT_FALSE(ReadProcessFacts(self, uid, {}));
  uid.allow_uids = {getuid()};
  EXPECT_TRUE(ReadProcessFacts(self, uid, {}));
  ProcessFilter cg;
  cg.allow_cgroups = {"/no/such/prefix/"};
  EXPECT_FALSE(ReadProcessFacts(self, cg, {}));
  cg.allow_cgroups = {f->cgroup};
  EXPECT_TRUE(ReadProcessFacts(self, cg, {}));
}

}  // namespace
}  // namespace goheap2pprof
