#include "pprof/growth/growth.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/error.h"

namespace goheap2pprof {

namespace {

// A change smaller than this share of the site's peak is never significant.
constexpr double kFloorShare = 0.05;
// Standard deviations between the slope and the bound the report stands
// behind (about 97.7% one-sided for a normal error).
constexpr double kSigmas = 2.0;
constexpr double kMinR2 = 0.7;

struct Fit {
  double slope = 0;
  double r2 = 0;
  double se = 0;  // standard error of the slope from the residuals
};

// Ordinary least squares of y on t.
Fit LeastSquares(std::span<const double> t, std::span<const double> y) {
  const size_t n = t.size();
  double tbar = 0, ybar = 0;
  for (size_t i = 0; i < n; ++i) {
    tbar += t[i];
    ybar += y[i];
  }
  tbar /= static_cast<double>(n);
  ybar /= static_cast<double>(n);
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (t[i] - tbar) * (t[i] - tbar);
    sxy += (t[i] - tbar) * (y[i] - ybar);
    syy += (y[i] - ybar) * (y[i] - ybar);
  }
  Fit f;
  if (sxx <= 0) return f;
  f.slope = sxy / sxx;
  // The residual sum of squares: syy minus what the line explains.
  const double ssr = std::max(0.0, syy - f.slope * sxy);
  f.r2 = syy > 0 ? 1.0 - ssr / syy : 0.0;
  if (n > 2) f.se = std::sqrt(ssr / static_cast<double>(n - 2) / sxx);
  return f;
}

struct Thresholds {
  const SiteSeries& s;
  double floor;
  // The smallest change from snapshot i to j that is not noise.
  double Between(size_t i, size_t j) const {
    return std::max(kSigmas * std::sqrt(s.bytes_var[i] + s.bytes_var[j]), floor);
  }
};

// Counts the rising and falling steps; returns whether a significant fall
// came after a significant rise from the lowest point since the previous
// fall (a rise made of steps each within the noise counts when their sum is
// not).
bool CountSteps(const Thresholds& th, SiteGrowth& g) {
  const std::vector<int64_t>& y = th.s.bytes;
  size_t trough = 0;
  bool risen = false, fell_after_rise = false;
  for (size_t i = 1; i < y.size(); ++i) {
    const double d = static_cast<double>(y[i]) - static_cast<double>(y[i - 1]);
    if (d > 0) ++g.steps_rose;
    if (d > th.Between(i - 1, i)) ++g.significant_rises;
    if (d < -th.Between(i - 1, i)) {
      ++g.significant_falls;
      fell_after_rise = fell_after_rise || risen;
      risen = false;
      trough = i;
      continue;
    }
    if (y[i] < y[trough]) trough = i;
    const double from_trough = static_cast<double>(y[i]) - static_cast<double>(y[trough]);
    if (from_trough > th.Between(trough, i)) risen = true;
  }
  return fell_after_rise;
}

// Whether the second half of the window still grew: by at least a quarter
// of the whole change (a site that filled and stopped, a cache, did not), and
// by more than one standard deviation of its noise. Not asked to be
// significant at two: half the window has half the change and, taken as
// independent ends, about as much noise, so a sampled leak would often fail.
bool StillGrowing(const Thresholds& th, const SiteGrowth& g) {
  const std::vector<int64_t>& y = th.s.bytes;
  const size_t last = y.size() - 1, mid = last / 2;
  const double second = static_cast<double>(y[last]) - static_cast<double>(y[mid]);
  return second > th.Between(mid, last) / kSigmas &&
         second >= 0.25 * static_cast<double>(g.change_bytes);
}

// The largest rise of one step.
double LargestStep(const std::vector<int64_t>& y) {
  double largest = 0;
  for (size_t i = 1; i < y.size(); ++i) {
    largest = std::max(largest, static_cast<double>(y[i]) - static_cast<double>(y[i - 1]));
  }
  return largest;
}

GrowthClass Classify(const Thresholds& th, const SiteGrowth& g, bool saw_rise_then_fall) {
  const size_t last = th.s.bytes.size() - 1;
  const double change = static_cast<double>(g.change_bytes);
  const double threshold = th.Between(0, last);
  const bool steady = change > threshold && g.slope_lower > 0 && g.r2 >= kMinR2 &&
                      g.significant_falls * 4 <= g.steps && StillGrowing(th, g) &&
                      LargestStep(th.s.bytes) <= 0.5 * change;
  if (steady) return GrowthClass::kSteadyGrowth;
  if (change < -threshold && g.slope_bytes_per_hour + kSigmas * g.slope_sigma < 0) {
    return GrowthClass::kShrinking;
  }
  if (saw_rise_then_fall) return GrowthClass::kSawtooth;
  if (g.new_site) return GrowthClass::kNew;
  return GrowthClass::kBounded;
}

// a - b, saturated: the values may come from a corrupt profile.
int64_t Difference(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

std::vector<double> AsDoubles(const std::vector<int64_t>& v) {
  return std::vector<double>(v.begin(), v.end());
}

}  // namespace

std::string_view GrowthClassName(GrowthClass c) {
  switch (c) {
    case GrowthClass::kSteadyGrowth:
      return "STEADY GROWTH";
    case GrowthClass::kNew:
      return "NEW";
    case GrowthClass::kShrinking:
      return "SHRINKING";
    case GrowthClass::kSawtooth:
      return "SAWTOOTH";
    case GrowthClass::kBounded:
      return "BOUNDED";
  }
  return "BOUNDED";
}

double SampledBytesVariance(int64_t inuse_objects, int64_t inuse_bytes, int64_t rate) {
  if (rate <= 1 || inuse_objects <= 0 || inuse_bytes <= 0) return 0;
  const double size = static_cast<double>(inuse_bytes) / static_cast<double>(inuse_objects);
  const double p = -std::expm1(-size / static_cast<double>(rate));
  if (p <= 0) return 0;
  return static_cast<double>(inuse_objects) * (1 - p) * size * size / p;
}

SiteGrowth AnalyzeSeries(std::span<const double> hours, const SiteSeries& s) {
  const size_t n = hours.size();
  if (n < 2 || s.bytes.size() != n || s.objects.size() != n || s.bytes_var.size() != n) {
    throw Error(ErrorKind::kInternal, "growth series of ", s.bytes.size(), " values for ", n,
                " snapshots");
  }
  SiteGrowth g;
  g.first_bytes = s.bytes.front();
  g.last_bytes = s.bytes.back();
  g.change_bytes = Difference(g.last_bytes, g.first_bytes);
  g.first_objects = s.objects.front();
  g.last_objects = s.objects.back();
  g.change_objects = Difference(g.last_objects, g.first_objects);
  if (g.change_objects != 0) {
    g.mean_object_size =
        static_cast<double>(g.change_bytes) / static_cast<double>(g.change_objects);
  } else if (g.last_objects != 0) {
    g.mean_object_size = static_cast<double>(g.last_bytes) / static_cast<double>(g.last_objects);
  }
  g.steps = static_cast<int>(n - 1);
  g.new_site = g.first_bytes == 0 && g.last_bytes > 0;

  const Fit bytes = LeastSquares(hours, AsDoubles(s.bytes));
  g.slope_bytes_per_hour = bytes.slope;
  g.slope_objects_per_hour = LeastSquares(hours, AsDoubles(s.objects)).slope;
  g.r2 = bytes.r2;
  const double var_ends = s.bytes_var.front() + s.bytes_var.back();
  g.change_noise = kSigmas * std::sqrt(var_ends);
  // The sampling error of a slope fitted to a counting process's path:
  // 6/5 of the variance of (last - first) / T (Brownian motion's OLS
  // slope), taken with both ends' variance, which overstates it for a leak.
  const double span = hours.back() - hours.front();
  const double sampling = span > 0 ? std::sqrt(1.2 * var_ends) / span : 0;
  g.slope_sigma = std::hypot(bytes.se, sampling);
  g.slope_lower = g.slope_bytes_per_hour - kSigmas * g.slope_sigma;

  const int64_t peak = *std::max_element(s.bytes.begin(), s.bytes.end());
  const Thresholds th{s, kFloorShare * static_cast<double>(std::max<int64_t>(peak, 0))};
  const bool saw_rise_then_fall = CountSteps(th, g);
  g.growth_class = Classify(th, g, saw_rise_then_fall);
  return g;
}

bool RanksBefore(const SiteGrowth& a, const SiteGrowth& b) {
  if (a.slope_lower != b.slope_lower) return a.slope_lower > b.slope_lower;
  return a.change_bytes > b.change_bytes;
}

}  // namespace goheap2pprof
