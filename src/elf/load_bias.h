// Where an ELF executable sits in a process: the PT_LOAD segments behind the
// mappings /proc/<pid>/maps shows for it, and the load bias (runtime address
// - link-time address; 0 for a fixed-address ET_EXEC, the PIE base for
// ET_DYN) that turns the file's addresses into the process's.
//
//   uint64_t bias = ComputeLoadBias(elf, ReadProcMaps(pid), ExecutableIdentity(pid));
//   uint64_t mbuckets = link_time_addr + bias;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elf/elf_file.h"
#include "proc/procfs.h"

namespace goheap2pprof {

bool IsLoadSegment(const ElfSegment& s);
bool IsExecutableSegment(const ElfSegment& s);  // PF_X
bool IsFixedAddress(const ElfFile& elf);        // ET_EXEC: never relocated
// "PIE (ET_DYN)" or "fixed address (ET_EXEC)", for messages.
std::string_view BuildModeName(const ElfFile& elf);

// The PT_LOAD whose first page is mapped at file offset `page_offset` (a
// mapping's offset in maps), or nullptr.
const ElfSegment* LoadSegmentAtOffset(const ElfFile& elf, uint64_t page_offset);

// The load bias of elf in a process, from the first mapping of the file `id`
// that starts a PT_LOAD segment. Throws kMalformed if no mapping of it
// matches a segment, or if a fixed-address executable is mapped elsewhere.
uint64_t ComputeLoadBias(const ElfFile& elf, const std::vector<MapsEntry>& maps,
                         const FileIdentity& id);

// Why the file-backed mappings of `running` in maps cannot come from `given`
// (a mapping's offset is in no PT_LOAD, or the load bias differs between
// mappings), or nullopt if they can. For checking a file against a process
// whose own executable cannot be read.
std::optional<std::string> LayoutMismatch(const ElfFile& given, const std::vector<MapsEntry>& maps,
                                          const FileIdentity& running);

}  // namespace goheap2pprof
