#include "elf/relative_relocs.h"

#include <elf.h>

#include <algorithm>

namespace goheap2pprof {

namespace {

constexpr uint64_t kRelaSize = 24;  // Elf64_Rela: r_offset, r_info, r_addend

}  // namespace

RelativeRelocs::RelativeRelocs(const ElfFile& elf) : elf_(elf) {
  const uint32_t relative = elf.machine() == EM_AARCH64 ? R_AARCH64_RELATIVE : R_X86_64_RELATIVE;
  for (const ElfSection& s : elf.sections()) {
    if (s.type != SHT_RELA) continue;
    std::optional<Bytes> data = elf.SectionData(s.name);
    if (!data) continue;
    ByteView view(*data, s.name);
    // Bounded by the section's size.
    for (uint64_t off = 0; view.Has(off, kRelaSize); off += kRelaSize) {
      if (ELF64_R_TYPE(view.U64(off + 8)) != relative) continue;
      addend_at_[view.U64(off)] = view.U64(off + 16);
    }
  }
}

std::optional<uint64_t> RelativeRelocs::ReadPointer(uint64_t vaddr) const {
  if (auto it = addend_at_.find(vaddr); it != addend_at_.end()) return it->second;
  std::optional<Bytes> word = elf_.ReadVaddr(vaddr, 8);
  if (!word) return std::nullopt;
  return LoadU64(word->data());
}

std::vector<uint64_t> RelativeRelocs::PlacesWithAddend(uint64_t value) const {
  std::vector<uint64_t> places;
  for (const auto& [place, addend] : addend_at_) {
    if (addend == value) places.push_back(place);
  }
  std::sort(places.begin(), places.end());
  return places;
}

}  // namespace goheap2pprof
