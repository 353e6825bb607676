// The target process as the pipeline sees it: identity (pid + start time),
// its executable (read through /proc/<pid>/exe), its memory map, the load
// bias of the executable and the mappings runtime/pprof would report.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "elf/elf_file.h"
#include "pprof/heap_profile_builder.h"
#include "proc/procfs.h"

namespace goheap2pprof {

// Checks that pid names a live user process and returns its stat. Throws
// kNoSuchProcess (absent, zombie), kNotGo (kernel thread) or kPermission.
ProcStat IdentifyProcess(pid_t pid);

// Throws kNoSuchProcess if pid now names another process (or none).
void CheckSameProcess(pid_t pid, const ProcStat& at_start);

// Opens /proc/<pid>/exe: this works when the file was replaced or deleted on
// disk, or lives in another mount namespace.
ElfFile OpenTargetExecutable(pid_t pid);

// Inode and path (as /proc shows it) of the executable behind /proc/<pid>/exe.
struct FileIdentity {
  uint64_t inode = 0;
  std::string path;  // readlink of /proc/<pid>/exe, maybe with " (deleted)"
};
FileIdentity ExecutableIdentity(pid_t pid);

// True if a maps line maps the file with this identity.
bool MapsEntryIsFile(const MapsEntry& e, const FileIdentity& id);

// Load bias = runtime address - link-time address, from the executable's
// file-backed mappings and its PT_LOAD program headers. 0 for ET_EXEC.
// Throws kMalformed if no mapping of the executable matches a segment.
uint64_t ComputeLoadBias(const ElfFile& exe, const std::vector<MapsEntry>& maps,
                         const FileIdentity& id);

// The file behind a maps entry, opened through /proc/<pid>/map_files (exactly
// what is mapped, even if deleted) or /proc/<pid>/root (the target's mount
// namespace); nullopt if neither can be opened as an ELF we read.
std::optional<ElfFile> OpenMappedFile(pid_t pid, const MapsEntry& e);

// The executable mappings runtime/pprof's parseProcSelfMaps keeps, with GNU
// build IDs read through OpenMappedFile; the executable's (exe_id) is
// exe_build_id.
std::vector<ProfileMapping> ProfileMappings(pid_t pid, const std::vector<MapsEntry>& maps,
                                            const FileIdentity& exe_id,
                                            const std::string& exe_build_id);

}  // namespace goheap2pprof
