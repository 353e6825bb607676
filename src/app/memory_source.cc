#include "app/memory_source.h"

#include <utility>

namespace goheap2pprof {

MemorySource::MemorySource(std::unique_ptr<MemoryReader> memory, std::vector<MapsEntry> maps,
                           TargetExecutable executable, ProcessIdentity identity)
    : memory_(std::move(memory)),
      maps_(std::move(maps)),
      executable_(std::move(executable)),
      identity_(std::move(identity)) {}

std::vector<ProfileMapping> MemorySource::ProfileMappings() const {
  // Only the executable's own file can be named here; other files' build IDs
  // would need the files themselves.
  return ExecutableFileMappings(maps_, executable_.running, executable_.gnu_build_id,
                                [](const MapsEntry&) { return std::string(); });
}

}  // namespace goheap2pprof
