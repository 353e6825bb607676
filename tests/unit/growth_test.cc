// The growth analysis (pprof/growth/growth.h): one synthetic series per class, the
// sampling-noise rule, and the collection of sites across profiles whose ids
// differ (pprof/growth/sites.h).
#include "pprof/growth/growth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "pprof/growth/sites.h"

namespace goheap2pprof {
namespace {

constexpr int64_t kGrowthMiB = 1 << 20;
constexpr int64_t kDefaultRate = 512 * 1024;

// Snapshots one second apart, in hours.
std::vector<double> Seconds(size_t n) {
  std::vector<double> h;
  for (size_t i = 0; i < n; ++i) h.push_back(static_cast<double>(i) / 3600.0);
  return h;
}

// A series of objects of `size` bytes, exact (rate 1) or with the sampling
// variance of `rate`.
SiteSeries Of(const std::vector<int64_t>& bytes, int64_t size = 1024, int64_t rate = 1) {
  SiteSeries s;
  for (int64_t b : bytes) {
    s.bytes.push_back(b);
    s.objects.push_back(b / size);
    s.bytes_var.push_back(SampledBytesVariance(b / size, b, rate));
  }
  return s;
}

SiteGrowth Analyze(const std::vector<int64_t>& bytes, int64_t size = 1024, int64_t rate = 1) {
  return AnalyzeSeries(Seconds(bytes.size()), Of(bytes, size, rate));
}

TEST(GrowthTest, LeakAtRateOneIsSteadyGrowthWithItsExactSlope) {
  std::vector<int64_t> bytes;
  for (int64_t i = 0; i < 12; ++i) bytes.push_back(4 * kGrowthMiB + i * 2 * kGrowthMiB);
  const SiteGrowth g = Analyze(bytes);
  EXPECT_EQ(g.growth_class, GrowthClass::kSteadyGrowth);
  EXPECT_NEAR(g.slope_bytes_per_hour, 2.0 * kGrowthMiB * 3600, 1e-3);
  EXPECT_NEAR(g.slope_objects_per_hour, 2048.0 * 3600, 1e-6);
  EXPECT_NEAR(g.r2, 1.0, 1e-12);
  EXPECT_EQ(g.steps, 11);
  EXPECT_EQ(g.steps_rose, 11);
  EXPECT_EQ(g.change_bytes, 22 * kGrowthMiB);
  EXPECT_EQ(g.change_objects, 22 * 1024);
  EXPECT_DOUBLE_EQ(g.mean_object_size, 1024);
  EXPECT_EQ(g.change_noise, 0);  // nothing is sampled at rate 1
  EXPECT_NEAR(g.slope_lower, g.slope_bytes_per_hour, 1e-3);
  EXPECT_FALSE(g.new_site);
}

TEST(GrowthTest, ASiteThatStartsFromNothingAndGrowsIsGrowthAndNew) {
  std::vector<int64_t> bytes;
  for (int64_t i = 0; i < 12; ++i) bytes.push_back(i * kGrowthMiB);
  const SiteGrowth g = Analyze(bytes);
  EXPECT_EQ(g.growth_class, GrowthClass::kSteadyGrowth);
  EXPECT_TRUE(g.new_site);
}

TEST(GrowthTest, ACacheThatFillsThenStaysFullIsBounded) {
  // Fills in the first quarter: a two-point diff of the window says +7 MiB.
  std::vector<int64_t> bytes = {kGrowthMiB,     2 * kGrowthMiB, 5 * kGrowthMiB, 8 * kGrowthMiB,
                                8 * kGrowthMiB, 8 * kGrowthMiB, 8 * kGrowthMiB, 8 * kGrowthMiB,
                                8 * kGrowthMiB, 8 * kGrowthMiB, 8 * kGrowthMiB, 8 * kGrowthMiB};
  const SiteGrowth g = Analyze(bytes);
  EXPECT_EQ(g.growth_class, GrowthClass::kBounded);
  EXPECT_GT(g.slope_bytes_per_hour, 0);
  EXPECT_GT(g.r2, 0.3);
  // Empty at the first snapshot, the same cache is NEW: still not growth.
  bytes[0] = 0;
  EXPECT_EQ(Analyze(bytes).growth_class, GrowthClass::kNew);
}

TEST(GrowthTest, ACacheFullFromTheStartWithEvictionsIsBounded) {
  std::vector<int64_t> bytes;
  for (int i = 0; i < 12; ++i) bytes.push_back(8 * kGrowthMiB + (i % 3) * 64 * 1024);
  EXPECT_EQ(Analyze(bytes).growth_class, GrowthClass::kBounded);
}

TEST(GrowthTest, GrowThenDropRepeatedIsSawtooth) {
  std::vector<int64_t> bytes;
  for (int i = 0; i < 12; ++i) bytes.push_back((i % 4) * 3 * kGrowthMiB);
  const SiteGrowth g = Analyze(bytes);
  EXPECT_EQ(g.growth_class, GrowthClass::kSawtooth);  // though zero at first
  EXPECT_TRUE(g.new_site);
  EXPECT_EQ(g.significant_falls, 2);
}

TEST(GrowthTest, ASawtoothWhosePeaksRiseIsStillNotSteadyGrowth) {
  // Ends high (a two-point diff says +9 MiB) but drops twice to near zero.
  std::vector<int64_t> bytes;
  for (int i = 0; i < 12; ++i) bytes.push_back((i % 4) * 3 * kGrowthMiB + i * 64 * 1024);
  EXPECT_EQ(Analyze(bytes).growth_class, GrowthClass::kSawtooth);
}

TEST(GrowthTest, ASampledSawtoothWhoseSingleRisesAreNoiseIsStillSawtooth) {
  // 16 KiB objects at the default rate: each rise of 1.5 MiB is within the
  // noise, three of them are not, and the drop to zero is.
  std::vector<int64_t> bytes;
  for (int i = 0; i < 12; ++i) bytes.push_back(((i + 1) % 4) * 3 * kGrowthMiB / 2);
  const SiteGrowth g = Analyze(bytes, 16384, kDefaultRate);
  EXPECT_EQ(g.significant_rises, 0);
  EXPECT_EQ(g.growth_class, GrowthClass::kSawtooth);
}

TEST(GrowthTest, SteadyDeclineIsShrinking) {
  std::vector<int64_t> bytes;
  for (int64_t i = 0; i < 12; ++i) bytes.push_back((12 - i) * kGrowthMiB);
  const SiteGrowth g = Analyze(bytes);
  EXPECT_EQ(g.growth_class, GrowthClass::kShrinking);
  EXPECT_LT(g.slope_bytes_per_hour, 0);
}

TEST(GrowthTest, ASiteThatAppearsOnceLateIsNew) {
  const std::vector<int64_t> bytes = {0,
                                      0,
                                      0,
                                      0,
                                      0,
                                      0,
                                      5 * kGrowthMiB,
                                      5 * kGrowthMiB,
                                      5 * kGrowthMiB,
                                      5 * kGrowthMiB,
                                      5 * kGrowthMiB,
                                      5 * kGrowthMiB};
  const SiteGrowth g = Analyze(bytes);
  EXPECT_EQ(g.growth_class, GrowthClass::kNew);
  EXPECT_TRUE(g.new_site);
  // The fit alone is not enough: one step made all of the change.
  EXPECT_GT(g.slope_lower, 0);
  EXPECT_GE(g.r2, 0.7);
  // Present from the start, the same step is BOUNDED.
  std::vector<int64_t> from_one = bytes;
  for (int64_t& b : from_one) b += kGrowthMiB;
  EXPECT_EQ(Analyze(from_one).growth_class, GrowthClass::kBounded);
}

TEST(GrowthTest, ChurnJitterAtRateOneIsNotGrowth) {
  // A churning site's in-use at each GC: 10 MiB, a few percent either way,
  // drifting up by chance.
  const std::vector<int> permille = {0, 12, -8, 20, 5, 28, 15, 33, 22, 30, 41, 38};
  std::vector<int64_t> bytes;
  for (int p : permille) bytes.push_back(10 * kGrowthMiB + 10 * kGrowthMiB * p / 1000);
  const SiteGrowth g = Analyze(bytes);
  EXPECT_GT(g.slope_lower, 0);                       // a fit alone would call it growth...
  EXPECT_EQ(g.growth_class, GrowthClass::kBounded);  // ...but under 5% is not a trend
}

TEST(GrowthTest, NoiseIsNotGrowthAtTheDefaultRate) {
  // 16-byte objects at the default rate: each recorded object stands for
  // ~512 KiB, so a rise of 3 recorded objects is within the noise of a
  // 60-object (30 MiB) site.
  const int64_t per_sample = 524296;
  std::vector<int64_t> bytes;
  for (int64_t i = 0; i < 12; ++i) bytes.push_back((60 + i / 4) * per_sample);
  const SiteGrowth sampled = Analyze(bytes, 16, kDefaultRate);
  EXPECT_NE(sampled.growth_class, GrowthClass::kSteadyGrowth);
  EXPECT_LE(sampled.slope_lower, 0);
  EXPECT_GT(sampled.change_noise, static_cast<double>(sampled.change_bytes));
  // The same numbers exactly counted (rate 1) are a real, if slow, rise.
  const SiteGrowth exact = Analyze(bytes, 16, 1);
  EXPECT_GT(exact.slope_lower, 0);
  EXPECT_EQ(exact.change_noise, 0);
}

TEST(GrowthTest, SampledLeakAtTheDefaultRateIsGrowthWithinItsNoiseBar) {
  // 2 MiB/s of 1 KiB objects, sampled: the bar covers the true slope.
  std::vector<int64_t> bytes;
  for (int64_t i = 0; i < 12; ++i) bytes.push_back(8 * kGrowthMiB + i * 2 * kGrowthMiB);
  const SiteGrowth g = Analyze(bytes, 1024, kDefaultRate);
  EXPECT_EQ(g.growth_class, GrowthClass::kSteadyGrowth);
  EXPECT_GT(g.slope_sigma, 0);
  EXPECT_GT(g.change_noise, 0);
  EXPECT_GT(g.slope_lower, 0);
  EXPECT_LT(g.slope_lower, g.slope_bytes_per_hour);
}

// What the runtime records of a leak of `per_step` objects of 4 KiB a step,
// 12 steps 0.5 s apart, at the default rate: each object with probability
// p = 1 - exp(-size/rate), each recorded one scaled by 1/p, as the profile
// does. Seeded, so the test sees the same draws every run.
class SampledLeak {
 public:
  explicit SampledLeak(uint64_t seed) : rng_(seed) {}

  SiteGrowth Next(int per_step) {
    const double p = -std::expm1(-kSize / static_cast<double>(kDefaultRate));
    std::vector<double> at_hours;
    SiteSeries s;
    int64_t recorded = 0;
    for (int step = 1; step <= 12; ++step) {
      for (int i = 0; i < per_step; ++i) recorded += Uniform() < p ? 1 : 0;
      at_hours.push_back(step * 0.5 / 3600.0);
      const auto objects = std::llround(static_cast<double>(recorded) / p);
      const auto bytes = std::llround(static_cast<double>(recorded) * kSize / p);
      s.objects.push_back(objects);
      s.bytes.push_back(bytes);
      s.bytes_var.push_back(SampledBytesVariance(objects, bytes, kDefaultRate));
    }
    return AnalyzeSeries(at_hours, s);
  }

  static double TrueSlope(int per_step) { return per_step * kSize * 7200.0; }

 private:
  static constexpr double kSize = 4096;
  double Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  std::mt19937_64 rng_;
};

TEST(GrowthTest, TheNoiseBarOfASampledLeakIsNoNarrowerThanItsSigmasSay) {
  // 2,000 leaks of 1 MiB a step (about two recorded objects a step). With a
  // normal error, 4.55% of true slopes fall outside 2 sigmas, 2.28% below
  // the lower bound, and 31.7% outside one sigma: the bar may be wider than
  // that (both ends' variance overstates a leak's) but not narrower, and not
  // so wide that one sigma covers nearly everything.
  SampledLeak leak(26);
  const int runs = 2000, per_step = 256;
  const double truth = SampledLeak::TrueSlope(per_step);
  int outside1 = 0, outside2 = 0, lower_above = 0, steady = 0;
  for (int i = 0; i < runs; ++i) {
    const SiteGrowth g = leak.Next(per_step);
    const double error = std::fabs(g.slope_bytes_per_hour - truth);
    outside1 += error > g.slope_sigma ? 1 : 0;
    outside2 += error > 2 * g.slope_sigma ? 1 : 0;
    lower_above += g.slope_lower > truth ? 1 : 0;
    steady += g.growth_class == GrowthClass::kSteadyGrowth ? 1 : 0;
  }
  EXPECT_LE(outside2, runs * 455 / 10000);
  EXPECT_LE(lower_above, runs * 228 / 10000);
  EXPECT_GE(outside1, runs * 15 / 100);
  // So few records a step still make the leak growth in most runs.
  EXPECT_GE(steady, runs * 95 / 100);
}

TEST(GrowthTest, ASampledLeakOfFourMiBAStepIsAlwaysSteadyGrowth) {
  // What tests/e2e/growth_test.sh runs at the default rate: its class must
  // not depend on luck, and its slope is checked within 4 sigmas (a normal
  // error leaves 0.006% outside).
  SampledLeak leak(27);
  int outside4 = 0;
  for (int i = 0; i < 2000; ++i) {
    const SiteGrowth g = leak.Next(1024);
    ASSERT_EQ(g.growth_class, GrowthClass::kSteadyGrowth) << "run " << i;
    const double error = std::fabs(g.slope_bytes_per_hour - SampledLeak::TrueSlope(1024));
    outside4 += error > 4 * g.slope_sigma ? 1 : 0;
  }
  EXPECT_LE(outside4, 1);
}

TEST(GrowthTest, SampledBytesVarianceFollowsTheBinomialOfTheRecordedObjects) {
  EXPECT_EQ(SampledBytesVariance(100, 1600, 1), 0);
  EXPECT_EQ(SampledBytesVariance(0, 0, kDefaultRate), 0);
  // p = 1 - exp(-16/r); variance = objects (1 - p) size^2 / p.
  const double p = 1 - std::exp(-16.0 / kDefaultRate);
  const double expected = 100 * (1 - p) * 256 / p;
  EXPECT_NEAR(SampledBytesVariance(100, 1600, kDefaultRate), expected, 1e-9 * expected);
  // For small objects that is about bytes * rate: sigma ~ sqrt(B r).
  EXPECT_NEAR(SampledBytesVariance(100, 1600, kDefaultRate), 1600.0 * kDefaultRate,
              0.001 * 1600.0 * kDefaultRate);
}

TEST(GrowthTest, RanksByTheLowerBoundNotTheSlope) {
  SiteGrowth steep_but_noisy, modest_but_sure;
  steep_but_noisy.slope_bytes_per_hour = 100;
  steep_but_noisy.slope_lower = 10;
  modest_but_sure.slope_bytes_per_hour = 50;
  modest_but_sure.slope_lower = 45;
  EXPECT_TRUE(RanksBefore(modest_but_sure, steep_but_noisy));
  EXPECT_FALSE(RanksBefore(steep_but_noisy, modest_but_sure));
}

TEST(GrowthTest, RejectsSeriesOfTheWrongLength) {
  EXPECT_THROW(AnalyzeSeries(Seconds(3), Of({1, 2})), Error);
  EXPECT_THROW(AnalyzeSeries(Seconds(1), Of({1})), Error);
}

// A heap profile with stacks of named functions; `base_id` shifts every id
// so that two profiles share no ids.
class HeapProfile {
 public:
  HeapProfile(int64_t time_nanos, uint64_t base_id) : base_(base_id) {
    Str("");
    for (const char* t : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}) {
      pb::ValueType* vt = p_.add_sample_type();
      vt->set_type(Str(t));
      vt->set_unit(Str(std::string(t).find("objects") != std::string::npos ? "count" : "bytes"));
    }
    p_.set_period(1);
    p_.set_time_nanos(time_nanos);
  }
  // A sample of the stack (leaf first) with in-use objects and bytes.
  HeapProfile& Sample(const std::vector<std::string>& stack, int64_t objects, int64_t bytes) {
    pb::Sample* s = p_.add_sample();
    for (int64_t v : {objects, bytes, objects, bytes}) s->add_value(v);
    for (const std::string& fn : stack) s->add_location_id(Location(fn));
    return *this;
  }
  const pb::Profile& get() const { return p_; }

 private:
  int64_t Str(const std::string& s) {
    p_.add_string_table(s);
    return p_.string_table_size() - 1;
  }
  uint64_t Location(const std::string& fn) {
    for (const pb::Function& f : p_.function()) {
      if (p_.string_table(static_cast<int>(f.name())) == fn) return f.id();
    }
    const uint64_t id = base_ + static_cast<uint64_t>(p_.function_size()) + 1;
    pb::Function* f = p_.add_function();
    f->set_id(id);
    f->set_name(Str(fn));
    f->set_filename(Str("main.go"));
    pb::Location* l = p_.add_location();
    l->set_id(id);
    l->set_address(0x1000 * id);
    pb::Line* line = l->add_line();
    line->set_function_id(id);
    line->set_line(10);
    return id;
  }
  uint64_t base_;
  pb::Profile p_;
};

TEST(GrowthCollectorTest, MatchesSitesAcrossProfilesAndOrdersByTime) {
  GrowthCollector c;
  // Added out of order, with different ids and sample order.
  c.Add(HeapProfile(3'000'000'000, 100)
            .Sample({"main.cache", "main.main"}, 3, 300)
            .Sample({"main.leak", "main.main"}, 30, 3000)
            .get(),
        "c");
  c.Add(HeapProfile(1'000'000'000, 0)
            .Sample({"main.leak", "main.main"}, 10, 1000)
            .Sample({"main.leak", "main.main"}, 1, 50)  // another object size
            .get(),
        "a");
  c.Add(HeapProfile(2'000'000'000, 50).Sample({"main.leak", "main.main"}, 20, 2000).get(), "b");
  const GrowthData d = std::move(c).Finish();
  ASSERT_EQ(d.snapshots.size(), 3u);
  EXPECT_EQ(d.snapshots[0].name, "a");
  EXPECT_EQ(d.snapshots[2].name, "c");
  EXPECT_EQ(d.snapshots[0].inuse_bytes, 1050);
  ASSERT_EQ(d.sites.size(), 2u);
  const std::vector<double> at_hours = d.Hours();
  EXPECT_NEAR(at_hours[2], 2.0 / 3600, 1e-12);
  for (const GrowthSite& site : d.sites) {
    const SiteSeries s = d.Series(site);
    const std::string leaf = d.locations[site.locations[0]].lines[0].function;
    if (leaf == "main.leak") {
      EXPECT_EQ(s.bytes, (std::vector<int64_t>{1050, 2000, 3000}));
      EXPECT_EQ(s.objects, (std::vector<int64_t>{11, 20, 30}));
    } else {
      EXPECT_EQ(leaf, "main.cache");
      EXPECT_EQ(s.bytes, (std::vector<int64_t>{0, 0, 300}));
    }
  }
}

TEST(GrowthCollectorTest, RefusesTooFewSnapshotsAndRepeatedTimes) {
  GrowthCollector one;
  one.Add(HeapProfile(1, 0).get(), "a");
  EXPECT_THROW(std::move(one).Finish(), Error);
  GrowthCollector twice;
  twice.Add(HeapProfile(1, 0).get(), "a");
  twice.Add(HeapProfile(1, 0).get(), "a-again");
  EXPECT_THROW(std::move(twice).Finish(), Error);
}

TEST(GrowthCollectorTest, RefusesAProfileThatIsNotAHeapProfile) {
  pb::Profile cpu;
  cpu.add_string_table("");
  cpu.add_string_table("samples");
  cpu.add_sample_type()->set_type(1);
  GrowthCollector c;
  EXPECT_THROW(c.Add(cpu, "cpu.pb.gz"), Error);
  HeapProfile missing(1, 0);
  pb::Profile p = missing.get();
  pb::Sample* s = p.add_sample();
  for (int64_t v : {1, 2, 1, 2}) s->add_value(v);
  s->add_location_id(999);
  EXPECT_THROW(c.Add(p, "broken"), Error);
}

}  // namespace
}  // namespace goheap2pprof
