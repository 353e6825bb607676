// Heap profiles from files for the growth report: the files and directories
// named on the command line (watch's or serve's output, or the runtime's own
// /debug/pprof/heap files), read into a GrowthCollector.
//
//   GrowthCollector c;
//   std::vector<std::string> notes = AddProfileFiles(c, {"profiles/"});
//   GrowthData d = std::move(c).Finish();
#pragma once

#include <string>
#include <vector>

#include "pprof/growth/sites.h"

namespace goheap2pprof {

// The files the arguments name: a file as given; a directory's regular files
// whose names end in .pb.gz, .pb, .pprof or .prof, or begin with "heap"
// (not its subdirectories), sorted by name. Throws Error(kUsage) for a path
// that does not exist and when there are more than 100000 files.
std::vector<std::string> GrowthInputFiles(const std::vector<std::string>& args);

// A profile file's serialized bytes, unpacked when gzipped. Throws
// Error(kIo) when it cannot be read, Error(kMalformed) naming it when its
// gzip is damaged or it is larger than 1 GiB.
std::string ReadProfileBytes(const std::string& path);

// Adds every file of GrowthInputFiles(args) to the collector, except growth
// profiles (which have an inuse_space_per_hour sample type: the report's
// own output beside the snapshots); returns a note for each file left out.
std::vector<std::string> AddProfileFiles(GrowthCollector& collector,
                                         const std::vector<std::string>& args);

}  // namespace goheap2pprof
