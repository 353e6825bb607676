// The dead process of a core file as the capture sees it: its memory map
// rebuilt from the PT_LOAD flags and NT_FILE (what /proc/<pid>/maps showed),
// its executable (--exe, or the NT_FILE path of the mapping that holds
// AT_ENTRY) checked against the ELF header page the core holds, the load
// bias, and the mappings its own runtime/pprof would have written.
//
//   CoreFile core = CoreFile::Open("core");
//   std::vector<MapsEntry> maps = CoreMaps(core);
//   CoreExecutable exe = ChooseCoreExecutable(core, maps, {.path = "", .force = false});
//   CoreMemoryReader mem(core, exe.elf.get(), exe.mapped_path, exe.bias);
//   // (maps is not const: a core without NT_FILE gets the --exe file's names)
//   auto mappings = CoreProfileMappings(core, maps, exe);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "elf/core_file.h"
#include "elf/elf_file.h"
#include "pprof/heap_profile_builder.h"
#include "proc/procfs.h"

namespace goheap2pprof {

struct CoreExecutableOptions {
  std::string path;    // --exe; empty: the NT_FILE path of the mapping holding AT_ENTRY
  bool force = false;  // --force: use a file that does not match, with a warning
};

struct CoreExecutable {
  std::shared_ptr<const ElfFile> elf;  // symbols, Go version and pclntab come from here
  // The path the process mapped its executable from (NT_FILE), as maps and
  // the process's own profile name it; empty for a core without NT_FILE.
  std::string mapped_path;
  // The inode CoreMaps gives the executable's mappings (a core records no
  // inodes; the number only tells files apart within one core).
  uint64_t inode = 0;
  // GNU build ID of the file the process ran (from the dumped header page,
  // else the file's): what its own profile reports for the executable.
  std::string gnu_build_id;
  uint64_t bias = 0;                  // AT_ENTRY - e_entry
  std::vector<std::string> notes;     // for -v: how the file was chosen and checked
  std::vector<std::string> warnings;  // e.g. a mismatch accepted with --force
};

// One maps line per PT_LOAD: perms from p_flags, file, offset and a
// per-path inode from NT_FILE, "[vdso]" at AT_SYSINFO_EHDR and "[vsyscall]"
// at its fixed x86-64 address, as the kernel named them in maps.
std::vector<MapsEntry> CoreMaps(const CoreFile& core);

// Chooses, opens and checks the executable. Throws kUsage when there is no
// way to know it (no NT_FILE and no --exe), when the file is missing, or when
// it does not match the core (build IDs, PT_LOADs, mappings) unless
// options.force; kMalformed when the core has no AT_ENTRY or libdwfl places
// the executable at another load bias. For a core without NT_FILE (only with
// --exe), names in `maps` the mappings where the file's PT_LOADs land.
CoreExecutable ChooseCoreExecutable(const CoreFile& core, std::vector<MapsEntry>& maps,
                                    const CoreExecutableOptions& options);

// Why `file` is not the executable whose header page the core dumped, or
// nullopt if it is (or nothing was dumped to compare with). Exposed for tests.
std::optional<std::string> DumpedHeaderMismatch(const DumpedElfHeader& dumped, const ElfFile& file);

// runtime/pprof's parseProcSelfMaps over CoreMaps: executable mappings with
// a name; build IDs from the dumped header pages (exactly what was mapped),
// else from the file at that path, as the runtime reads them.
std::vector<ProfileMapping> CoreProfileMappings(const CoreFile& core,
                                                const std::vector<MapsEntry>& maps,
                                                const CoreExecutable& exe);

// For -v: the producer, the process (pid, command, threads) and the signal.
std::vector<std::string> DescribeCore(const CoreFile& core);

}  // namespace goheap2pprof
