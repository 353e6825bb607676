// A stripped view of an unstripped Go program for the Go tier: the file's
// bytes with its .symtab section header retyped SHT_PROGBITS, so that
// ElfFile::HasSymtab is false and every lookup takes the stripped paths
// (moduledata, recovery from machine code) while the original file's symbol
// table still says where everything is. Unlike a -ldflags=-s twin, the code
// and data are the very same bytes.
//
//   ElfFile view = ElfFile::FromBytes(WithoutSymtab(elf), "view");
#pragma once

#include <elf.h>

#include <cstring>
#include <vector>

#include "elf/elf_file.h"

namespace goheap2pprof {
namespace testing_go {

// Bounds are the test's own files; a malformed one fails the test through
// an empty result.
inline std::vector<uint8_t> WithoutSymtab(const ElfFile& elf, size_t* retyped) {
  const Bytes all = elf.bytes();
  std::vector<uint8_t> bytes(all.begin(), all.end());
  *retyped = 0;
  if (bytes.size() < sizeof(Elf64_Ehdr)) return {};
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  for (uint64_t i = 0; i < eh.e_shnum; ++i) {
    const uint64_t off = eh.e_shoff + i * eh.e_shentsize;
    if (off + sizeof(Elf64_Shdr) > bytes.size()) return {};
    Elf64_Shdr sh;
    std::memcpy(&sh, bytes.data() + off, sizeof(sh));
    if (sh.sh_type != SHT_SYMTAB) continue;
    sh.sh_type = SHT_PROGBITS;
    std::memcpy(bytes.data() + off, &sh, sizeof(sh));
    ++*retyped;
  }
  return bytes;
}

}  // namespace testing_go
}  // namespace goheap2pprof
