// The goroutine leak report (pprof/growth/goroutine_leak.h) over a
// hand-built pclntab: the grouping of parked goroutines by creation site and
// wait reason, the oldest wait, the goroutines marked leaked, and the
// ranking and classes of the groups over snapshots.
#include "pprof/growth/goroutine_leak.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "hand_pclntab.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {
// Named: the unity build puts this file beside goroutine_test.cc's constants.
namespace goroutine_leak_test {
namespace {

using testing_pclntab::BuildGo120Table;
using testing_pclntab::HandTable;

constexpr uint64_t kText = 0x400000;
constexpr uint64_t kGopark = kText, kLeaker = kText + 0x100, kPool = kText + 0x200;
constexpr uint32_t kRunnable = 1, kWaiting = 4, kLeaked = 10;
constexpr uint8_t kChanReceive = 1, kSelect = 2;
constexpr int64_t kSecond = 1'000'000'000;

class GoroutineLeakTest : public ::testing::Test {
 protected:
  GoroutineLeakTest()
      : table_(BuildGo120Table({
            {.name = "runtime.gopark", .frame_size = 0x18},
            {.name = "main.leaker", .file = "leak.go"},
            {.name = "main.pool", .file = "pool.go"},
        })),
        tab_(table_.table, kText, table_.gofunc),
        sym_(tab_, TraitsForVersion({1, 27, 3})) {}

  GoroutineDumpInput Input(GoVersion v = {1, 27, 3}) const {
    return {.pclntab = &tab_,
            .symbolizer = &sym_,
            .version = v,
            .bias = 0,
            .wait_reasons = {"", "chan receive", "select"},
            .now = 100 * kSecond};
  }

  static Goroutine G(uint64_t goid, uint64_t gopc, uint8_t reason, uint32_t status = kWaiting,
                     int64_t wait_since = 0) {
    Goroutine g;
    g.goid = goid;
    g.gopc = gopc + 0x10;
    g.wait_reason = reason;
    g.status = status;
    g.wait_since = wait_since;
    g.pcs = {kGopark + 0x20};
    return g;
  }

  HandTable table_;
  Pclntab tab_;
  Symbolizer sym_;
};

// A tally whose groups are (site, reason) -> parked, at time t seconds.
GoroutineTally Tally(int64_t t, std::vector<std::pair<std::string, int64_t>> groups) {
  GoroutineTally tally;
  tally.time_nanos = t * kSecond;
  for (const auto& [site, parked] : groups) {
    tally.groups[{site, "chan receive"}].parked = parked;
    tally.goroutines += parked;
  }
  return tally;
}

TEST_F(GoroutineLeakTest, TallyGroupsParkedGoroutinesBySiteAndWaitReason) {
  GoroutineSnapshot s;
  s.goroutines = {G(3, kLeaker, kChanReceive, kWaiting, 40 * kSecond),
                  G(4, kLeaker, kChanReceive, kWaiting, 70 * kSecond),
                  G(5, kLeaker, kChanReceive, kLeaked),
                  G(6, kLeaker, kSelect),
                  G(7, kPool, kChanReceive),
                  G(8, kPool, kChanReceive, kRunnable)};
  s.stats.retried = 2;
  const GoroutineTally t = TallyGoroutines(Input(), s, 5);
  EXPECT_EQ(t.goroutines, 6);
  EXPECT_EQ(t.stats.retried, 2u);
  ASSERT_EQ(t.groups.size(), 3u);  // the runnable goroutine is in none
  const GoroutineGroupTally& leak = t.groups.at({"main.leaker at leak.go:1", "chan receive"});
  EXPECT_EQ(leak.parked, 3);
  EXPECT_EQ(leak.leaked, 1);
  // now - the smallest waitsince; the goroutine without one does not count.
  EXPECT_EQ(leak.oldest_wait_nanos, 60 * kSecond);
  EXPECT_EQ(t.groups.at({"main.leaker at leak.go:1", "select"}).parked, 1);
  const GoroutineGroupTally& pool = t.groups.at({"main.pool at pool.go:1", "chan receive"});
  EXPECT_EQ(pool.parked, 1);
  EXPECT_EQ(pool.oldest_wait_nanos, std::nullopt);
  ASSERT_EQ(t.leaked.size(), 1u);
  EXPECT_EQ(t.leaked[0].goid, 5u);
  EXPECT_EQ(t.leaked[0].group.created_by, "main.leaker at leak.go:1");
  EXPECT_EQ(t.leaked[0].group.wait_reason, "chan receive");
}

TEST_F(GoroutineLeakTest, BeforeGo126StatusTenIsNotLeaked) {
  GoroutineSnapshot s;
  s.goroutines = {G(5, kLeaker, kChanReceive, kLeaked)};
  const GoroutineTally t = TallyGoroutines(Input({1, 25, 3}), s, 0);
  EXPECT_TRUE(t.groups.empty());
  EXPECT_TRUE(t.leaked.empty());
}

TEST(GoroutineLeakReportTest, RanksTheLeakFirstAndCallsOnlyItGrowing) {
  // A leak of 50 a step, a stable pool of 1,000, a churning site, one that
  // drains, and one that appears at the third snapshot.
  const std::vector<int64_t> churn = {16, 4, 20, 9, 15, 3, 12, 18};
  std::vector<GoroutineTally> ts;
  for (int64_t i = 0; i < 8; ++i) {
    std::vector<std::pair<std::string, int64_t>> groups = {
        {"leak", 100 + 50 * i}, {"pool", 1000}, {"churn", churn[i]}, {"drain", 800 - 100 * i}};
    if (i >= 2) groups.emplace_back("new", 5);
    ts.push_back(Tally(i, groups));
  }
  const GoroutineLeakReport r = AnalyzeGoroutineLeaks(std::move(ts), {});
  ASSERT_EQ(r.groups.size(), 5u);
  EXPECT_EQ(r.groups[0].key.created_by, "leak");
  EXPECT_EQ(r.groups[0].growth.growth_class, GrowthClass::kSteadyGrowth);
  EXPECT_NEAR(r.groups[0].growth.slope_objects_per_hour, 50 * 3600, 1);
  EXPECT_EQ(r.groups.back().key.created_by, "drain");
  EXPECT_EQ(r.groups.back().growth.growth_class, GrowthClass::kShrinking);
  for (size_t k = 1; k < r.groups.size(); ++k) {
    EXPECT_NE(r.groups[k].growth.growth_class, GrowthClass::kSteadyGrowth)
        << r.groups[k].key.created_by;
  }
  const auto group = [&](const std::string& site) {
    for (const GoroutineGroupGrowth& g : r.groups) {
      if (g.key.created_by == site) return g;
    }
    return GoroutineGroupGrowth{};
  };
  EXPECT_EQ(group("pool").growth.growth_class, GrowthClass::kBounded);
  EXPECT_EQ(group("new").growth.growth_class, GrowthClass::kNew);
  EXPECT_EQ(group("new").parked, (std::vector<int64_t>{0, 0, 5, 5, 5, 5, 5, 5}));
  EXPECT_EQ(r.goroutines.front(), 100 + 1000 + 16 + 800);
  EXPECT_EQ(GroupsGrowingFaster(r, 100'000), std::vector<size_t>{0});
  EXPECT_TRUE(GroupsGrowingFaster(r, 1'000'000).empty());
}

TEST(GoroutineLeakReportTest, EqualGrowthRanksTheLargerGroupThenByKey) {
  std::vector<GoroutineTally> ts = {Tally(0, {{"a", 1}, {"c", 5}, {"b", 5}}),
                                    Tally(1, {{"a", 1}, {"c", 5}, {"b", 5}})};
  const GoroutineLeakReport r = AnalyzeGoroutineLeaks(std::move(ts), {});
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(r.groups[0].key.created_by, "b");
  EXPECT_EQ(r.groups[1].key.created_by, "c");
  EXPECT_EQ(r.groups[2].key.created_by, "a");
}

TEST(GoroutineLeakReportTest, NeedsTwoSnapshots) {
  std::vector<GoroutineTally> ts = {Tally(0, {{"a", 1}})};
  EXPECT_THROW(AnalyzeGoroutineLeaks(std::move(ts), {}), Error);
}

TEST(GoroutineLeakReportTest, TheLastSnapshotGivesTheLeakedAndTheOldestWait) {
  std::vector<GoroutineTally> ts = {Tally(0, {{"a", 2}}), Tally(60, {{"a", 3}})};
  ts[0].leaked.push_back({.goid = 7, .group = {"a", "chan receive"}, .parked_at = "f a.go:1"});
  ts[1].groups.begin()->second.leaked = 1;
  ts[1].groups.begin()->second.oldest_wait_nanos = 90 * kSecond;
  ts[1].leaked.push_back({.goid = 9, .group = {"a", "chan receive"}, .parked_at = "f a.go:1"});
  const GoroutineLeakReport r = AnalyzeGoroutineLeaks(std::move(ts), {.source = "pid 42",
                                                                      .pid = 42,
                                                                      .process_start = "",
                                                                      .go_version = "go1.27.3",
                                                                      .runtime_marks_leaks = true});
  ASSERT_EQ(r.leaked.size(), 1u);
  EXPECT_EQ(r.leaked[0].goid, 9u);
  EXPECT_EQ(r.groups[0].leaked, 1);
  EXPECT_EQ(r.groups[0].oldest_wait_nanos, 90 * kSecond);

  const std::string text = GoroutineLeakText(r, {.top = 10, .fail_above = std::nullopt});
  EXPECT_TRUE(text.starts_with("goroutine growth of pid 42, go1.27.3\n")) << text;
  EXPECT_NE(text.find("(60.0s), 2 snapshots; goroutines 2 -> 3"), std::string::npos) << text;
  EXPECT_NE(text.find("90.0s       1  chan receive, a\n"), std::string::npos) << text;
  EXPECT_NE(text.find("at the last snapshot): 1 goroutines\n  goroutine 9 [chan receive "
                      "(leaked)] in f a.go:1, created by a\n"),
            std::string::npos)
      << text;

  const nlohmann::json j =
      nlohmann::json::parse(GoroutineLeakJson(r, {.top = 10, .fail_above = 1.0}));
  EXPECT_EQ(j["pid"], 42);
  EXPECT_EQ(j["goroutines"], (std::vector<int>{2, 3}));
  EXPECT_EQ(j["groups"][0]["parked"], (std::vector<int>{2, 3}));
  EXPECT_EQ(j["groups"][0]["oldest_wait_seconds"], 90.0);
  EXPECT_EQ(j["groups"][0]["leaked"], 1);
  EXPECT_EQ(j["leaked"][0]["id"], 9);
  EXPECT_EQ(j["leaked"][0]["parked_at"], "f a.go:1");
  EXPECT_EQ(j["runtime_marks_leaks"], true);
  EXPECT_EQ(j["fail_above"]["per_hour"], 1.0);
}

TEST(GoroutineLeakReportTest, TextSaysWhenTheRuntimeCannotMarkLeaks) {
  std::vector<GoroutineTally> ts = {Tally(0, {{"a", 2}}), Tally(1, {{"a", 2}})};
  GoroutineLeakInfo info;
  info.source = "pid 1";
  std::string text = GoroutineLeakText(AnalyzeGoroutineLeaks(ts, info), {});
  EXPECT_NE(text.find("this Go version's GC does not mark goroutines leaked"), std::string::npos)
      << text;
  info.runtime_marks_leaks = true;
  text = GoroutineLeakText(AnalyzeGoroutineLeaks(ts, info), {});
  EXPECT_NE(text.find("0 goroutines\n  (the runtime marks them only"), std::string::npos) << text;
}

}  // namespace
}  // namespace goroutine_leak_test
}  // namespace goheap2pprof
