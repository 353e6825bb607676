// Bytes of hand-made ELF images for the tests (elf_file_test, the synthetic
// cores, the hand-made Go executables): a value put at an offset, the buffer
// grown to hold it; an ELF note; and the ELF64 header's fields that every
// such image shares, the caller setting the program and section headers.
//
//   std::vector<uint8_t> b;
//   Elf64_Ehdr eh = testing_elf::Elf64Header(ET_EXEC, EM_X86_64);
//   eh.e_phoff = sizeof(Elf64_Ehdr);
//   testing_elf::PutAt(b, 0, eh);
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace goheap2pprof::testing_elf {

template <typename T>
inline void PutAt(std::vector<uint8_t>& b, size_t off, const T& v) {
  if (b.size() < off + sizeof(T)) b.resize(off + sizeof(T));
  std::memcpy(&b[off], &v, sizeof(T));
}

// A note (namesz, descsz, type, the owner NUL-terminated, the descriptor),
// each part padded to 4 bytes, at the end of b.
inline void AppendNote(std::vector<uint8_t>& b, std::string_view owner, uint32_t type,
                       std::span<const uint8_t> desc) {
  auto pad = [&] { b.resize((b.size() + 3) / 4 * 4, 0); };
  const uint32_t header[3] = {static_cast<uint32_t>(owner.size() + 1),
                              static_cast<uint32_t>(desc.size()), type};
  PutAt(b, b.size(), header);
  b.insert(b.end(), owner.begin(), owner.end());
  b.push_back(0);
  pad();
  b.insert(b.end(), desc.begin(), desc.end());
  pad();
}
inline void AppendNote(std::vector<uint8_t>& b, std::string_view owner, uint32_t type,
                       std::string_view desc) {
  AppendNote(b, owner, type, {reinterpret_cast<const uint8_t*>(desc.data()), desc.size()});
}

// An ELF64 little-endian header of this type and machine, its own size set;
// no program or section headers until the caller gives them.
inline Elf64_Ehdr Elf64Header(uint16_t type, uint16_t machine) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = type;
  eh.e_machine = machine;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  return eh;
}

}  // namespace goheap2pprof::testing_elf
