#include "app/core_source.h"

#include <utility>

namespace goheap2pprof {

std::unique_ptr<CoreSource> OpenCoreSource(const std::string& path,
                                           const ExecutableOptions& options) {
  std::unique_ptr<CoreSource> src(new CoreSource(CoreFile::Open(path)));
  const CoreFile& core = src->core_;
  src->description_ = DescribeCore(core);
  if (core.process()) {
    src->identity_ = {.pid = core.process()->pid, .start_time = 0, .comm = core.process()->comm};
  }
  src->maps_ = CoreMaps(core);
  src->placed_ = ChooseCoreExecutable(core, src->maps_, {options.path, options.force});
  const CoreExecutable& placed = src->placed_;
  TargetExecutable& exe = src->executable_;
  exe.elf = placed.elf;
  exe.running = {placed.inode, placed.mapped_path};
  exe.gnu_build_id = placed.gnu_build_id;
  exe.notes = placed.notes;
  exe.warnings = placed.warnings;
  src->memory_ =
      std::make_unique<CoreMemoryReader>(core, placed.elf.get(), placed.mapped_path, placed.bias);
  return src;
}

std::vector<ProfileMapping> CoreSource::ProfileMappings() const {
  return CoreProfileMappings(core_, maps_, placed_);
}

}  // namespace goheap2pprof
