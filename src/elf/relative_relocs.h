// Link-time pointer values stored in an ELF file's data, for PIE as well as
// fixed-address executables. In a PIE a pointer in data may be left as 0 in
// the file and supplied at load time by an R_X86_64_RELATIVE /
// R_AARCH64_RELATIVE relocation (runtime value = load bias + addend), so the
// link-time value is the relocation's addend.
//
//   RelativeRelocs relocs(elf);
//   std::optional<uint64_t> p = relocs.ReadPointer(vaddr);  // link-time value
//   for (uint64_t where : relocs.PlacesWithAddend(value)) ...
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "elf/elf_file.h"

namespace goheap2pprof {

class RelativeRelocs {
 public:
  // Reads every SHT_RELA section's RELATIVE entries for the file's machine.
  // Malformed sections (size not a multiple of the entry size) are ignored
  // beyond their last whole entry. elf must outlive this object.
  explicit RelativeRelocs(const ElfFile& elf);

  size_t size() const { return addend_at_.size(); }

  // The link-time 8-byte pointer at vaddr: the RELATIVE relocation's addend
  // when one applies there (what the loader stores), else the file's word.
  // nullopt if vaddr is not file-backed and has no relocation.
  std::optional<uint64_t> ReadPointer(uint64_t vaddr) const;

  // Places (r_offset) of RELATIVE relocations whose addend is value, sorted.
  std::vector<uint64_t> PlacesWithAddend(uint64_t value) const;

 private:
  const ElfFile& elf_;
  std::unordered_map<uint64_t, uint64_t> addend_at_;
};

}  // namespace goheap2pprof
