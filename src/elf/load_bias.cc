#include "elf/load_bias.h"

#include <elf.h>

#include <algorithm>

#include "base/error.h"

namespace goheap2pprof {

namespace {
// Mappings start on pages; segments are mapped from their page-aligned start.
constexpr uint64_t kPageMask = ~uint64_t{0xfff};
}  // namespace

bool IsLoadSegment(const ElfSegment& s) { return s.type == PT_LOAD; }
bool IsExecutableSegment(const ElfSegment& s) { return (s.flags & PF_X) != 0; }
bool IsFixedAddress(const ElfFile& elf) { return elf.type() == ET_EXEC; }

std::string_view BuildModeName(const ElfFile& elf) {
  return IsFixedAddress(elf) ? "fixed address (ET_EXEC)" : "PIE (ET_DYN)";
}

const ElfSegment* LoadSegmentAtOffset(const ElfFile& elf, uint64_t page_offset) {
  for (const ElfSegment& seg : elf.segments()) {
    if (IsLoadSegment(seg) && (seg.offset & kPageMask) == page_offset) return &seg;
  }
  return nullptr;
}

uint64_t ComputeLoadBias(const ElfFile& elf, const std::vector<MapsEntry>& maps,
                         const FileIdentity& id) {
  for (const MapsEntry& e : maps) {
    if (!MapsEntryIsFile(e, id)) continue;
    const ElfSegment* seg = LoadSegmentAtOffset(elf, e.offset);
    if (!seg) continue;
    const uint64_t bias = e.start - (seg->vaddr & kPageMask);
    if (IsFixedAddress(elf) && bias != 0) {
      throw Error(ErrorKind::kMalformed, elf.name(),
                  " is a fixed-address executable but is "
                  "mapped at ",
                  Hex(e.start), " instead of ", Hex(seg->vaddr & kPageMask));
    }
    return bias;
  }
  throw Error(ErrorKind::kMalformed, "no mapping of ", elf.name(),
              " in /proc/maps matches one of its PT_LOAD segments; cannot compute the load bias");
}

std::optional<std::string> LayoutMismatch(const ElfFile& given, const std::vector<MapsEntry>& maps,
                                          const FileIdentity& running) {
  // The bias comes from a mapping that starts a segment, as ComputeLoadBias
  // takes it. Other mappings may be parts of a segment (ld.so's RELRO
  // mprotect splits one) on a page that two segments share, so each needs
  // only one containing segment that agrees.
  std::optional<uint64_t> bias;
  for (const MapsEntry& e : maps) {
    if (!MapsEntryIsFile(e, running)) continue;
    if (const ElfSegment* seg = LoadSegmentAtOffset(given, e.offset)) {
      bias = e.start - (seg->vaddr & kPageMask);
      break;
    }
  }
  if (!bias) return std::string("the process maps no part of it at a segment's start");
  for (const MapsEntry& e : maps) {
    if (!MapsEntryIsFile(e, running)) continue;
    bool in_segment = false, agrees = false;
    for (const ElfSegment& s : given.segments()) {
      if (!IsLoadSegment(s) || (s.offset & kPageMask) > e.offset ||
          e.offset >= s.offset + std::max<uint64_t>(s.filesz, 1)) {
        continue;
      }
      in_segment = true;
      agrees |= e.start - (e.offset - (s.offset & kPageMask)) - (s.vaddr & kPageMask) == *bias;
    }
    if (!in_segment) {
      return "its mapping at " + Hex(e.start) + " (offset " + Hex(e.offset) +
             ") is in no PT_LOAD segment of the file";
    }
    if (!agrees) {
      return "its mapping at " + Hex(e.start) + " does not fit load bias " + Hex(*bias);
    }
  }
  if (IsFixedAddress(given) && *bias != 0) {
    return "it is a fixed-address executable but is mapped " + Hex(*bias) + " away";
  }
  return std::nullopt;
}

}  // namespace goheap2pprof
