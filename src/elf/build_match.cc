#include "elf/build_match.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "elf/load_bias.h"

namespace goheap2pprof {

namespace {

bool SameSegments(const ElfFile& a, const ElfFile& b) {
  std::vector<ElfSegment> la, lb;
  for (const ElfSegment& s : a.segments())
    if (IsLoadSegment(s)) la.push_back(s);
  for (const ElfSegment& s : b.segments())
    if (IsLoadSegment(s)) lb.push_back(s);
  if (la.size() != lb.size()) return false;
  for (size_t i = 0; i < la.size(); ++i) {
    const ElfSegment& x = la[i];
    const ElfSegment& y = lb[i];
    // p_filesz may differ: strip trims the zero bytes at the end of the last
    // data segment, which loads the same (the rest up to p_memsz is zeroed).
    if (x.offset != y.offset || x.vaddr != y.vaddr || x.memsz != y.memsz || x.flags != y.flags) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> CompareId(std::string_view what, const std::string& given,
                                     const std::string& running) {
  if (given == running) return std::nullopt;
  return std::string(what) + " " + (given.empty() ? "(none)" : given) + " vs running " +
         (running.empty() ? "(none)" : running);
}

}  // namespace

std::optional<std::string> BuildMismatch(const ElfFile& given, const ElfFile& running) {
  if (given.machine() != running.machine()) return std::string("different machine");
  if (given.type() != running.type()) return std::string("different ELF type");
  if (!SameSegments(given, running)) return std::string("different PT_LOAD segments");
  const std::string go_given = given.GoBuildId(), go_running = running.GoBuildId();
  const std::string gnu_given = given.GnuBuildId(), gnu_running = running.GnuBuildId();
  if (auto why = CompareId("Go build ID", go_given, go_running)) return why;
  if (auto why = CompareId("GNU build ID", gnu_given, gnu_running)) return why;
  if (!go_given.empty() || !gnu_given.empty()) return std::nullopt;
  // No build ID to trust: the bytes the kernel loads must be the same.
  for (const ElfSegment& seg : given.segments()) {
    if (!IsLoadSegment(seg)) continue;
    std::optional<Bytes> a = given.ReadVaddrToSegmentEnd(seg.vaddr);
    std::optional<Bytes> b = running.ReadVaddrToSegmentEnd(seg.vaddr);
    if (!a || !b) continue;  // no file bytes (all zero-filled) in one of them
    const Bytes& longer = a->size() > b->size() ? *a : *b;
    const size_t common = std::min(a->size(), b->size());
    bool same = std::memcmp(a->data(), b->data(), common) == 0;
    for (size_t i = common; same && i < longer.size(); ++i) same = longer[i] == 0;
    if (!same) return "no build IDs, and the segment at " + Hex(seg.vaddr) + " differs";
  }
  return std::nullopt;
}

}  // namespace goheap2pprof
