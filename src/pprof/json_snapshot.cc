#include "pprof/json_snapshot.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/saturating.h"
#include "base/utf8.h"
#include "pprof/profile/view.h"

namespace goheap2pprof {

namespace {

using Json = nlohmann::ordered_json;

// Frames the seed collector does not name an entry after.
bool IsRuntimeFunction(std::string_view function, const std::vector<std::string_view>& prefixes) {
  for (std::string_view prefix : prefixes) {
    if (function.starts_with(prefix)) return true;
  }
  return false;
}

// The seed's fields in the seed's order, then ours; entries last because
// they are the long part.
Json Header(const SnapshotInfo& info, bool truncated) {
  Json j;
  j["runtime_version"] = info.runtime_version;
  j["status"] = SnapshotStatusName(info.status);
  j["status_reason"] = info.status_reason;
  j["duration_ms"] = info.duration_ms;
  j["output_truncated"] = truncated;
  j["pid"] = info.pid;
  j["counters"] = info.counters;
  return j;
}

Json Warnings(const SnapshotInfo& info) {
  Json w = Json::array();
  for (const std::string& text : info.warnings) w.push_back(text);
  return w;
}

std::string Dump(const Json& j) {
  // Invalid UTF-8 (a mangled symbol name) must not make the dump throw.
  return JsonText(j, 2) + "\n";
}

}  // namespace

std::string_view SnapshotStatusName(SnapshotStatus status) {
  switch (status) {
    case SnapshotStatus::kComplete:
      return "complete";
    case SnapshotStatus::kPartial:
      return "partial";
    case SnapshotStatus::kUnavailable:
      return "unavailable";
    case SnapshotStatus::kFailed:
      return "failed";
  }
  return "failed";
}

std::vector<SnapshotEntry> InUseByStack(const pb::Profile& profile,
                                        const std::vector<std::string_view>& runtime_prefixes) {
  const ProfileView view(profile);
  const int objects_index = view.SampleIndex("inuse_objects");
  const int bytes_index = view.SampleIndex("inuse_space");
  // std::map keeps the result independent of hashing; the final sort below
  // orders it anyway.
  std::map<std::vector<uint64_t>, SnapshotEntry> by_stack;
  for (const pb::Sample& s : profile.sample()) {
    if (s.value_size() <= std::max(objects_index, bytes_index)) continue;
    const int64_t objects = s.value(objects_index);
    const int64_t bytes = s.value(bytes_index);
    if (objects == 0 && bytes == 0) continue;
    std::vector<uint64_t> key(s.location_id().begin(), s.location_id().end());
    auto [it, inserted] = by_stack.try_emplace(std::move(key));
    SnapshotEntry& e = it->second;
    if (inserted) {
      const std::vector<StackFrame> frames = view.Frames(s);
      for (const StackFrame& f : frames) e.stack.push_back(f.Text());
      auto named = std::find_if(frames.begin(), frames.end(), [&](const StackFrame& f) {
        return !f.function.empty() && !IsRuntimeFunction(f.function, runtime_prefixes);
      });
      if (named != frames.end()) {
        e.name = named->function;
      } else if (!frames.empty()) {
        e.name = frames.front().function.empty() ? frames.front().Text() : frames.front().function;
      }
    }
    e.bytes = SaturatingAdd(e.bytes, bytes);
    e.objects = SaturatingAdd(e.objects, objects);
  }
  std::vector<SnapshotEntry> entries;
  entries.reserve(by_stack.size());
  for (auto& [key, e] : by_stack) entries.push_back(std::move(e));
  auto larger = [](const SnapshotEntry& a, const SnapshotEntry& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.objects != b.objects) return a.objects > b.objects;
    if (a.name != b.name) return a.name < b.name;
    return a.stack < b.stack;
  };
  std::stable_sort(entries.begin(), entries.end(), larger);
  return entries;
}

std::string JsonSnapshot(const pb::Profile& profile, const SnapshotInfo& info,
                         const JsonSnapshotOptions& options) {
  std::vector<SnapshotEntry> entries = InUseByStack(profile, options.runtime_prefixes);
  int64_t total_bytes = 0, total_objects = 0;
  for (const SnapshotEntry& e : entries) {
    total_bytes = SaturatingAdd(total_bytes, e.bytes);
    total_objects = SaturatingAdd(total_objects, e.objects);
  }
  const size_t entries_total = entries.size();
  const bool truncated = options.top != 0 && entries.size() > options.top;
  if (truncated) entries.resize(options.top);

  Json j = Header(info, truncated);
  j["memprofile_rate"] = profile.period();
  j["sampling_started_late"] = info.sampling_started_late;
  if (info.cycle) {
    j["profile_cycle"] = *info.cycle;
  } else {
    j["profile_cycle"] = nullptr;
  }
  j["time_nanos"] = profile.time_nanos();
  j["samples"] = profile.sample_size();
  j["entries_total"] = entries_total;
  j["inuse_bytes_total"] = total_bytes;
  j["inuse_objects_total"] = total_objects;
  j["warnings"] = Warnings(info);
  Json list = Json::array();
  for (const SnapshotEntry& e : entries) {
    Json entry;
    entry["kind"] = "inuse_space_objects";
    entry["name"] = e.name;
    entry["bytes"] = e.bytes;
    entry["objects"] = e.objects;
    // The seed's quotient; 0 rather than a division by zero when only bytes
    // or only objects are non-zero (a torn counter read).
    entry["average_bytes"] =
        e.objects != 0 ? static_cast<double>(e.bytes) / static_cast<double>(e.objects) : 0.0;
    entry["stack"] = e.stack;
    list.push_back(std::move(entry));
  }
  j["entries"] = std::move(list);
  return Dump(j);
}

std::string FailureJsonSnapshot(const SnapshotInfo& info) {
  Json j = Header(info, false);
  j["memprofile_rate"] = nullptr;
  j["sampling_started_late"] = info.sampling_started_late;
  if (info.cycle) {
    j["profile_cycle"] = *info.cycle;
  } else {
    j["profile_cycle"] = nullptr;
  }
  j["time_nanos"] = nullptr;
  j["samples"] = 0;
  j["entries_total"] = 0;
  j["inuse_bytes_total"] = 0;
  j["inuse_objects_total"] = 0;
  j["warnings"] = Warnings(info);
  j["entries"] = Json::array();
  return Dump(j);
}

}  // namespace goheap2pprof
