// Where a capture reads from. A CaptureSource gives the engine everything it
// needs about one target: its memory, its memory map, the executable its code
// comes from and who it is. The engine (app/capture.h) never opens a pid, a
// file or a core itself, so the same passes run on a live process, a qemu-user
// guest, a core file or test memory.
//
//   std::unique_ptr<CaptureSource> src = OpenProcessSource(pid, {.path = "app.debug"});
//   auto analysis = ExecutableAnalysis::Create(src->executable().elf);
//   CaptureResult r = Capture(*src, *analysis, {});
//
// Implementations: ProcessSource and QemuUserSource (app/process_source.h),
// MemorySource (app/memory_source.h: test memory, and the base of a core-file
// source: memory from the image, mappings from its notes, no liveness).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "elf/elf_file.h"
#include "pprof/heap_profile_builder.h"
#include "proc/memory_reader.h"
#include "proc/procfs.h"

namespace goheap2pprof {

// Who is captured. With pid, start_time identifies a live process for the
// whole capture (a reused pid has another start time).
struct ProcessIdentity {
  pid_t pid = 0;
  uint64_t start_time = 0;  // clock ticks after boot (/proc/<pid>/stat); 0 if unknown
  std::string comm;         // the kernel's short name, for messages and file names
};

// The executable of a target: the file its code, symbols and runtime tables
// are read from (`elf`, shared so that an ExecutableAnalysis can keep it), and
// the file the target really maps (`running`), which differs when --exe names
// an unstripped copy of a stripped production binary.
struct TargetExecutable {
  std::shared_ptr<const ElfFile> elf;
  FileIdentity running;  // the file as the target's maps show it
  // NT_GNU_BUILD_ID of the running file: what the target's own profile
  // reports for its executable mapping.
  std::string gnu_build_id;
  // The emulator's path when the target is a qemu-user process; else empty.
  std::string emulator;
  std::vector<std::string> notes;     // for -v: how the file was chosen/verified
  std::vector<std::string> warnings;  // e.g. a mismatch accepted with --force
};

// One target to capture. Implementations are cheap to query: everything but
// memory() and CheckSameProcess() is fixed when the source is opened.
class CaptureSource {
 public:
  virtual ~CaptureSource() = default;

  virtual const ProcessIdentity& identity() const = 0;
  // The target's memory map, as /proc/<pid>/maps would show it.
  virtual const std::vector<MapsEntry>& mappings() const = 0;
  virtual const TargetExecutable& executable() const = 0;
  // The mappings the target's own runtime/pprof would write into its profile
  // (parseProcSelfMaps: executable file mappings with their GNU build IDs).
  virtual std::vector<ProfileMapping> ProfileMappings() const = 0;
  // The target's memory, valid as long as the source. Reads of a live
  // process throw Error(kNoSuchProcess/kPermission) as MemoryReader says.
  virtual MemoryReader& memory() = 0;
  // Throws Error(kNoSuchProcess) if the target is no longer the process
  // identity() named when the source was opened (it exited, or its pid now
  // names another process). Sources that are snapshots never throw.
  virtual void CheckSameProcess() const = 0;
  // True when memory() can never change (a core file): a read that finds
  // the target mid-update cannot be retried into a consistent one.
  virtual bool is_snapshot() const { return false; }
};

// runtime/pprof's parseProcSelfMaps on maps: every executable mapping of a
// file, " (deleted)" removed, with the GNU build ID build_id_of returns for
// it (the running executable's is exe_build_id).
std::vector<ProfileMapping> ExecutableFileMappings(
    const std::vector<MapsEntry>& maps, const FileIdentity& exe, const std::string& exe_build_id,
    const std::function<std::string(const MapsEntry&)>& build_id_of);

}  // namespace goheap2pprof
