// Fuzz target: the text parsers of `watch` (/proc/<pid>/cgroup, mountinfo,
// the zombie's stat line, flat-keyed cgroup files, limits, cgroup paths).
// The same bytes go to each; none may throw or crash.
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/watch/process.h"
#include "proc/cgroup.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const ProcCgroupLine& line : ParseProcCgroup(text)) {
    if (line.path.empty() || line.path[0] != '/') __builtin_trap();  // promised absolute
    for (const CgroupMount& m : ParseCgroupMounts(text)) {
      std::optional<std::string> rest = PathBelowMountRoot(line.path, m.root);
      if (rest && rest->find("/../") != std::string::npos) __builtin_trap();
    }
  }
  (void)ParseZombieStat(text);
  (void)FlatKeyedValue(text, "oom_kill");
  (void)ParseMemoryLimit(text);
  return 0;
}
