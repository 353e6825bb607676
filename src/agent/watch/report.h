// `watch --report`: when a watched process ends (the OOM kill included) or
// the watch does, the growth report (pprof/growth/report.h) over the
// profiles this watch wrote of it, written beside them as
// <program>-<pid>-growth.txt, .json and .pb.gz. Its header compares the
// profiled growth with what watch read beside each profile: the runtime's
// /gc/heap/live:bytes, the RSS and the cgroup's usage, and forecasts the
// cgroup's limit.
//
//   WatchReportSubject who{.program = "server", .pid = 42};
//   std::vector<std::string> names = WriteWatchGrowthReport(dir, files, readings, who);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/watch/files.h"

namespace goheap2pprof {

// What watch read beside one profile it wrote, at about its time.
struct WatchReading {
  int64_t time_nanos = 0;
  std::optional<int64_t> heap_live;  // /gc/heap/live:bytes (Go 1.21 and later)
  std::optional<int64_t> rss;        // VmRSS
  std::optional<int64_t> cgroup_usage, cgroup_limit;
};

// The process the report is of.
struct WatchReportSubject {
  std::string program;
  pid_t pid = 0;
  std::string process_start;  // UTC, ISO 8601, or ""
  std::string go_version;     // or ""
  // What the agent knows besides (pod, container, ...), shown in the header.
  std::vector<std::pair<std::string, std::string>> labels;
};

// Reads the profiles (names in dir; those rotated away since are left out,
// with their readings, which are parallel to them, or empty) and writes the
// three files; returns their names. Throws Error(kUsage) when fewer than
// two profiles are left, and as reading and writing do.
std::vector<std::string> WriteWatchGrowthReport(const OutputDir& dir,
                                                const std::vector<std::string>& profiles,
                                                const std::vector<WatchReading>& readings,
                                                const WatchReportSubject& subject);

}  // namespace goheap2pprof
