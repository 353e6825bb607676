#pragma once

#include <string>

namespace goheap2pprof {

// What every libelf user in this layer needs first: elf_version once per
// process (libelf refuses every call before it), and the text of libelf's
// last error for messages.
void InitLibelf();
std::string ElfErrorText();

}  // namespace goheap2pprof
