// Which executable file describes the target's code, and which file the
// target really maps. Normally both are /proc/<pid>/exe. With --exe the code
// is read from another copy (e.g. the unstripped build a production binary
// was `strip`ped from), which must match the running file. When the pid is a
// qemu-user emulator (qemu-aarch64-static running an arm64 Go program), the
// running file is the guest program found in the emulator's maps: qemu-user
// places 64-bit guests at guest address == host address, so the rest of the
// pipeline reads the emulator's memory at the guest's addresses unchanged.
//
//   TargetExecutable t = OpenExecutable(pid, ReadProcMaps(pid), {.path = "app.debug"});
//   uint64_t bias = ComputeLoadBias(t.elf, maps, t.running);
//   auto mappings = TargetProfileMappings(pid, maps, t);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/target.h"
#include "elf/elf_file.h"
#include "gobin/buildinfo.h"
#include "pprof/heap_profile_builder.h"
#include "proc/procfs.h"

namespace goheap2pprof {

struct ExecutableOptions {
  std::string path;    // --exe; empty: the running file itself
  bool force = false;  // --force: use a mismatching --exe with a warning
  // --assume-go-layout: the bucket layout of a Go newer than every tested
  // one, when no DWARF proves it (runtime/bucket_layout.h).
  std::optional<GoVersion> assume_go_layout;
};

struct TargetExecutable {
  ElfFile elf;           // symbols, Go version and pclntab are read from here
  FileIdentity running;  // the file as the target's maps show it
  // NT_GNU_BUILD_ID of the running file: what the target's own profile
  // reports for its executable mapping.
  std::string gnu_build_id;
  // The emulator's path when the target is a qemu-user process; else empty.
  std::string emulator;
  std::vector<std::string> notes;     // for -v: how the file was chosen/verified
  std::vector<std::string> warnings;  // e.g. a mismatch accepted with --force
};

// Picks and opens the executable as described above. Throws kUsage when
// --exe does not match the running file (unless options.force), kNotGo when
// a qemu-user process runs no Go program we can find, kUnsupported when it
// maps several and --exe is needed to choose.
TargetExecutable OpenExecutable(pid_t pid, const std::vector<MapsEntry>& maps,
                                const ExecutableOptions& options);

// The mappings the target's own runtime/pprof would write. For a qemu-user
// guest these are what qemu shows the guest as /proc/self/maps: only guest
// pages, and executable only where the guest mapped them so (the host sees
// guest code as r--p because qemu translates it); see the .cc.
std::vector<ProfileMapping> TargetProfileMappings(pid_t pid, const std::vector<MapsEntry>& maps,
                                                  const TargetExecutable& target);

// True for a qemu-user emulator's path ("/usr/bin/qemu-aarch64-static").
bool IsQemuUserPath(std::string_view path);

// Why `given` is not the same build as `running`, or nullopt if it is: the
// PT_LOAD headers must be equal and the Go and GNU build IDs (each when
// either file has one) too; with no build ID at all, the loadable bytes.
// `strip` and `objcopy --strip-*` keep all of these, so a stripped binary
// matches the unstripped file it was made from.
std::optional<std::string> BuildMismatch(const ElfFile& given, const ElfFile& running);

// Why the file-backed mappings of `running` in maps cannot come from `given`
// (a mapping's offset is in no PT_LOAD, or the load bias differs between
// mappings), or nullopt if they can. For when the running file can't be read.
std::optional<std::string> LayoutMismatch(const ElfFile& given, const std::vector<MapsEntry>& maps,
                                          const FileIdentity& running);

}  // namespace goheap2pprof
