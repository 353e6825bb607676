// The allocation sites of N heap profiles of one program and each site's
// in-use series, for the growth report (growth.h, growth_report.h). A site
// is a sample's stack, the allocation site and its caller chain: locations
// are matched across profiles by their source lines (function, file, line;
// the address for an unsymbolized location), so the profiles may come from
// goheap2pprof, from serve or watch, or from the runtime's own
// /debug/pprof/heap, whose ids and string tables all differ. Samples of
// one stack (one per object size) are summed.
//
//   GrowthCollector c;
//   for (...) c.Add(profile, "heap-3.pb.gz");   // any order
//   GrowthData d = std::move(c).Finish();        // snapshots by time_nanos
//
// Memory: the locations once, and per site one 24-byte point per snapshot
// in which the site has in-use objects, so absent sites cost nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pprof/growth.h"
#include "pprof/profile_view.h"
#include "proto/profile.pb.h"

namespace goheap2pprof {

struct GrowthSnapshot {
  std::string name;  // the file, or "capture N"
  int64_t time_nanos = 0;
  int64_t rate = 0;  // the profile's period (MemProfileRate)
  int64_t inuse_bytes = 0;
  int64_t inuse_objects = 0;
  std::string build_id;           // of the first mapping, if the profile has one
  std::optional<uint32_t> cycle;  // the heap-profile cycle, when captured live
};

struct GrowthLine {
  std::string function;
  std::string file;
  int64_t line = 0;
  int64_t start_line = 0;
};

struct GrowthLocation {
  uint64_t address = 0;
  std::vector<GrowthLine> lines;  // innermost inline frame first; empty if unsymbolized
};

// One site's values in one snapshot.
struct GrowthPoint {
  uint32_t snapshot = 0;  // index into GrowthData::snapshots
  float bytes_var = 0;
  int64_t objects = 0;
  int64_t bytes = 0;
};

struct GrowthSite {
  std::vector<uint32_t> locations;  // into GrowthData::locations, leaf first
  std::vector<GrowthPoint> points;  // snapshot order; absent snapshots left out
};

// The main executable's mapping, as the first snapshot names it.
struct GrowthMapping {
  uint64_t start = 0, limit = 0, offset = 0;
  std::string filename;
  std::string build_id;
};

struct GrowthData {
  std::vector<GrowthSnapshot> snapshots;  // by time_nanos
  std::optional<GrowthMapping> main_mapping;
  std::vector<GrowthLocation> locations;
  std::vector<GrowthSite> sites;

  // The site's dense series over all snapshots.
  SiteSeries Series(const GrowthSite& site) const;
  // Each snapshot's time in hours from the first.
  std::vector<double> Hours() const;
};

class GrowthCollector {
 public:
  // Adds one heap profile; throws Error(kMalformed) naming `name` when it
  // has no inuse_objects and inuse_space sample types or refers to missing
  // locations or strings.
  void Add(const pb::Profile& profile, std::string name,
           std::optional<uint32_t> cycle = std::nullopt);
  size_t snapshots() const { return data_.snapshots.size(); }
  // The snapshots in time order. Throws Error(kUsage) when fewer than two
  // were added or two have the same time_nanos.
  GrowthData Finish() &&;

 private:
  uint32_t InternLocation(const ProfileView& view, const pb::Location& loc);
  uint32_t InternSite(const std::vector<uint32_t>& locations);

  GrowthData data_;
  std::unordered_map<std::string, uint32_t> location_ids_;
  std::unordered_map<std::string, uint32_t> site_ids_;
};

}  // namespace goheap2pprof
