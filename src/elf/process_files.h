// The ELF files of a live process, opened from outside it through /proc: its
// executable (/proc/<pid>/exe works when the file was replaced or deleted on
// disk, or lives in another mount namespace) and the files behind its
// mappings.
//
//   ElfFile exe = OpenProcessExecutable(pid);
//   std::optional<ElfFile> lib = OpenMappedFile(pid, maps_entry);
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "elf/elf_file.h"
#include "proc/procfs.h"

namespace goheap2pprof {

// Opens /proc/<pid>/exe, named in messages by its link target. Throws kNotGo
// (no executable: a kernel thread or an exiting process), kPermission, kIo,
// and as ElfFile::Open.
ElfFile OpenProcessExecutable(pid_t pid);

// The same, with failure as a value: nullopt and the reason in *why, for
// callers that can do without the file (--exe given for an unreadable one).
std::optional<ElfFile> TryOpenProcessExecutable(pid_t pid, std::string* why);

// The file behind a maps entry, opened through MappedFilePaths; nullopt if
// none of them opens as an ELF we read.
std::optional<ElfFile> OpenMappedFile(pid_t pid, const MapsEntry& e);

// The GNU build ID of the file behind a maps entry (empty if it has none or
// none of MappedFilePaths opens as an ELF we read). Remembered for the
// process's later calls by the file's identity (device, inode, size, mtime
// and ctime, which no write or utimes leaves as it was), once the file has
// not changed for a second, for the 64 files asked of last: serve's worker
// asks at every capture of every process for the same libc, which cost a
// repeated capture two loads of 1.9 MB files.
std::string MappedFileGnuBuildId(pid_t pid, const MapsEntry& e);

}  // namespace goheap2pprof
