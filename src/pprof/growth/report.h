// The growth report over N heap snapshots of one program: every site
// analyzed (growth.h) and ranked by the growth it can stand behind (the
// slope's lower bound), with a header (identity, window, snapshots, GC
// cycles, MemProfileRate) and totals (profiled in-use growth, and for a
// live process RSS and cgroup growth), in three renderings: text for a
// terminal, JSON for CI, and a pprof profile of the growth. docs/growth.md
// explains how to read them.
//
//   GrowthReport r = AnalyzeGrowth(std::move(collector).Finish(), info);
//   std::cout << GrowthText(r, {.top = 10});
//   WriteProfile("growth.pb.gz", GrowthProfile(r));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pprof/growth/growth.h"
#include "pprof/growth/sites.h"
#include "proto/profile.pb.h"

namespace goheap2pprof {

// A quantity at the first and the last snapshot (RSS, cgroup usage).
struct GrowthPair {
  int64_t first = 0;
  int64_t last = 0;
};

// A reading of a quantity outside the profiles at one time.
struct GrowthReading {
  int64_t time_nanos = 0;
  int64_t bytes = 0;
};

// What the caller knows beyond the profiles: the process and the memory
// outside the profile.
struct GrowthInfo {
  std::string source;  // "pid 1234", "12 profiles in dir/"
  std::optional<int64_t> pid;
  std::string process_start;  // UTC, ISO 8601; empty when unknown
  std::string go_version;     // empty when unknown
  std::string build_id;       // empty: the first snapshot's main mapping's, if any
  // Live captures left out because no GC cycle had ended since the last one.
  int skipped_same_cycle = 0;
  std::optional<GrowthPair> heap_live;  // the runtime's /gc/heap/live:bytes
  std::optional<GrowthPair> rss;
  std::optional<GrowthPair> cgroup;  // the cgroup's memory usage
  std::optional<int64_t> cgroup_limit;
  // The cgroup's usage at each snapshot, when known: the time to its limit
  // is taken at their least-squares slope from the last of them (at the
  // slope of `cgroup` over the window without them).
  std::vector<GrowthReading> cgroup_usage;
  // Where the agent knows more about the process (its pod and container,
  // say), as name and value: printed in the header in this order.
  std::vector<std::pair<std::string, std::string>> labels;
};

struct GrowthReport {
  GrowthData data;
  GrowthInfo info;
  std::vector<SiteGrowth> sites;  // parallel to data.sites
  std::vector<size_t> ranking;    // indexes into sites, best first
  SiteGrowth total;               // of the sum of all sites (the profiled in-use)
};

// The cgroup's limit ahead at the present slope: when (time_nanos) and in
// how many hours from the reading it is taken from.
struct LimitForecast {
  double hours = 0;
  int64_t at_nanos = 0;
  double slope_bytes_per_hour = 0;
};

// nullopt without a limit, or when the cgroup is not growing.
std::optional<LimitForecast> CgroupLimitForecast(const GrowthReport& report);

// Analyzes every site and ranks them.
GrowthReport AnalyzeGrowth(GrowthData data, GrowthInfo info);

// The sites of class STEADY GROWTH whose slope's lower bound exceeds
// bytes_per_hour, in rank order: --fail-above's test.
std::vector<size_t> SitesGrowingFaster(const GrowthReport& report, double bytes_per_hour);

struct GrowthRenderOptions {
  int top = 10;                      // sites shown; 0 shows all
  std::optional<double> fail_above;  // bytes per hour, shown in the JSON
};

std::string GrowthText(const GrowthReport& report, const GrowthRenderOptions& options);
std::string GrowthJson(const GrowthReport& report, const GrowthRenderOptions& options);

// The growth as a heap-like pprof profile, one sample per site whose values
// are not all zero, with sample types
//   inuse_objects, inuse_space (count, bytes): last minus first, as
//     `go tool pprof -base first last` would give them;
//   inuse_objects_per_hour, inuse_space_per_hour (count, bytes): the
//     least-squares slopes (the default sample type);
// and the site's class as the string label "growth_class".
pb::Profile GrowthProfile(const GrowthReport& report);

// "1.5MiB", "-640B": bytes for people.
std::string FormatBytes(double bytes);
// "2026-12-05T07:55:00Z": a time in ns since the epoch, UTC.
std::string FormatUtcTime(int64_t nanos);
// "42.0s", "3m05s", "2h10m": a duration for people.
std::string FormatDuration(double seconds);

}  // namespace goheap2pprof
