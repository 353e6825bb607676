#include "pprof/growth/sites.h"

#include <algorithm>
#include <charconv>
#include <numeric>

#include "base/error.h"
#include "base/saturating.h"
#include "pprof/profile/view.h"

namespace goheap2pprof {

namespace {

// The index of a sample type, or -1.
int FindType(const ProfileView& view, std::string_view type) {
  for (int i = 0; i < view.profile().sample_type_size(); ++i) {
    if (view.Str(view.profile().sample_type(i).type()) == type) return i;
  }
  return -1;
}

std::string FirstBuildId(const ProfileView& view) {
  if (view.profile().mapping_size() == 0) return "";
  return view.Str(view.profile().mapping(0).build_id());
}

}  // namespace

SiteSeries GrowthData::Series(const GrowthSite& site) const {
  const size_t n = snapshots.size();
  SiteSeries s{std::vector<int64_t>(n), std::vector<int64_t>(n), std::vector<double>(n)};
  for (const GrowthPoint& p : site.points) {
    s.objects[p.snapshot] = p.objects;
    s.bytes[p.snapshot] = p.bytes;
    s.bytes_var[p.snapshot] = p.bytes_var;
  }
  return s;
}

std::vector<double> GrowthData::Hours() const {
  std::vector<double> hours;
  for (const GrowthSnapshot& s : snapshots) {
    hours.push_back(static_cast<double>(s.time_nanos - snapshots.front().time_nanos) / 3.6e12);
  }
  return hours;
}

void AppendLineKey(std::string& key, std::string_view function, std::string_view file,
                   int64_t line) {
  key.append(function).push_back('\0');
  key.append(file).push_back('\0');
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, line);
  key.append(digits, r.ptr).push_back('\0');
}

void SetAddressKey(std::string& key, uint64_t address) { key = "@" + std::to_string(address); }

uint32_t GrowthCollector::InternLocation(const ProfileView& view, const pb::Location& loc) {
  std::string key;
  for (const pb::Line& line : loc.line()) {
    const pb::Function* fn = view.Function(line.function_id());
    if (fn != nullptr)
      AppendLineKey(key, view.Str(fn->name()), view.Str(fn->filename()), line.line());
  }
  // Unsymbolized: only the address names it.
  if (key.empty()) SetAddressKey(key, loc.address());
  return InternLocation(key, [&] {
    GrowthLocation g{.address = loc.address(), .lines = {}};
    for (const pb::Line& line : loc.line()) {
      const pb::Function* fn = view.Function(line.function_id());
      if (fn == nullptr) continue;
      g.lines.push_back(
          {view.Str(fn->name()), view.Str(fn->filename()), line.line(), fn->start_line()});
    }
    return g;
  });
}

namespace {

std::string_view AsBytes(std::span<const uint32_t> stack) {
  return {reinterpret_cast<const char*>(stack.data()), stack.size_bytes()};
}

}  // namespace

uint32_t GrowthCollector::InternSite(std::span<const uint32_t> locations) {
  const auto next = static_cast<uint32_t>(data_.sites.size());
  const uint32_t id = site_ids_.FindOrInsert(AsBytes(locations), next, [this](uint32_t site) {
    return AsBytes(data_.sites[site].locations);
  });
  if (id == next) {
    data_.sites.push_back({std::vector<uint32_t>(locations.begin(), locations.end()), {}});
  }
  return id;
}

void GrowthCollector::AddSample(GrowthSnapshot& s, uint32_t snap, uint32_t site_id, int64_t objects,
                                int64_t bytes) {
  GrowthSite& site = data_.sites[site_id];
  if (site.points.empty() || site.points.back().snapshot != snap) {
    site.points.push_back({.snapshot = snap, .bytes_var = 0, .objects = 0, .bytes = 0});
  }
  GrowthPoint& p = site.points.back();
  p.objects = SaturatingAdd(p.objects, objects);
  p.bytes = SaturatingAdd(p.bytes, bytes);
  p.bytes_var += static_cast<float>(SampledBytesVariance(objects, bytes, s.rate));
  s.inuse_objects = SaturatingAdd(s.inuse_objects, objects);
  s.inuse_bytes = SaturatingAdd(s.inuse_bytes, bytes);
}

void GrowthCollector::SetMainMapping(GrowthMapping mapping) {
  if (!data_.main_mapping) data_.main_mapping = std::move(mapping);
}

void GrowthCollector::Add(const pb::Profile& profile, std::string name,
                          std::optional<uint32_t> cycle) {
  const ProfileView view(profile);
  const int objects_at = FindType(view, "inuse_objects");
  const int bytes_at = FindType(view, "inuse_space");
  if (objects_at < 0 || bytes_at < 0) {
    throw Error(ErrorKind::kMalformed, name,
                ": not a heap profile (no inuse_objects and inuse_space sample types)");
  }
  if (profile.mapping_size() > 0) {
    const pb::Mapping& m = profile.mapping(0);
    SetMainMapping({.start = m.memory_start(),
                    .limit = m.memory_limit(),
                    .offset = m.file_offset(),
                    .filename = view.Str(m.filename()),
                    .build_id = view.Str(m.build_id())});
  }
  const auto snap = static_cast<uint32_t>(data_.snapshots.size());
  GrowthSnapshot s{.name = std::move(name),
                   .time_nanos = profile.time_nanos(),
                   .rate = profile.period(),
                   .inuse_bytes = 0,
                   .inuse_objects = 0,
                   .build_id = FirstBuildId(view),
                   .cycle = cycle};
  std::unordered_map<uint64_t, uint32_t> locations;  // the profile's ids -> ours
  std::vector<uint32_t> stack;
  for (const pb::Sample& sample : profile.sample()) {
    if (sample.value_size() <= std::max(objects_at, bytes_at)) {
      throw Error(ErrorKind::kMalformed, s.name, ": a sample has ", sample.value_size(),
                  " values for ", profile.sample_type_size(), " sample types");
    }
    const int64_t objects = sample.value(objects_at), bytes = sample.value(bytes_at);
    if (objects == 0 && bytes == 0) continue;
    stack.clear();
    for (uint64_t id : sample.location_id()) {
      auto it = locations.find(id);
      if (it == locations.end()) {
        const pb::Location* loc = view.Location(id);
        if (loc == nullptr) {
          throw Error(ErrorKind::kMalformed, s.name, ": a sample refers to missing location ", id);
        }
        it = locations.emplace(id, InternLocation(view, *loc)).first;
      }
      stack.push_back(it->second);
    }
    AddSample(s, snap, InternSite(stack), objects, bytes);
  }
  data_.snapshots.push_back(std::move(s));
}

GrowthData GrowthCollector::Finish() && {
  const size_t n = data_.snapshots.size();
  if (n < 2) {
    throw Error(ErrorKind::kUsage, "the growth report needs at least two heap profiles (got ", n,
                ")");
  }
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return data_.snapshots[a].time_nanos < data_.snapshots[b].time_nanos;
  });
  std::vector<uint32_t> rank(n);
  std::vector<GrowthSnapshot> sorted;
  for (uint32_t i = 0; i < n; ++i) {
    rank[order[i]] = i;
    sorted.push_back(std::move(data_.snapshots[order[i]]));
    if (i > 0 && sorted[i].time_nanos == sorted[i - 1].time_nanos) {
      throw Error(ErrorKind::kUsage, sorted[i - 1].name, " and ", sorted[i].name,
                  " have the same time_nanos (the same snapshot twice?)");
    }
  }
  data_.snapshots = std::move(sorted);
  for (GrowthSite& site : data_.sites) {
    for (GrowthPoint& p : site.points) p.snapshot = rank[p.snapshot];
    std::sort(site.points.begin(), site.points.end(),
              [](const GrowthPoint& a, const GrowthPoint& b) { return a.snapshot < b.snapshot; });
  }
  return std::move(data_);
}

}  // namespace goheap2pprof
