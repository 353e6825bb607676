// An agent's listener flags (ListenerFlags, agent/common/http_listener.h):
// the one check and the one translation into listener options that serve's
// --listen and push's --metrics-listen share.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "agent/common/http_listener.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

TEST(ListenerFlags, OptionsCarryEveryFlagAndTheTokenFromItsFile) {
  char dir[] = "/tmp/listener_flags_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string token_file = std::string(dir) + "/token";
  std::ofstream(token_file) << "0123456789abcdefXYZ  \nsecond line\n";
  ListenerFlags f;
  f.flag = "--metrics-listen";
  f.listen = "127.0.0.1:0";
  f.token_file = token_file;
  f.allowed_hosts = {"agent.local"};
  f.limits.max_connections = 7;
  f.probe_path = "/healthz";
  const HttpListenerOptions o = f.Options();
  EXPECT_EQ(o.listen, "127.0.0.1:0");
  EXPECT_EQ(o.token, "0123456789abcdefXYZ");
  EXPECT_EQ(o.token_file, token_file);  // read again on SIGHUP
  EXPECT_EQ(o.probe_path, "/healthz");
  EXPECT_EQ(o.allowed_hosts, std::vector<std::string>{"agent.local"});
  EXPECT_EQ(o.limits.max_connections, 7);
  EXPECT_FALSE(o.tls.enabled());
  f.token_file.clear();
  EXPECT_EQ(f.Options().token, "");
  unlink(token_file.c_str());
  rmdir(dir);
}

TEST(ListenerFlags, ValidateNamesTheFlagAndChecksSecurityAndLimits) {
  ListenerFlags f;
  f.flag = "--metrics-listen";
  f.listen = "0.0.0.0:6062";  // not loopback: needs authentication over TLS
  try {
    f.Validate();
    FAIL() << "an open non-loopback listener was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("--metrics-listen"), std::string::npos) << e.what();
  }
  f.insecure_listen = true;
  EXPECT_NO_THROW(f.Validate());
  f.probe_path = "healthz";  // not a path
  EXPECT_THROW(f.Validate(), Error);
  f.probe_path = "/healthz";
  EXPECT_NO_THROW(f.Validate());
  f.limits.max_connections = 0;
  EXPECT_THROW(f.Validate(), Error);
}

}  // namespace
}  // namespace goheap2pprof
