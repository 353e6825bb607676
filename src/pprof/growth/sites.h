// The allocation sites of N heap profiles of one program and each site's
// in-use series, for the growth report (growth.h, report.h). A site
// is a sample's stack, the allocation site and its caller chain: locations
// are matched across profiles by their source lines (function, file, line;
// the address for an unsymbolized location), so the profiles may come from
// goheap2pprof, from serve or watch, or from the runtime's own
// /debug/pprof/heap, whose ids and string tables all differ. Samples of
// one stack (one per object size) are summed.
//
//   GrowthCollector c;
//   for (...) c.Add(profile, "heap-3.pb.gz");   // any order
//   c.AddSerialized(bytes, "heap-4.pb.gz");      // or serialized, not gzipped
//   GrowthData d = std::move(c).Finish();        // snapshots by time_nanos
//
// The structures compare equal member by member (tests compare the two
// decoders with it).
//
// Memory: the locations once, and per site one 24-byte point per snapshot
// in which the site has in-use objects, so absent sites cost nothing. A
// profile read from a file is decoded (AddSerialized) into views of its
// bytes, not into a pb::Profile: for a 100k-sample profile that is the
// difference between a few and a hundred thousand allocations, which made
// the report over 100 such profiles cost over 7 s of CPU (bench/README.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/hash_index.h"
#include "pprof/growth/growth.h"
#include "pprof/profile/view.h"
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

  bool operator==(const GrowthSnapshot&) const = default;
};

struct GrowthLine {
  std::string function;
  std::string file;
  int64_t line = 0;
  int64_t start_line = 0;

  bool operator==(const GrowthLine&) const = default;
};

struct GrowthLocation {
  uint64_t address = 0;
  std::vector<GrowthLine> lines;  // innermost inline frame first; empty if unsymbolized

  bool operator==(const GrowthLocation&) const = default;
};

// One site's values in one snapshot.
struct GrowthPoint {
  uint32_t snapshot = 0;  // index into GrowthData::snapshots
  float bytes_var = 0;
  int64_t objects = 0;
  int64_t bytes = 0;

  bool operator==(const GrowthPoint&) const = default;
};

struct GrowthSite {
  std::vector<uint32_t> locations;  // into GrowthData::locations, leaf first
  std::vector<GrowthPoint> points;  // snapshot order; absent snapshots left out

  bool operator==(const GrowthSite&) const = default;
};

// The main executable's mapping, as the first snapshot names it.
struct GrowthMapping {
  uint64_t start = 0, limit = 0, offset = 0;
  std::string filename;
  std::string build_id;

  bool operator==(const GrowthMapping&) const = default;
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

  bool operator==(const GrowthData&) const = default;
};

class GrowthCollector {
 public:
  // Adds one heap profile; throws Error(kMalformed) naming `name` when it
  // has no inuse_objects and inuse_space sample types or refers to missing
  // locations or strings.
  void Add(const pb::Profile& profile, std::string name,
           std::optional<uint32_t> cycle = std::nullopt);
  // Adds one serialized (not gzipped) heap profile as Add would after
  // parsing it, reading only the fields the sites need (decode.cc).
  // Returns false, adding nothing, for a growth profile (one with an
  // inuse_space_per_hour sample type: the report's own output). Throws
  // Error(kMalformed) naming `name` as Add does, and for bytes that are not
  // a profile.
  bool AddSerialized(std::string_view bytes, std::string name,
                     std::optional<uint32_t> cycle = std::nullopt);
  size_t snapshots() const { return data_.snapshots.size(); }
  // The snapshots in time order. Throws Error(kUsage) when fewer than two
  // were added or two have the same time_nanos.
  GrowthData Finish() &&;

 private:
  // Location lookups by a string_view into a reused buffer, so that
  // matching a location already known allocates nothing.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using KeyIndex = std::unordered_map<std::string, uint32_t, KeyHash, std::equal_to<>>;

  uint32_t InternLocation(const ProfileView& view, const pb::Location& loc);
  // The location of `key` (LocationKey's), made by make() when new.
  template <typename Make>
  uint32_t InternLocation(std::string_view key, Make make) {
    if (auto it = location_ids_.find(key); it != location_ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(data_.locations.size());
    data_.locations.push_back(make());
    location_ids_.emplace(std::string(key), id);
    return id;
  }
  uint32_t InternSite(std::span<const uint32_t> locations);
  // Adds a sample of `site` to the snapshot being added (the last one).
  void AddSample(GrowthSnapshot& snapshot, uint32_t index, uint32_t site, int64_t objects,
                 int64_t bytes);
  void SetMainMapping(GrowthMapping mapping);

  GrowthData data_;
  KeyIndex location_ids_;
  HashIndex site_ids_;  // by the stack's bytes
};

// A location's key in GrowthCollector: its lines' function, file and line,
// or for an unsymbolized location (no lines) its address.
void AppendLineKey(std::string& key, std::string_view function, std::string_view file,
                   int64_t line);
void SetAddressKey(std::string& key, uint64_t address);

}  // namespace goheap2pprof
