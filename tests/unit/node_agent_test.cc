// `goheap2pprof agent`: the checks it makes before it starts anything, and
// the pool's metric families that show the roles share one pool.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "agent/node/agent.h"
#include "agent/worker/pool.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

ErrorKind AgentKindOf(const AgentOptions& o) {
  std::ostringstream log;
  try {
    RunAgent(o, log);
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "RunAgent started";
  return ErrorKind::kInternal;
}

TEST(NodeAgent, NeedsARole) {
  AgentOptions o;
  EXPECT_EQ(AgentKindOf(o), ErrorKind::kUsage);
}

TEST(NodeAgent, ATriggerNeedsADirectoryOrABackend) {
  AgentOptions o;
  o.watch_on = true;  // e.g. --rss-above without -o and without a backend
  EXPECT_EQ(AgentKindOf(o), ErrorKind::kUsage);
}

TEST(NodeAgent, SharedValuesAreChecked) {
  AgentOptions o;
  o.watch_on = true;
  o.watch.dir = "/";
  o.workers.max_concurrent = 0;  // the one pool's slots: serve's rule, 1..64
  EXPECT_EQ(AgentKindOf(o), ErrorKind::kUsage);
  o.workers.max_concurrent = 2;
  o.discovery.service_name_from = "bogus";
  EXPECT_EQ(AgentKindOf(o), ErrorKind::kUsage);
}

TEST(NodeAgent, ReportNeedsADirectory) {
  AgentOptions o;
  o.watch_on = o.push_on = true;
  o.push.pyroscope_url = "http://127.0.0.1:1";
  o.watch.report = true;
  EXPECT_EQ(AgentKindOf(o), ErrorKind::kUsage);
}

// A triggered push's series has trigger= besides the process's labels and
// the extras: the extras push alone may have leave no room for it.
TEST(NodeAgent, TriggeredPushesKeepRoomForTheTriggerLabel) {
  AgentOptions o;
  o.push_on = o.watch_on = true;
  o.push.pyroscope_url = "http://127.0.0.1:1";
  o.watch.dir = "/tmp";
  for (size_t i = 0; i + kAgentLabels < kMaxLabelsPerSeries; ++i) {
    o.push.labels.emplace_back("extra" + std::to_string(i), "v");
  }
  EXPECT_NO_THROW(ValidatePushOptions(o.push));  // push alone: exactly the limit
  std::ostringstream log;
  try {
    RunAgent(o, log);
    ADD_FAILURE() << "RunAgent started";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("trigger="), std::string::npos) << e.what();
  }
}

// Every setting the agent shares reaches every role, whatever the role's own
// value was: one filter, one naming, one pool's limits.
TEST(NodeAgent, SharedSettingsReachEveryRole) {
  AgentOptions o;
  o.discovery.interval = std::chrono::milliseconds(2500);
  o.discovery.filter.deny_pids = {42};
  o.discovery.service_name_from = "comm";
  o.discovery.host_root = "/host";
  o.discovery.node_name = "node-a";
  o.workers.max_concurrent = 5;
  o.workers.capture_timeout = std::chrono::milliseconds(7000);
  o.workers.limits.address_space_bytes = uint64_t{3} << 30;
  o.workers.limits.max_reply_bytes = uint64_t{1} << 20;
  o.verbose = true;
  o.watch.workers.capture_timeout = std::chrono::milliseconds(1);  // a role's own: overridden
  o.push.metrics_listener.listen = "127.0.0.1:6062";
  o.watch.pids = {7};
  const AgentOptions roles = RoleOptions(o);
  auto check = [&](const char* role, const DiscoverySettings& d, const WorkerSettings& w,
                   bool verbose) {
    SCOPED_TRACE(role);
    EXPECT_EQ(d.interval, std::chrono::milliseconds(2500));
    EXPECT_EQ(d.filter.deny_pids, std::vector<pid_t>{42});
    EXPECT_EQ(d.service_name_from, "comm");
    EXPECT_EQ(d.host_root, "/host");
    EXPECT_EQ(d.node_name, "node-a");
    EXPECT_EQ(w.max_concurrent, 5);
    EXPECT_EQ(w.capture_timeout, std::chrono::milliseconds(7000));
    EXPECT_EQ(w.limits.address_space_bytes, uint64_t{3} << 30);
    EXPECT_EQ(w.limits.max_reply_bytes, uint64_t{1} << 20);
    EXPECT_TRUE(verbose);
  };
  check("serve", roles.serve.discovery, roles.serve.workers, roles.serve.verbose);
  check("push", roles.push.discovery, roles.push.workers, roles.push.verbose);
  check("watch", roles.watch.discovery, roles.watch.workers, roles.watch.verbose);
  // What sharing asks of each role.
  EXPECT_TRUE(roles.push.metrics_listener.listen.empty());  // the one /metrics is serve's
  EXPECT_TRUE(roles.watch.all);
  EXPECT_TRUE(roles.watch.pids.empty());
}

TEST(NodeAgent, PoolMetricsNameEveryRoleAndTheSlots) {
  PoolStats stats;
  stats.workers_started = 3;
  stats.requests["serve"] = 5;
  stats.requests["watch"] = 2;
  stats.requests[""] = 1;
  const std::string text = PoolMetricsText(stats, 2);
  EXPECT_NE(text.find("# TYPE goheap2pprof_pool_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("goheap2pprof_pool_requests_total{role=\"serve\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("goheap2pprof_pool_requests_total{role=\"watch\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("goheap2pprof_pool_requests_total{role=\"other\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("\ngoheap2pprof_pool_workers 2\n"), std::string::npos);
  EXPECT_NE(text.find("\ngoheap2pprof_pool_workers_started_total 3\n"), std::string::npos);
}

}  // namespace
}  // namespace goheap2pprof
