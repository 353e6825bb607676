#include "pprof/growth/report.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string_view>
#include <tuple>

#include "base/saturating.h"
#include "base/utf8.h"

namespace goheap2pprof {

namespace {

// Callers shown under a site in the text report.
constexpr size_t kTextFrames = 6;

std::string Signed(double bytes) { return (bytes > 0 ? "+" : "") + FormatBytes(bytes); }

std::string FrameText(const GrowthLocation& loc, size_t line) {
  if (loc.lines.empty()) {
    std::ostringstream s;
    s << "0x" << std::hex << loc.address;
    return s.str();
  }
  const GrowthLine& l = loc.lines[line];
  return l.function + " " + l.file + ":" + std::to_string(l.line);
}

// The site's frames, allocation site first, inline frames innermost first.
std::vector<std::string> Frames(const GrowthData& data, const GrowthSite& site) {
  std::vector<std::string> frames;
  for (uint32_t id : site.locations) {
    const GrowthLocation& loc = data.locations[id];
    for (size_t i = 0; i < std::max<size_t>(loc.lines.size(), 1); ++i) {
      frames.push_back(FrameText(loc, i));
    }
  }
  return frames;
}

// The sum of every site: the profiled in-use series.
SiteGrowth AnalyzeTotal(const GrowthData& data, const std::vector<double>& hours,
                        const std::vector<double>& var) {
  SiteSeries s;
  for (const GrowthSnapshot& snap : data.snapshots) {
    s.objects.push_back(snap.inuse_objects);
    s.bytes.push_back(snap.inuse_bytes);
  }
  s.bytes_var = var;
  return AnalyzeSeries(hours, s);
}

// A total order of sites by their frames, so that equal growth ranks the
// same whatever order the profiles listed the samples in.
bool StackBefore(const GrowthData& d, const GrowthSite& a, const GrowthSite& b) {
  const auto key = [&](uint32_t loc) {
    const GrowthLocation& l = d.locations[loc];
    return l.lines.empty() ? std::make_tuple(std::string_view(), std::string_view(),
                                             static_cast<int64_t>(l.address))
                           : std::make_tuple(std::string_view(l.lines[0].function),
                                             std::string_view(l.lines[0].file), l.lines[0].line);
  };
  return std::lexicographical_compare(a.locations.begin(), a.locations.end(), b.locations.begin(),
                                      b.locations.end(),
                                      [&](uint32_t x, uint32_t y) { return key(x) < key(y); });
}

size_t Shown(const GrowthReport& r, int top) {
  return top > 0 ? std::min(r.ranking.size(), static_cast<size_t>(top)) : r.ranking.size();
}

double WindowSeconds(const GrowthData& d) {
  return static_cast<double>(d.snapshots.back().time_nanos - d.snapshots.front().time_nanos) / 1e9;
}

std::optional<std::pair<uint32_t, uint32_t>> Cycles(const GrowthData& d) {
  if (!d.snapshots.front().cycle || !d.snapshots.back().cycle) return std::nullopt;
  return std::make_pair(*d.snapshots.front().cycle, *d.snapshots.back().cycle);
}

std::string BuildId(const GrowthReport& r) {
  return r.info.build_id.empty() ? r.data.snapshots.front().build_id : r.info.build_id;
}

// The least-squares slope of the readings in bytes per hour; nullopt with
// fewer than two distinct times.
std::optional<double> ReadingSlope(const std::vector<GrowthReading>& r) {
  if (r.size() < 2) return std::nullopt;
  double tbar = 0, ybar = 0;
  for (const GrowthReading& x : r) {
    tbar += static_cast<double>(x.time_nanos - r.front().time_nanos) / 3.6e12;
    ybar += static_cast<double>(x.bytes);
  }
  tbar /= static_cast<double>(r.size());
  ybar /= static_cast<double>(r.size());
  double sxx = 0, sxy = 0;
  for (const GrowthReading& x : r) {
    const double t = static_cast<double>(x.time_nanos - r.front().time_nanos) / 3.6e12 - tbar;
    sxx += t * t;
    sxy += t * (static_cast<double>(x.bytes) - ybar);
  }
  if (sxx <= 0) return std::nullopt;
  return sxy / sxx;
}

void TextLabels(const GrowthReport& r, std::ostream& out) {
  for (const auto& [name, value] : r.info.labels) out << ", " << name << " " << value;
}

void TextHeader(const GrowthReport& r, std::ostream& out) {
  const GrowthInfo& i = r.info;
  out << "growth of " << i.source;
  if (!i.process_start.empty()) out << ", started " << i.process_start;
  if (!i.go_version.empty()) out << ", " << i.go_version;
  if (!BuildId(r).empty()) out << ", build id " << BuildId(r);
  TextLabels(r, out);
  const GrowthData& d = r.data;
  out << "\nwindow: " << FormatUtcTime(d.snapshots.front().time_nanos) << " to "
      << FormatUtcTime(d.snapshots.back().time_nanos) << " (" << FormatDuration(WindowSeconds(d))
      << "), " << d.snapshots.size() << " snapshots";
  if (auto c = Cycles(d)) out << ", GC cycles " << c->first << " to " << c->second;
  if (i.skipped_same_cycle > 0) {
    out << " (" << i.skipped_same_cycle << " captures skipped: no GC cycle since the last)";
  }
  out << ", MemProfileRate " << d.snapshots.back().rate << "\n";
}

void TextTotals(const GrowthReport& r, std::ostream& out) {
  const SiteGrowth& t = r.total;
  const double change = static_cast<double>(t.change_bytes);
  out << "profiled in-use: " << FormatBytes(static_cast<double>(t.first_bytes)) << " -> "
      << FormatBytes(static_cast<double>(t.last_bytes)) << " (" << Signed(change) << " ±"
      << FormatBytes(t.change_noise) << "), " << Signed(t.slope_bytes_per_hour) << "/h\n";
  const auto other = [&](const char* name, const GrowthPair& p) {
    const double grew = static_cast<double>(p.last - p.first);
    out << name << ": " << FormatBytes(static_cast<double>(p.first)) << " -> "
        << FormatBytes(static_cast<double>(p.last)) << " (" << Signed(grew) << ")";
    if (grew > 0) out << "; the profile explains " << std::lround(100 * change / grew) << "%";
  };
  if (r.info.heap_live) {
    other("/gc/heap/live:bytes", *r.info.heap_live);
    out << "\n";
  }
  if (r.info.rss) {
    other("RSS", *r.info.rss);
    out << "\n";
  }
  if (r.info.cgroup) {
    other("cgroup", *r.info.cgroup);
    if (r.info.cgroup_limit) out << "; limit " << FormatBytes(double(*r.info.cgroup_limit));
    if (auto f = CgroupLimitForecast(r)) {
      out << ", reached in " << FormatDuration(f->hours * 3600) << " at "
          << Signed(f->slope_bytes_per_hour) << "/h (at " << FormatUtcTime(f->at_nanos) << ")";
    }
    out << "\n";
  }
}

void TextSites(const GrowthReport& r, int top, std::ostream& out) {
  std::map<GrowthClass, int> counts;
  for (const SiteGrowth& g : r.sites) ++counts[g.growth_class];
  out << r.sites.size() << " sites:";
  for (GrowthClass c : {GrowthClass::kSteadyGrowth, GrowthClass::kNew, GrowthClass::kSawtooth,
                        GrowthClass::kShrinking, GrowthClass::kBounded}) {
    out << " " << counts[c] << " " << GrowthClassName(c) << ";";
  }
  out << " ranked by slope - 2 sigma\n";
  for (size_t k = 0; k < Shown(r, top); ++k) {
    const SiteGrowth& g = r.sites[r.ranking[k]];
    char line[256];
    snprintf(line, sizeof line, "\n#%zu %s%s  %s/h ±%s/h (R² %.2f), rose %d of %d steps\n", k + 1,
             std::string(GrowthClassName(g.growth_class)).c_str(), g.new_site ? " (new)" : "",
             Signed(g.slope_bytes_per_hour).c_str(), FormatBytes(2 * g.slope_sigma).c_str(), g.r2,
             g.steps_rose, g.steps);
    out << line << "   in-use " << FormatBytes(double(g.first_bytes)) << " -> "
        << FormatBytes(double(g.last_bytes)) << " (" << Signed(double(g.change_bytes)) << " ±"
        << FormatBytes(g.change_noise) << "), objects " << (g.change_objects > 0 ? "+" : "")
        << g.change_objects << " of " << FormatBytes(g.mean_object_size) << "\n";
    const std::vector<std::string> frames = Frames(r.data, r.data.sites[r.ranking[k]]);
    for (size_t f = 0; f < std::min(frames.size(), kTextFrames); ++f) {
      out << (f == 0 ? "   at " : "      ") << frames[f] << "\n";
    }
    if (frames.size() > kTextFrames) out << "      (" << frames.size() - kTextFrames << " more)\n";
  }
  if (Shown(r, top) < r.ranking.size()) {
    out << "\n(" << r.ranking.size() - Shown(r, top) << " more sites; --top 0 shows all)\n";
  }
}

nlohmann::ordered_json SiteJson(const GrowthReport& r, size_t rank) {
  const SiteGrowth& g = r.sites[r.ranking[rank]];
  nlohmann::ordered_json j;
  j["rank"] = rank + 1;
  j["class"] = GrowthClassName(g.growth_class);
  j["new"] = g.new_site;
  j["slope_bytes_per_hour"] = g.slope_bytes_per_hour;
  j["slope_sigma_bytes_per_hour"] = g.slope_sigma;
  j["slope_lower_bytes_per_hour"] = g.slope_lower;
  j["r2"] = g.r2;
  j["steps"] = g.steps;
  j["steps_rose"] = g.steps_rose;
  j["first_bytes"] = g.first_bytes;
  j["last_bytes"] = g.last_bytes;
  j["change_bytes"] = g.change_bytes;
  j["change_noise_bytes"] = g.change_noise;
  j["first_objects"] = g.first_objects;
  j["last_objects"] = g.last_objects;
  j["change_objects"] = g.change_objects;
  j["slope_objects_per_hour"] = g.slope_objects_per_hour;
  j["mean_object_size"] = g.mean_object_size;
  j["stack"] = Frames(r.data, r.data.sites[r.ranking[rank]]);
  return j;
}

// The pair, and the share of its growth that the profiled in-use growth
// explains (null when it did not grow).
nlohmann::ordered_json PairJson(const GrowthPair& p, const SiteGrowth& profiled) {
  nlohmann::ordered_json j = {{"first", p.first}, {"last", p.last}, {"change", p.last - p.first}};
  const double grew = static_cast<double>(p.last - p.first);
  j["profile_explains"] =
      grew > 0 ? nlohmann::ordered_json(static_cast<double>(profiled.change_bytes) / grew)
               : nlohmann::ordered_json(nullptr);
  return j;
}

nlohmann::ordered_json TotalsJson(const GrowthReport& r) {
  const SiteGrowth& t = r.total;
  nlohmann::ordered_json j;
  j["profiled_inuse"] = {{"first", t.first_bytes},
                         {"last", t.last_bytes},
                         {"change", t.change_bytes},
                         {"change_noise", t.change_noise},
                         {"slope_bytes_per_hour", t.slope_bytes_per_hour}};
  j["heap_live"] =
      r.info.heap_live ? PairJson(*r.info.heap_live, t) : nlohmann::ordered_json(nullptr);
  j["rss"] = r.info.rss ? PairJson(*r.info.rss, t) : nlohmann::ordered_json(nullptr);
  j["cgroup"] = r.info.cgroup ? PairJson(*r.info.cgroup, t) : nlohmann::ordered_json(nullptr);
  if (r.info.cgroup) {
    j["cgroup"]["limit"] = r.info.cgroup_limit ? nlohmann::ordered_json(*r.info.cgroup_limit)
                                               : nlohmann::ordered_json(nullptr);
    const std::optional<LimitForecast> f = CgroupLimitForecast(r);
    j["cgroup"]["hours_to_limit"] = f ? nlohmann::ordered_json(f->hours) : nullptr;
    j["cgroup"]["limit_at_nanos"] = f ? nlohmann::ordered_json(f->at_nanos) : nullptr;
    j["cgroup"]["slope_bytes_per_hour"] =
        f ? nlohmann::ordered_json(f->slope_bytes_per_hour) : nullptr;
  }
  return j;
}

}  // namespace

std::string FormatUtcTime(int64_t nanos) {
  const time_t secs = static_cast<time_t>(nanos / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string FormatDuration(double seconds) {
  char buf[48];
  if (seconds < 120) {
    snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else if (seconds < 7200) {
    snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(seconds / 60),
             static_cast<int>(std::fmod(seconds, 60)));
  } else {
    snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(seconds / 3600),
             static_cast<int>(std::fmod(seconds, 3600) / 60));
  }
  return buf;
}

std::string FormatBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = std::fabs(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  snprintf(buf, sizeof buf, u == 0 ? "%s%.0f%s" : "%s%.1f%s", bytes < 0 ? "-" : "", v, kUnits[u]);
  return buf;
}

std::optional<LimitForecast> CgroupLimitForecast(const GrowthReport& r) {
  const GrowthInfo& i = r.info;
  if (!i.cgroup_limit) return std::nullopt;
  LimitForecast f;
  int64_t from_nanos = 0, usage = 0;
  if (std::optional<double> slope = ReadingSlope(i.cgroup_usage)) {
    f.slope_bytes_per_hour = *slope;
    from_nanos = i.cgroup_usage.back().time_nanos;
    usage = i.cgroup_usage.back().bytes;
  } else if (i.cgroup) {
    const double hours = WindowSeconds(r.data) / 3600;
    if (hours <= 0) return std::nullopt;
    f.slope_bytes_per_hour = static_cast<double>(i.cgroup->last - i.cgroup->first) / hours;
    from_nanos = r.data.snapshots.back().time_nanos;
    usage = i.cgroup->last;
  } else {
    return std::nullopt;
  }
  if (f.slope_bytes_per_hour <= 0) return std::nullopt;
  f.hours = std::max(0.0, static_cast<double>(*i.cgroup_limit - usage) / f.slope_bytes_per_hour);
  // Bounded: a slope of a few bytes an hour must not overflow the time.
  f.at_nanos = from_nanos + static_cast<int64_t>(std::min(f.hours, 1e6) * 3.6e12);
  return f;
}

GrowthReport AnalyzeGrowth(GrowthData data, GrowthInfo info) {
  GrowthReport r{
      .data = std::move(data), .info = std::move(info), .sites = {}, .ranking = {}, .total = {}};
  const std::vector<double> hours = r.data.Hours();
  std::vector<double> total_var(r.data.snapshots.size());
  r.sites.reserve(r.data.sites.size());
  for (const GrowthSite& site : r.data.sites) {
    SiteSeries s = r.data.Series(site);
    for (size_t i = 0; i < total_var.size(); ++i) total_var[i] += s.bytes_var[i];
    r.sites.push_back(AnalyzeSeries(hours, s));
  }
  r.total = AnalyzeTotal(r.data, hours, total_var);
  r.ranking.resize(r.sites.size());
  std::iota(r.ranking.begin(), r.ranking.end(), 0);
  std::sort(r.ranking.begin(), r.ranking.end(), [&](size_t a, size_t b) {
    if (RanksBefore(r.sites[a], r.sites[b])) return true;
    if (RanksBefore(r.sites[b], r.sites[a])) return false;
    return StackBefore(r.data, r.data.sites[a], r.data.sites[b]);
  });
  return r;
}

std::vector<size_t> SitesGrowingFaster(const GrowthReport& report, double bytes_per_hour) {
  std::vector<size_t> out;
  for (size_t i : report.ranking) {
    const SiteGrowth& g = report.sites[i];
    if (g.growth_class == GrowthClass::kSteadyGrowth && g.slope_lower > bytes_per_hour) {
      out.push_back(i);
    }
  }
  return out;
}

std::string GrowthText(const GrowthReport& report, const GrowthRenderOptions& options) {
  std::ostringstream out;
  TextHeader(report, out);
  TextTotals(report, out);
  TextSites(report, options.top, out);
  // Function, file and label names are the target's bytes.
  return ValidUtf8(out.str());
}

std::string GrowthJson(const GrowthReport& r, const GrowthRenderOptions& options) {
  nlohmann::ordered_json j;
  j["source"] = r.info.source;
  j["pid"] = r.info.pid ? nlohmann::ordered_json(*r.info.pid) : nlohmann::ordered_json(nullptr);
  j["process_start"] = r.info.process_start;
  j["go_version"] = r.info.go_version;
  j["build_id"] = BuildId(r);
  j["labels"] = nlohmann::ordered_json::object();
  for (const auto& [name, value] : r.info.labels) j["labels"][name] = value;
  j["window"] = {{"start_nanos", r.data.snapshots.front().time_nanos},
                 {"end_nanos", r.data.snapshots.back().time_nanos},
                 {"seconds", WindowSeconds(r.data)}};
  j["snapshots"] = r.data.snapshots.size();
  auto cycles = Cycles(r.data);
  j["gc_cycles"] = cycles
                       ? nlohmann::ordered_json{{"first", cycles->first}, {"last", cycles->second}}
                       : nlohmann::ordered_json(nullptr);
  j["skipped_same_cycle"] = r.info.skipped_same_cycle;
  j["memprofile_rate"] = r.data.snapshots.back().rate;
  j["totals"] = TotalsJson(r);
  if (options.fail_above) {
    j["fail_above"] = {{"bytes_per_hour", *options.fail_above},
                       {"sites_above", SitesGrowingFaster(r, *options.fail_above).size()}};
  }
  j["sites_total"] = r.sites.size();
  j["sites"] = nlohmann::ordered_json::array();
  for (size_t k = 0; k < Shown(r, options.top); ++k) j["sites"].push_back(SiteJson(r, k));
  return JsonText(j, 2) + "\n";
}

}  // namespace goheap2pprof
