// A core file as a capture source (goheap2pprof --core): the memory of the
// dead process from the core's segments, its maps rebuilt from the segment
// flags and NT_FILE, its executable chosen and proven by app/core_target.h,
// and the identity NT_PRPSINFO gives. A core is a snapshot: it never changes
// identity, so CheckSameProcess does nothing.
//
//   std::unique_ptr<CoreSource> src = OpenCoreSource("core.1234", {.path = "", .force = false});
//   for (const std::string& line : src->description()) std::cerr << line << '\n';
//   auto analysis = ExecutableAnalysis::Create(src->executable().elf);
//   CaptureResult r = Capture(*src, *analysis, {}, report);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/core_target.h"
#include "app/process_source.h"
#include "app/source.h"
#include "elf/core_file.h"

namespace goheap2pprof {

class CoreSource : public CaptureSource {
 public:
  const ProcessIdentity& identity() const override { return identity_; }
  const std::vector<MapsEntry>& mappings() const override { return maps_; }
  const TargetExecutable& executable() const override { return executable_; }
  std::vector<ProfileMapping> ProfileMappings() const override;
  MemoryReader& memory() override { return *memory_; }
  bool is_snapshot() const override { return true; }
  void CheckSameProcess() const override {}

  const CoreFile& core() const { return core_; }
  // For -v: who wrote the core, the process and its signal (DescribeCore).
  const std::vector<std::string>& description() const { return description_; }

 private:
  friend std::unique_ptr<CoreSource> OpenCoreSource(const std::string& path,
                                                    const ExecutableOptions& options);
  explicit CoreSource(CoreFile core) : core_(std::move(core)) {}

  CoreFile core_;
  std::vector<MapsEntry> maps_;
  CoreExecutable placed_;
  TargetExecutable executable_;
  ProcessIdentity identity_;
  std::unique_ptr<CoreMemoryReader> memory_;
  std::vector<std::string> description_;
};

// Opens the core and places its executable (options.path: --exe; force:
// --force). Throws Error as CoreFile::Open and ChooseCoreExecutable.
std::unique_ptr<CoreSource> OpenCoreSource(const std::string& path,
                                           const ExecutableOptions& options);

}  // namespace goheap2pprof
