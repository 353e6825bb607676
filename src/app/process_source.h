// Capture sources backed by a live process, read from outside through
// process_vm_readv and /proc/<pid>: the process itself (ProcessSource), or,
// when the pid is a qemu-user emulator (qemu-aarch64-static running an arm64
// Go program), its guest (QemuUserSource). qemu-user places 64-bit guests at
// guest address == host address, so the guest's memory is the emulator's at
// the same addresses; what differs is which file is the executable and which
// mappings the guest's own runtime/pprof would report.
//
//   ProcessIdentity id = IdentifyLiveProcess(pid);  // fails early on a bad pid
//   std::unique_ptr<CaptureSource> src = OpenProcessSource(id, {.path = "app.debug"});
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/source.h"
#include "elf/elf_file.h"
#include "proc/procfs.h"

namespace goheap2pprof {

struct ExecutableOptions {
  std::string path;    // --exe; empty: the running file itself
  bool force = false;  // --force: use a mismatching --exe with a warning
};

// The identity of a live user process. Throws kNoSuchProcess (absent,
// zombie), kNotGo (kernel thread) or kPermission.
ProcessIdentity IdentifyLiveProcess(pid_t pid);

// Opens the process `id` names: its maps, its executable (/proc/<pid>/exe,
// the --exe file checked against it, or a qemu-user emulator's guest
// program) and its memory. Throws kUsage when --exe does not match the
// running file (unless options.force), kNotGo when a qemu-user process runs
// no Go program we can find, kUnsupported when it maps several and --exe is
// needed to choose, and as IdentifyLiveProcess.
std::unique_ptr<CaptureSource> OpenProcessSource(const ProcessIdentity& id,
                                                 const ExecutableOptions& options);

// True for a qemu-user emulator's path ("/usr/bin/qemu-aarch64-static").
bool IsQemuUserPath(std::string_view path);

}  // namespace goheap2pprof
