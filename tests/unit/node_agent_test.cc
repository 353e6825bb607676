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

ErrorKind KindOf(const AgentOptions& o) {
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
  EXPECT_EQ(KindOf(o), ErrorKind::kUsage);
}

TEST(NodeAgent, ATriggerNeedsADirectoryOrABackend) {
  AgentOptions o;
  o.watch_on = true;  // e.g. --rss-above without -o and without a backend
  EXPECT_EQ(KindOf(o), ErrorKind::kUsage);
}

TEST(NodeAgent, SharedValuesAreChecked) {
  AgentOptions o;
  o.watch_on = true;
  o.watch.dir = "/";
  o.max_concurrent = 0;  // the one pool's slots: serve's rule, 1..64
  EXPECT_EQ(KindOf(o), ErrorKind::kUsage);
  o.max_concurrent = 2;
  o.service_name_from = "bogus";
  EXPECT_EQ(KindOf(o), ErrorKind::kUsage);
}

TEST(NodeAgent, ReportNeedsADirectory) {
  AgentOptions o;
  o.watch_on = o.push_on = true;
  o.push.pyroscope_url = "http://127.0.0.1:1";
  o.watch.report = true;
  EXPECT_EQ(KindOf(o), ErrorKind::kUsage);
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
