// The growth of one allocation site over N heap snapshots: its in-use
// series, a least-squares trend, a noise bar from the sampling, and a class
// that says whether the site is growing or only looks so between two points
// (a cache that fills and stays full, a batch that comes and goes).
//
//   std::vector<double> hours = {0, 0.1, 0.2};
//   SiteSeries s{.objects = {1, 2, 3}, .bytes = {64, 128, 192}, .bytes_var = {0, 0, 0}};
//   SiteGrowth g = AnalyzeSeries(hours, s);  // g.growth_class == kSteadyGrowth
//
// The noise model. At MemProfileRate r the runtime records an object of
// size s with probability p = 1 - exp(-s/r) and scales each recorded object
// to s/p bytes (scaleHeapSample). Which of N live objects are recorded is a
// binomial draw, N p (1 - p) in variance, which is the Poisson variance of
// the recorded count n when p is small and exactly zero at rate 1 (every
// object recorded). In bytes that is (inuse_objects)(1 - p) s^2 / p for one
// profile sample (SampledBytesVariance).
//
// The classes, decided in this order (docs/growth.md explains them):
//   STEADY GROWTH  the change exceeds its noise threshold, the slope's lower
//                  bound (slope - 2 sigma) is above zero, R^2 >= 0.7, at most
//                  a quarter of the steps fell significantly, no single step
//                  made more than half the change, and the second half of
//                  the window still grew by at least a quarter of the whole
//                  change and by more than one sigma (not plateaued);
//   SHRINKING      the change is below minus its threshold and the slope's
//                  upper bound is below zero;
//   SAWTOOTH       a significant rise (from the lowest point since the last
//                  fall) later followed by a significant fall;
//   NEW            absent (zero) in the first snapshot, present in the last;
//   BOUNDED        everything else: flat, or rose and stayed (a cache).
// A step or change from snapshot i to j is significant when it exceeds
// max(2 sqrt(var_i + var_j), 5% of the site's peak): twice its sampling
// noise, and never less than a twentieth of the site, so that at rate 1
// (no sampling noise) the jitter of a churning site is not called a trend.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace goheap2pprof {

// One site's values at each snapshot in time order (zero where absent).
struct SiteSeries {
  std::vector<int64_t> objects;
  std::vector<int64_t> bytes;
  std::vector<double> bytes_var;  // sampling variance of bytes
};

enum class GrowthClass { kSteadyGrowth, kShrinking, kSawtooth, kNew, kBounded };

// "STEADY GROWTH", "NEW", "SHRINKING", "SAWTOOTH", "BOUNDED".
std::string_view GrowthClassName(GrowthClass c);

struct SiteGrowth {
  int64_t first_bytes = 0, last_bytes = 0, change_bytes = 0;
  int64_t first_objects = 0, last_objects = 0, change_objects = 0;
  // Bytes per object of the change (of the last snapshot when the object
  // count did not change; 0 when there are none).
  double mean_object_size = 0;
  double slope_bytes_per_hour = 0;
  double slope_objects_per_hour = 0;
  double r2 = 0;  // of the bytes fit; 0 for a flat series
  // One standard deviation of the slope: the fit's standard error and the
  // sampling noise combined.
  double slope_sigma = 0;
  // slope - 2 sigma: the growth the report stands behind; the ranking key.
  double slope_lower = 0;
  // The noise bar of change_bytes: 2 sqrt(var_first + var_last).
  double change_noise = 0;
  int steps = 0;       // N - 1
  int steps_rose = 0;  // steps whose bytes went up at all
  int significant_rises = 0;
  int significant_falls = 0;
  GrowthClass growth_class = GrowthClass::kBounded;
  bool new_site = false;  // zero in the first snapshot, not in the last
};

// Analyzes one series; hours[i] is snapshot i's time in hours from the
// first (strictly increasing). Needs at least two snapshots; throws
// Error(kInternal) on series of different lengths.
SiteGrowth AnalyzeSeries(std::span<const double> hours, const SiteSeries& series);

// The sampling variance of one profile sample's in-use bytes (see above);
// 0 at rate <= 1 or without objects.
double SampledBytesVariance(int64_t inuse_objects, int64_t inuse_bytes, int64_t rate);

// Whether a report ranks a before b: the larger slope_lower, then the
// larger change.
bool RanksBefore(const SiteGrowth& a, const SiteGrowth& b);

}  // namespace goheap2pprof
