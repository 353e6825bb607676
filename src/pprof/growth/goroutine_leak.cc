#include "pprof/growth/goroutine_leak.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "base/error.h"
#include "base/utf8.h"
#include "pprof/goroutine_report.h"

namespace goheap2pprof {

namespace {

// What decides a parked goroutine's group: its creator (goroutine 1 has
// none) and its wait reason. Goroutines of one program share few of these,
// so each is symbolized once per snapshot, not once per goroutine.
using GroupId = std::tuple<uint64_t, uint8_t, bool>;

std::string ParkedAt(const GoroutineDumpInput& in, const Goroutine& g) {
  for (const GoroutineFrame& f : GoroutineFrames(in, g)) {
    if (f.shown) return f.function + " " + f.file + ":" + std::to_string(f.line);
  }
  return "(no frame shown)";
}

void AddParked(const GoroutineDumpInput& in, const Goroutine& g, const GoroutineGroupKey& key,
               GoroutineTally& t) {
  GoroutineGroupTally& group = t.groups[key];
  ++group.parked;
  if (g.wait_since != 0 && in.now) {
    const int64_t waited = std::max<int64_t>(0, *in.now - g.wait_since);
    group.oldest_wait_nanos = std::max(group.oldest_wait_nanos.value_or(0), waited);
  }
  if (GoroutineLeaked(in, g)) {
    ++group.leaked;
    t.leaked.push_back({.goid = g.goid, .group = key, .parked_at = ParkedAt(in, g)});
  }
}

SiteSeries CountSeries(const std::vector<int64_t>& counts) {
  return {.objects = counts, .bytes = counts, .bytes_var = std::vector<double>(counts.size())};
}

// Each group's counts over the snapshots, and what the last snapshot that
// had it said of its waits.
std::map<GoroutineGroupKey, GoroutineGroupGrowth> Series(const std::vector<GoroutineTally>& ts) {
  std::map<GoroutineGroupKey, GoroutineGroupGrowth> out;
  for (size_t i = 0; i < ts.size(); ++i) {
    for (const auto& [key, tally] : ts[i].groups) {
      GoroutineGroupGrowth& g = out[key];
      if (g.parked.empty()) {
        g.key = key;
        g.parked.resize(ts.size());
      }
      g.parked[i] = tally.parked;
      g.leaked = i + 1 == ts.size() ? tally.leaked : 0;
      g.oldest_wait_nanos = tally.oldest_wait_nanos;
    }
  }
  return out;
}

std::string Signed(int64_t v) { return (v > 0 ? "+" : "") + std::to_string(v); }

std::string PerHour(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.0f/h", v);
  return buf;
}

std::string Waited(const std::optional<int64_t>& nanos) {
  return nanos ? FormatDuration(static_cast<double>(*nanos) / 1e9) : "-";
}

size_t Shown(size_t n, int top) { return top > 0 ? std::min(n, static_cast<size_t>(top)) : n; }

void TextHeader(const GoroutineLeakReport& r, std::string& out) {
  const GoroutineLeakInfo& i = r.info;
  out += "goroutine growth of " + i.source;
  if (!i.process_start.empty()) out += ", started " + i.process_start;
  if (!i.go_version.empty()) out += ", " + i.go_version;
  const double seconds = static_cast<double>(r.times.back() - r.times.front()) / 1e9;
  out += "\nwindow: " + FormatUtcTime(r.times.front()) + " to " + FormatUtcTime(r.times.back()) +
         " (" + FormatDuration(seconds) + "), " + std::to_string(r.times.size()) +
         " snapshots; goroutines " + std::to_string(r.goroutines.front()) + " -> " +
         std::to_string(r.goroutines.back()) + "; retried " + std::to_string(r.retried) +
         ", dropped " + std::to_string(r.dropped) + "\n";
}

void TextGroups(const GoroutineLeakReport& r, int top, std::string& out) {
  std::map<GrowthClass, int> counts;
  for (const GoroutineGroupGrowth& g : r.groups) ++counts[g.growth.growth_class];
  out += std::to_string(r.groups.size()) +
         " groups of parked goroutines (creation site, wait "
         "reason):";
  for (GrowthClass c : {GrowthClass::kSteadyGrowth, GrowthClass::kNew, GrowthClass::kSawtooth,
                        GrowthClass::kShrinking, GrowthClass::kBounded}) {
    out += " " + std::to_string(counts[c]) + " " + std::string(GrowthClassName(c)) + ";";
  }
  out += " ranked by slope - 2 sigma\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-4s %-13s %9s %9s %8s %12s %11s %9s %7s  %s\n", "rank",
                "class", "first", "last", "change", "slope", "±2σ", "oldest", "leaked",
                "wait reason, created by");
  out += line;
  for (size_t k = 0; k < Shown(r.groups.size(), top); ++k) {
    const GoroutineGroupGrowth& g = r.groups[k];
    const SiteGrowth& s = g.growth;
    std::snprintf(line, sizeof line,
                  "#%-3zu %-13s %9" PRId64 " %9" PRId64 " %8s %12s %11s %9s %7" PRId64 "  ", k + 1,
                  std::string(GrowthClassName(s.growth_class)).c_str(), s.first_objects,
                  s.last_objects, Signed(s.change_objects).c_str(),
                  PerHour(s.slope_objects_per_hour).c_str(), PerHour(2 * s.slope_sigma).c_str() + 1,
                  Waited(g.oldest_wait_nanos).c_str(), g.leaked);
    out += line + g.key.wait_reason + ", " + g.key.created_by + "\n";
  }
  if (Shown(r.groups.size(), top) < r.groups.size()) {
    out += "(" + std::to_string(r.groups.size() - Shown(r.groups.size(), top)) +
           " more groups; --top 0 shows all)\n";
  }
}

void TextLeaked(const GoroutineLeakReport& r, int top, std::string& out) {
  if (!r.info.runtime_marks_leaks) {
    out += "\nleaked: this Go version's GC does not mark goroutines leaked (Go 1.26+ does)\n";
    return;
  }
  out += "\nleaked (marked by the runtime's leak-detecting GC, at the last snapshot): " +
         std::to_string(r.leaked.size()) + " goroutines\n";
  if (r.leaked.empty()) {
    out +=
        "  (the runtime marks them only in a GC run for its goroutineleak profile: Go 1.27, "
        "or 1.26 built with GOEXPERIMENT=goroutineleakprofile)\n";
  }
  // Ten per group row shown: enough to see them, bounded for a large leak.
  const size_t shown = Shown(r.leaked.size(), top * 10);
  for (size_t k = 0; k < shown; ++k) {
    const LeakedGoroutine& l = r.leaked[k];
    out += "  goroutine " + std::to_string(l.goid) + " [" + l.group.wait_reason + " (leaked)] in " +
           l.parked_at + ", created by " + l.group.created_by + "\n";
  }
  if (shown < r.leaked.size()) {
    out += "  (" + std::to_string(r.leaked.size() - shown) + " more; --top 0 shows all)\n";
  }
}

nlohmann::ordered_json GroupJson(const GoroutineGroupGrowth& g, size_t rank) {
  const SiteGrowth& s = g.growth;
  return {
      {"rank", rank + 1},
      {"class", GrowthClassName(s.growth_class)},
      {"new", s.new_site},
      {"created_by", g.key.created_by},
      {"wait_reason", g.key.wait_reason},
      {"parked", g.parked},
      {"first", s.first_objects},
      {"last", s.last_objects},
      {"change", s.change_objects},
      {"slope_per_hour", s.slope_objects_per_hour},
      {"slope_sigma_per_hour", s.slope_sigma},
      {"slope_lower_per_hour", s.slope_lower},
      {"r2", s.r2},
      {"steps", s.steps},
      {"steps_rose", s.steps_rose},
      {"oldest_wait_seconds",
       g.oldest_wait_nanos ? nlohmann::ordered_json(static_cast<double>(*g.oldest_wait_nanos) / 1e9)
                           : nlohmann::ordered_json(nullptr)},
      {"leaked", g.leaked}};
}

}  // namespace

GoroutineTally TallyGoroutines(const GoroutineDumpInput& in, const GoroutineSnapshot& snapshot,
                               int64_t time_nanos) {
  GoroutineTally t{.time_nanos = time_nanos,
                   .goroutines = static_cast<int64_t>(snapshot.goroutines.size()),
                   .groups = {},
                   .leaked = {},
                   .stats = snapshot.stats};
  std::map<GroupId, GoroutineGroupKey> keys;
  for (const Goroutine& g : snapshot.goroutines) {
    if (!GoroutineParked(in, g)) continue;
    const GroupId id{g.gopc, g.wait_reason, g.goid == 1};
    auto it = keys.find(id);
    if (it == keys.end()) {
      it = keys.emplace(id,
                        GoroutineGroupKey{GoroutineCreatorText(in, g), GoroutineWaitReason(in, g)})
               .first;
    }
    AddParked(in, g, it->second, t);
  }
  return t;
}

GoroutineLeakReport AnalyzeGoroutineLeaks(std::vector<GoroutineTally> ts, GoroutineLeakInfo info) {
  if (ts.size() < 2) {
    throw Error(ErrorKind::kInternal, "a goroutine leak report of ", ts.size(), " snapshots");
  }
  GoroutineLeakReport r;
  r.info = std::move(info);
  std::vector<double> hours;
  for (const GoroutineTally& t : ts) {
    r.times.push_back(t.time_nanos);
    r.goroutines.push_back(t.goroutines);
    hours.push_back(static_cast<double>(t.time_nanos - ts.front().time_nanos) / 3.6e12);
    r.retried += t.stats.retried;
    r.dropped += t.stats.dropped;
  }
  for (auto& [key, g] : Series(ts)) {
    g.growth = AnalyzeSeries(hours, CountSeries(g.parked));
    r.groups.push_back(std::move(g));
  }
  // Equal growth ranks the larger group first (a pool of 100,000 before a
  // lone goroutine), then the key's order (the sort is stable).
  std::stable_sort(r.groups.begin(), r.groups.end(),
                   [](const GoroutineGroupGrowth& a, const GoroutineGroupGrowth& b) {
                     if (RanksBefore(a.growth, b.growth)) return true;
                     if (RanksBefore(b.growth, a.growth)) return false;
                     return a.growth.last_objects > b.growth.last_objects;
                   });
  r.leaked = std::move(ts.back().leaked);
  return r;
}

std::vector<size_t> GroupsGrowingFaster(const GoroutineLeakReport& report, double per_hour) {
  std::vector<size_t> out;
  for (size_t i = 0; i < report.groups.size(); ++i) {
    const SiteGrowth& g = report.groups[i].growth;
    if (g.growth_class == GrowthClass::kSteadyGrowth && g.slope_lower > per_hour) out.push_back(i);
  }
  return out;
}

std::string GoroutineLeakText(const GoroutineLeakReport& report,
                              const GrowthRenderOptions& options) {
  std::string out;
  TextHeader(report, out);
  TextGroups(report, options.top, out);
  TextLeaked(report, options.top, out);
  // Function and file names are the target's bytes.
  return ValidUtf8(out);
}

std::string GoroutineLeakJson(const GoroutineLeakReport& r, const GrowthRenderOptions& options) {
  nlohmann::ordered_json j;
  j["source"] = r.info.source;
  j["pid"] = r.info.pid ? nlohmann::ordered_json(*r.info.pid) : nlohmann::ordered_json(nullptr);
  j["process_start"] = r.info.process_start;
  j["go_version"] = r.info.go_version;
  j["window"] = {{"start_nanos", r.times.front()},
                 {"end_nanos", r.times.back()},
                 {"seconds", static_cast<double>(r.times.back() - r.times.front()) / 1e9}};
  j["snapshots"] = r.times.size();
  j["goroutines"] = r.goroutines;
  j["read"] = {{"retried", r.retried}, {"dropped", r.dropped}};
  if (options.fail_above) {
    j["fail_above"] = {{"per_hour", *options.fail_above},
                       {"groups_above", GroupsGrowingFaster(r, *options.fail_above).size()}};
  }
  j["groups_total"] = r.groups.size();
  j["groups"] = nlohmann::ordered_json::array();
  for (size_t k = 0; k < Shown(r.groups.size(), options.top); ++k) {
    j["groups"].push_back(GroupJson(r.groups[k], k));
  }
  j["runtime_marks_leaks"] = r.info.runtime_marks_leaks;
  j["leaked"] = nlohmann::ordered_json::array();
  for (const LeakedGoroutine& l : r.leaked) {
    j["leaked"].push_back({{"id", l.goid},
                           {"created_by", l.group.created_by},
                           {"wait_reason", l.group.wait_reason},
                           {"parked_at", l.parked_at}});
  }
  return JsonText(j, 2) + "\n";
}

}  // namespace goheap2pprof
