#include "agent/watch/report.h"

#include <filesystem>

#include "app/growth_input.h"
#include "pprof/growth/report.h"
#include "pprof/output.h"

namespace goheap2pprof {

namespace {

// The first and last of a quantity read beside the profiles kept.
template <typename Field>
std::optional<GrowthPair> Pair(const std::vector<const WatchReading*>& kept, Field field) {
  const std::optional<int64_t>& first = kept.front()->*field;
  const std::optional<int64_t>& last = kept.back()->*field;
  if (!first || !last) return std::nullopt;
  return GrowthPair{*first, *last};
}

void SetReadings(const std::vector<const WatchReading*>& kept, GrowthInfo& info) {
  if (kept.size() < 2) return;
  info.heap_live = Pair(kept, &WatchReading::heap_live);
  info.rss = Pair(kept, &WatchReading::rss);
  info.cgroup = Pair(kept, &WatchReading::cgroup_usage);
  info.cgroup_limit = kept.back()->cgroup_limit;
  for (const WatchReading* r : kept) {
    if (r->cgroup_usage) info.cgroup_usage.push_back({r->time_nanos, *r->cgroup_usage});
  }
}

}  // namespace

std::vector<std::string> WriteWatchGrowthReport(const OutputDir& dir,
                                                const std::vector<std::string>& profiles,
                                                const std::vector<WatchReading>& readings,
                                                const WatchReportSubject& who) {
  GrowthCollector collector;
  std::vector<const WatchReading*> kept;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const std::string path = dir.path() + "/" + profiles[i];
    // --max-files may have deleted the oldest.
    if (!std::filesystem::exists(path)) continue;
    collector.AddSerialized(ReadProfileBytes(path), profiles[i]);
    if (readings.size() == profiles.size()) kept.push_back(&readings[i]);
  }
  GrowthInfo info;
  info.source = who.program + " pid " + std::to_string(who.pid) + " (watch)";
  info.pid = who.pid;
  info.process_start = who.process_start;
  info.go_version = who.go_version;
  info.labels = who.labels;
  SetReadings(kept, info);
  const GrowthReport report = AnalyzeGrowth(std::move(collector).Finish(), std::move(info));
  // The program's name is the target's: no '/', control or other odd byte.
  const std::string base = GrowthReportBaseName(who.program, who.pid);
  const GrowthRenderOptions render{.top = 10, .fail_above = std::nullopt};
  dir.WriteAtomically(base + ".txt", GrowthText(report, render));
  dir.WriteAtomically(base + ".json", GrowthJson(report, {.top = 0, .fail_above = std::nullopt}));
  dir.WriteAtomically(base + ".pb.gz", EncodeProfile(GrowthProfile(report)));
  return {base + ".txt", base + ".json", base + ".pb.gz"};
}

}  // namespace goheap2pprof
