// A capture source over memory that is already at hand: test memory in unit
// tests and fuzzers, or the image of a core file. It never changes identity
// (CheckSameProcess does nothing), and its profile mappings come from its
// maps alone: executable file mappings, the executable's with the running
// file's GNU build ID, the others without one (nothing to open them by).
//
//   auto mem = std::make_unique<TestMemory>();
//   mem->Map(0x10000, bytes);
//   MemorySource src(std::move(mem), maps, std::move(exe), {.pid = 1, .comm = "test"});
//   CaptureResult r = Capture(src, *ExecutableAnalysis::Create(src.executable().elf), {});
//
// For a core file: memory() reads the PT_LOAD segments of the mapped core,
// maps come from NT_FILE (file mappings) and the PT_LOAD flags (perms),
// identity from NT_PRSTATUS/NT_PRPSINFO (start_time 0). NT_FILE has no
// inodes, and MapsEntryIsFile needs one: give every distinct path the same
// made-up non-zero inode in both the maps and TargetExecutable::running.
#pragma once

#include <memory>
#include <vector>

#include "app/source.h"

namespace goheap2pprof {

class MemorySource : public CaptureSource {
 public:
  MemorySource(std::unique_ptr<MemoryReader> memory, std::vector<MapsEntry> maps,
               TargetExecutable executable, ProcessIdentity identity);

  const ProcessIdentity& identity() const override { return identity_; }
  const std::vector<MapsEntry>& mappings() const override { return maps_; }
  const TargetExecutable& executable() const override { return executable_; }
  std::vector<ProfileMapping> ProfileMappings() const override;
  MemoryReader& memory() override { return *memory_; }
  void CheckSameProcess() const override {}

 private:
  std::unique_ptr<MemoryReader> memory_;
  std::vector<MapsEntry> maps_;
  TargetExecutable executable_;
  ProcessIdentity identity_;
};

}  // namespace goheap2pprof
