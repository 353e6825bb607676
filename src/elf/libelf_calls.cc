#include "elf/libelf_calls.h"

#include <libelf.h>

#include "base/error.h"

namespace goheap2pprof {

std::string ElfErrorText() { return elf_errmsg(-1) ? elf_errmsg(-1) : "unknown libelf error"; }

void InitLibelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  if (!ok) {
    throw Error(ErrorKind::kInternal,
                "libelf is older than the ELF version it was built for: ", ElfErrorText());
  }
}

}  // namespace goheap2pprof
