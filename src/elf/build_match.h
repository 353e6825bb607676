// Whether two ELF files are the same build: what makes an --exe file (say,
// the unstripped original of a stripped production binary) safe to read in
// place of the file a process runs.
//
//   if (std::optional<std::string> why = BuildMismatch(given, running)) refuse(*why);
#pragma once

#include <optional>
#include <string>

#include "elf/elf_file.h"

namespace goheap2pprof {

// Why `given` is not the same build as `running`, or nullopt if it is: the
// PT_LOAD headers must be equal and the Go and GNU build IDs (each when
// either file has one) too; with no build ID at all, the loadable bytes.
// `strip` and `objcopy --strip-*` keep all of these, so a stripped binary
// matches the unstripped file it was made from.
std::optional<std::string> BuildMismatch(const ElfFile& given, const ElfFile& running);

}  // namespace goheap2pprof
