// The service_name label of a discovered Go process, chosen by
// --service-name-from (auto, the default: Alloy's convention, i.e. the
// pyroscope.io/service_name annotation, else <namespace>/<container>, else
// the systemd unit, else the executable; exe: the executable's base name,
// comm, cgroup: the last element of its cgroup path, env:VAR: a variable of
// its environment),
// shared by serve's /targets and push's series so that one process has the
// same name in both.
//
//   std::string name = ServiceNameOf(process.facts, "auto");
#pragma once

#include <string>

#include "agent/discovery.h"

namespace goheap2pprof {

// Throws Error(kUsage) unless `from` is auto, exe, comm, cgroup or env:VAR.
void CheckServiceNameFrom(const std::string& from);

// Falls back to the executable's base name when the chosen source is empty.
std::string ServiceNameOf(const ProcessFacts& facts, const std::string& from);

// The last element of a path, without a " (deleted)" suffix.
std::string PathBaseName(std::string path);

}  // namespace goheap2pprof
