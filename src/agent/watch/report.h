// `watch --report`: when a watched process ends (the OOM kill included) or
// the watch does, the growth report (pprof/growth_report.h) over the
// profiles this watch wrote of it, written beside them as
// <program>-<pid>-growth.txt, .json and .pb.gz.
//
//   std::vector<std::string> names = WriteWatchGrowthReport(dir, files, "server", 42);
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "agent/watch/files.h"

namespace goheap2pprof {

// Reads the profiles (names in dir; those rotated away since are left out)
// and writes the three files; returns their names. Throws Error(kUsage)
// when fewer than two profiles are left, and as reading and writing do.
std::vector<std::string> WriteWatchGrowthReport(const OutputDir& dir,
                                                const std::vector<std::string>& profiles,
                                                const std::string& program, pid_t pid);

}  // namespace goheap2pprof
