// `goheap2pprof agent`: the checks it makes before it starts anything, and
// the pool's metric families that show the roles share one pool.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

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
