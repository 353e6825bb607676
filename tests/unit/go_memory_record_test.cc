// watch.jsonl's go_memory object: the classes, the live heap and its goal,
// and the memory the Go runtime does not manage.
#include "agent/watch/go_memory_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace goheap2pprof {
namespace {

GoRuntimeStats Stats() {
  GoRuntimeStats s;
  s.go_version = "go1.26.8";
  auto add = [&](const char* name, uint64_t v) {
    s.metrics.push_back({name, GoMetric::Kind::kUint64, v, 0});
  };
  add("/gc/gomemlimit:bytes", 9223372036854775807ull);
  add("/gc/heap/goal:bytes", 8000000);
  add("/gc/heap/live:bytes", 4000000);
  add("/memory/classes/heap/objects:bytes", 5000000);
  add("/memory/classes/heap/released:bytes", 1000000);
  add("/memory/classes/other:bytes", 300000);
  add("/memory/classes/total:bytes", 10000000);
  s.metrics.push_back({"/memory/classes/odd:float", GoMetric::Kind::kFloat64, 0, 1.5});
  return s;
}

TEST(GoMemoryRecord, ClassesLiveHeapGoalAndNotGo) {
  const nlohmann::json j = GoMemoryRecord(Stats(), 12000000);
  EXPECT_EQ(j["go_version"], "go1.26.8");
  EXPECT_EQ(j["classes"].size(), 3u) << j.dump();
  EXPECT_EQ(j["classes"]["/memory/classes/heap/objects:bytes"], 5000000);
  EXPECT_FALSE(j["classes"].contains("/memory/classes/total:bytes"));
  EXPECT_EQ(j["total"], 10000000);
  EXPECT_EQ(j["live_heap"], 4000000);
  EXPECT_EQ(j["heap_goal"], 8000000);
  EXPECT_TRUE(j["gomemlimit"].is_null()) << "MaxInt64 means no limit";
  EXPECT_EQ(j["rss_anon"], 12000000);
  // 12 MB resident anonymous, of which Go holds 10 - 1 (released) MB.
  EXPECT_EQ(j["not_go"], 3000000);
}

TEST(GoMemoryRecord, NotGoIsSignedAndNullWithoutRss) {
  EXPECT_EQ(GoMemoryRecord(Stats(), 8000000)["not_go"], -1000000);
  const nlohmann::json j = GoMemoryRecord(Stats(), std::nullopt);
  EXPECT_TRUE(j["not_go"].is_null());
  EXPECT_TRUE(j["rss_anon"].is_null());
  GoRuntimeStats old = Stats();
  std::erase_if(old.metrics, [](const GoMetric& m) {
    return m.name == "/gc/heap/live:bytes" || m.name == "/gc/gomemlimit:bytes";
  });
  const nlohmann::json o = GoMemoryRecord(old, 1);
  EXPECT_TRUE(o["live_heap"].is_null()) << "before Go 1.21";
  EXPECT_TRUE(o["gomemlimit"].is_null());
}

TEST(RssAnonBytes, ReadsOurOwn) {
  const std::optional<uint64_t> rss = RssAnonBytes(getpid());
  ASSERT_TRUE(rss);
  EXPECT_GT(*rss, 0u);
  EXPECT_EQ(*rss % 1024, 0u);
  EXPECT_EQ(RssAnonBytes(999999999), std::nullopt);
}

}  // namespace
}  // namespace goheap2pprof
