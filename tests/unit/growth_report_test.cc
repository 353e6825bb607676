// The growth report's renderings (pprof/growth/report.h): the ranking, the
// --fail-above test, the JSON fields and the growth profile's sample types
// and values, on snapshots made by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "pprof/growth/report.h"
#include "pprof/profile/view.h"

namespace goheap2pprof {
namespace {

constexpr int64_t kMiB = 1 << 20;

// A rate-1 heap profile at `second` with one sample per (function, bytes)
// pair, 1 KiB objects, each function its own one-frame stack.
pb::Profile GrowthSnapshot(int64_t second,
                           const std::vector<std::pair<std::string, int64_t>>& sites) {
  pb::Profile p;
  p.add_string_table("");
  for (const char* t : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}) {
    pb::ValueType* vt = p.add_sample_type();
    p.add_string_table(t);
    vt->set_type(p.string_table_size() - 1);
  }
  p.set_period(1);
  p.set_time_nanos(second * 1'000'000'000);
  pb::Mapping* m = p.add_mapping();
  m->set_id(7);
  m->set_memory_start(0x400000);
  m->set_memory_limit(0x800000);
  p.add_string_table("/bin/app");
  m->set_filename(p.string_table_size() - 1);
  uint64_t id = 0;
  for (const auto& [fn, bytes] : sites) {
    ++id;
    p.add_string_table(fn);
    pb::Function* f = p.add_function();
    f->set_id(id);
    f->set_name(p.string_table_size() - 1);
    pb::Location* l = p.add_location();
    l->set_id(id);
    l->add_line()->set_function_id(id);
    pb::Sample* s = p.add_sample();
    for (int64_t v : {bytes / 1024, bytes, bytes / 1024, bytes}) s->add_value(v);
    s->add_location_id(id);
  }
  return p;
}

// Twelve snapshots a second apart: a leak of 1 MiB/s, a cache full from the
// start, and a site that shrinks.
GrowthReport Report() {
  GrowthCollector c;
  for (int64_t i = 0; i < 12; ++i) {
    c.Add(GrowthSnapshot(100 + i, {{"main.cache", 8 * kMiB},
                                   {"main.leak", (i + 1) * kMiB},
                                   {"main.shrink", (12 - i) * kMiB}}),
          "s" + std::to_string(i));
  }
  GrowthInfo info;
  info.source = "test";
  return AnalyzeGrowth(std::move(c).Finish(), std::move(info));
}

std::string Leaf(const GrowthReport& r, size_t rank) {
  return r.data.locations[r.data.sites[r.ranking[rank]].locations[0]].lines[0].function;
}

TEST(GrowthReportTest, RanksTheLeakFirstAndTheShrinkingSiteLast) {
  const GrowthReport r = Report();
  ASSERT_EQ(r.ranking.size(), 3u);
  EXPECT_EQ(Leaf(r, 0), "main.leak");
  EXPECT_EQ(Leaf(r, 1), "main.cache");
  EXPECT_EQ(Leaf(r, 2), "main.shrink");
  EXPECT_EQ(r.total.change_bytes, 0);  // the leak and the shrinking site cancel
}

TEST(GrowthReportTest, FailAboveCountsSteadyGrowthAboveTheLowerBound) {
  const GrowthReport r = Report();
  EXPECT_EQ(SitesGrowingFaster(r, 1000.0 * kMiB).size(), 1u);  // 3600 MiB/h
  EXPECT_TRUE(SitesGrowingFaster(r, 4000.0 * kMiB).empty());
}

TEST(GrowthReportTest, JsonHasTheHeaderAndTheSitesInRankOrder) {
  const nlohmann::json j =
      nlohmann::json::parse(GrowthJson(Report(), {.top = 2, .fail_above = 1000.0 * kMiB}));
  EXPECT_EQ(j["snapshots"], 12);
  EXPECT_EQ(j["memprofile_rate"], 1);
  EXPECT_EQ(j["window"]["seconds"], 11.0);
  EXPECT_EQ(j["sites_total"], 3);
  ASSERT_EQ(j["sites"].size(), 2u);
  EXPECT_EQ(j["sites"][0]["class"], "STEADY GROWTH");
  EXPECT_EQ(j["sites"][0]["stack"][0], "main.leak :0");
  EXPECT_NEAR(j["sites"][0]["slope_bytes_per_hour"].get<double>(), 3600.0 * kMiB, 1);
  EXPECT_EQ(j["sites"][0]["change_bytes"], 11 * kMiB);
  EXPECT_EQ(j["sites"][1]["class"], "BOUNDED");
  EXPECT_EQ(j["fail_above"]["sites_above"], 1);
  EXPECT_TRUE(j["totals"]["rss"].is_null());
}

TEST(GrowthReportTest, TotalsGiveTheShareExplainedAndTheTimeToTheCgroupLimit) {
  GrowthReport r = Report();
  // The profile's total did not change (leak and shrink cancel); the cgroup
  // grew 11 MiB in the 11 s window: 3600 MiB/h, 1000 MiB below its limit.
  r.info.cgroup = GrowthPair{100 * kMiB, 111 * kMiB};
  r.info.cgroup_limit = 1111 * kMiB;
  r.info.rss = GrowthPair{50 * kMiB, 72 * kMiB};
  const nlohmann::json j = nlohmann::json::parse(GrowthJson(r, {.top = 1, .fail_above = {}}));
  EXPECT_EQ(j["totals"]["cgroup"]["change"], 11 * kMiB);
  EXPECT_EQ(j["totals"]["cgroup"]["limit"], 1111 * kMiB);
  EXPECT_NEAR(j["totals"]["cgroup"]["hours_to_limit"].get<double>(), 1000.0 / 3600, 1e-9);
  EXPECT_EQ(j["totals"]["rss"]["change"], 22 * kMiB);
  EXPECT_TRUE(j["totals"]["heap_live"].is_null());
  const std::string text = GrowthText(r, {.top = 1, .fail_above = std::nullopt});
  EXPECT_NE(text.find("RSS: 50.0MiB -> 72.0MiB (+22.0MiB); the profile explains 0%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("limit 1.1GiB, reached in 16m40s at +3.5GiB/h (at 1970-01-01T00:18:31Z)"),
            std::string::npos)
      << text;
  EXPECT_EQ(j["totals"]["cgroup"]["limit_at_nanos"], 1111 * int64_t{1'000'000'000});
  // The profile's change is 0 of the RSS's 22 MiB.
  EXPECT_EQ(j["totals"]["rss"]["profile_explains"], 0.0);
  // Not growing: no time to the limit.
  r.info.cgroup = GrowthPair{111 * kMiB, 100 * kMiB};
  EXPECT_TRUE(nlohmann::json::parse(
                  GrowthJson(r, {.top = 1, .fail_above = {}}))["totals"]["cgroup"]["hours_to_limit"]
                  .is_null());
}

TEST(GrowthReportTest, TheLimitIsForecastAtTheSlopeOfTheCgroupReadings) {
  GrowthReport r = Report();
  // Readings at 100..111 s: flat for six seconds, then 2 MiB/s; the window's
  // first and last pair alone would give the average rate of 1 MiB/s.
  r.info.cgroup = GrowthPair{100 * kMiB, 112 * kMiB};
  for (int64_t i = 0; i < 12; ++i) {
    const int64_t usage = 100 * kMiB + std::max<int64_t>(0, i - 5) * 2 * kMiB;
    r.info.cgroup_usage.push_back({(100 + i) * int64_t{1'000'000'000}, usage});
  }
  r.info.cgroup_limit = 200 * kMiB;
  const std::optional<LimitForecast> f = CgroupLimitForecast(r);
  ASSERT_TRUE(f.has_value());
  // Least squares over all twelve: below 2 MiB/s, above the average.
  EXPECT_GT(f->slope_bytes_per_hour, 1.0 * kMiB * 3600);
  EXPECT_LT(f->slope_bytes_per_hour, 2.0 * kMiB * 3600);
  EXPECT_NEAR(f->hours, 88.0 * kMiB / f->slope_bytes_per_hour, 1e-12);
  EXPECT_EQ(f->at_nanos, 111'000'000'000 + static_cast<int64_t>(f->hours * 3.6e12));
  // A limit already passed is reached now.
  r.info.cgroup_limit = 50 * kMiB;
  EXPECT_EQ(CgroupLimitForecast(r)->hours, 0.0);
  r.info.cgroup_limit.reset();
  EXPECT_FALSE(CgroupLimitForecast(r).has_value());
}

TEST(GrowthReportTest, TheHeaderShowsTheLabelsAndTheSharesTheProfileExplains) {
  GrowthReport r = Report();
  r.info.labels = {{"pod", "shop/cart-7d9f"}, {"container", "cart"}};
  // The profiled total is flat (leak and shrink cancel): add a growth to it
  // through heap_live's comparison of 0 B with +4 MiB.
  r.info.heap_live = GrowthPair{10 * kMiB, 14 * kMiB};
  const std::string text = GrowthText(r, {.top = 1, .fail_above = std::nullopt});
  EXPECT_NE(text.find(", pod shop/cart-7d9f, container cart\nwindow: "), std::string::npos) << text;
  EXPECT_NE(text.find("/gc/heap/live:bytes: 10.0MiB -> 14.0MiB (+4.0MiB); the profile explains "
                      "0%"),
            std::string::npos)
      << text;
  const nlohmann::json j = nlohmann::json::parse(GrowthJson(r, {.top = 1, .fail_above = {}}));
  EXPECT_EQ(j["labels"]["pod"], "shop/cart-7d9f");
  EXPECT_EQ(j["labels"]["container"], "cart");
  EXPECT_EQ(j["totals"]["heap_live"]["profile_explains"], 0.0);
  EXPECT_TRUE(j["totals"]["rss"].is_null());
}

TEST(GrowthReportTest, TextShowsTheClassSlopeAndStack) {
  const std::string text = GrowthText(Report(), {.top = 1, .fail_above = std::nullopt});
  EXPECT_NE(text.find("#1 STEADY GROWTH  +3.5GiB/h"), std::string::npos) << text;
  EXPECT_NE(text.find("at main.leak :0"), std::string::npos) << text;
  EXPECT_NE(text.find("(2 more sites; --top 0 shows all)"), std::string::npos) << text;
}

TEST(GrowthReportTest, TheGrowthProfileHoldsTheChangeAndTheSlopePerSite) {
  const pb::Profile p = GrowthProfile(Report());
  const ProfileView view(p);
  ASSERT_EQ(p.sample_type_size(), 4);
  EXPECT_EQ(view.Str(p.sample_type(1).type()), "inuse_space");
  EXPECT_EQ(view.Str(p.sample_type(1).unit()), "bytes");
  EXPECT_EQ(view.Str(p.sample_type(3).type()), "inuse_space_per_hour");
  EXPECT_EQ(view.Str(p.default_sample_type()), "inuse_space_per_hour");
  // The executable's mapping, named as the snapshots name it.
  ASSERT_EQ(p.mapping_size(), 1);
  EXPECT_EQ(view.Str(p.mapping(0).filename()), "/bin/app");
  EXPECT_EQ(p.mapping(0).memory_start(), 0x400000u);
  for (const pb::Location& l : p.location()) EXPECT_EQ(l.mapping_id(), p.mapping(0).id());
  // The cache did not change: no sample.
  ASSERT_EQ(p.sample_size(), 2);
  for (const pb::Sample& s : p.sample()) {
    const std::string fn = view.Frames(s)[0].function;
    const int64_t sign = fn == "main.leak" ? 1 : -1;
    EXPECT_EQ(s.value(0), sign * 11 * 1024) << fn;
    EXPECT_EQ(s.value(1), sign * 11 * kMiB) << fn;
    EXPECT_EQ(s.value(3), sign * 3600 * kMiB) << fn;
    ASSERT_EQ(s.label_size(), 1);
    EXPECT_EQ(view.Str(s.label(0).str()), fn == "main.leak" ? "STEADY GROWTH" : "SHRINKING");
  }
}

// A function name is the target's pclntab bytes, which need not be UTF-8
// (issue 38: one such name ended watch --report and the agent): the text and
// the JSON replace them with U+FFFD, the growth profile keeps them as the
// runtime's own writer does, and reads back.
TEST(GrowthReportTest, NamesThatAreNotUtf8AreReplacedInTextAndJsonKeptInTheProfile) {
  const std::string raw = "main.gr\xFFwHeap", shown = "main.gr\xEF\xBF\xBDwHeap";
  GrowthCollector c;
  for (int64_t i = 0; i < 3; ++i) {
    c.Add(GrowthSnapshot(100 + i, {{raw, (i + 1) * kMiB}}), "s" + std::to_string(i));
  }
  GrowthInfo info;
  info.source = "app\xFE pid 7";
  info.labels = {{"pod", "web-\xFF"}};
  const GrowthReport r = AnalyzeGrowth(std::move(c).Finish(), std::move(info));
  const std::string text = GrowthText(r, {.top = 10, .fail_above = std::nullopt});
  EXPECT_TRUE(IsValidUtf8(text)) << text;
  EXPECT_NE(text.find(shown), std::string::npos) << text;
  std::string json;
  ASSERT_NO_THROW(json = GrowthJson(r, {.top = 0, .fail_above = std::nullopt}));
  const nlohmann::json j = nlohmann::json::parse(json);
  EXPECT_EQ(j["source"], "app\xEF\xBF\xBD pid 7");
  EXPECT_EQ(j["labels"]["pod"], "web-\xEF\xBF\xBD");
  EXPECT_NE(json.find(shown), std::string::npos) << json;
  pb::Profile back;
  ASSERT_TRUE(back.ParseFromString(GrowthProfile(r).SerializeAsString()));
  EXPECT_NE(std::find(back.string_table().begin(), back.string_table().end(), raw),
            back.string_table().end());
}

TEST(GrowthReportTest, FormatBytesUsesBinaryUnits) {
  EXPECT_EQ(FormatBytes(0), "0B");
  EXPECT_EQ(FormatBytes(1536), "1.5KiB");
  EXPECT_EQ(FormatBytes(-3.0 * kMiB), "-3.0MiB");
}

}  // namespace
}  // namespace goheap2pprof
