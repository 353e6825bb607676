#include "agent/watch/report.h"

#include <filesystem>

#include "app/growth_input.h"
#include "pprof/growth_report.h"
#include "pprof/output.h"

namespace goheap2pprof {

std::vector<std::string> WriteWatchGrowthReport(const OutputDir& dir,
                                                const std::vector<std::string>& profiles,
                                                const std::string& program, pid_t pid) {
  GrowthCollector collector;
  for (const std::string& name : profiles) {
    const std::string path = dir.path() + "/" + name;
    // --max-files may have deleted the oldest.
    if (!std::filesystem::exists(path)) continue;
    collector.Add(ReadProfileFile(path), name);
  }
  GrowthInfo info;
  info.source = program + " pid " + std::to_string(pid) + " (watch)";
  info.pid = pid;
  const GrowthReport report = AnalyzeGrowth(std::move(collector).Finish(), std::move(info));
  std::string base = program + "-" + std::to_string(pid) + "-growth";
  for (char& c : base) {
    if (c == '/' || c == '\0') c = '_';
  }
  const GrowthRenderOptions render{.top = 10, .fail_above = std::nullopt};
  dir.WriteAtomically(base + ".txt", GrowthText(report, render));
  dir.WriteAtomically(base + ".json", GrowthJson(report, {.top = 0, .fail_above = std::nullopt}));
  dir.WriteAtomically(base + ".pb.gz", EncodeProfile(GrowthProfile(report)));
  return {base + ".txt", base + ".json", base + ".pb.gz"};
}

}  // namespace goheap2pprof
