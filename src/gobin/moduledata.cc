#include "gobin/moduledata.h"

#include <elf.h>

#include <algorithm>
#include <array>

#include "base/error.h"
#include "gobin/pclntab.h"

namespace goheap2pprof {

namespace {

// A Go program has one text section per 0x7c00000-ish bytes of code on
// arm64/ppc64 and exactly one on amd64; anything larger is not a moduledata.
constexpr uint64_t kMaxTextSections = 1024;
// Candidates (words equal to the pclntab address) examined at most; real
// binaries have one or two.
constexpr size_t kMaxCandidates = 4096;

// Offsets common to every layout (runtime/symtab.go, 64-bit).
constexpr uint64_t kOffPcHeader = 0;
constexpr uint64_t kOffFuncnametab = 8;
constexpr uint64_t kOffCutab = 32;
constexpr uint64_t kOffFiletab = 56;
constexpr uint64_t kOffPctab = 80;
constexpr uint64_t kOffPclntable = 104;
constexpr uint64_t kOffFtab = 128;
constexpr uint64_t kOffMinpc = 160;
constexpr uint64_t kOffMaxpc = 168;
constexpr uint64_t kOffText = 176;
constexpr uint64_t kOffEtext = 184;
constexpr uint64_t kOffNoptrdata =
    192;  // then enoptrdata, data, edata, bss, ebss, noptrbss, enoptrbss

struct LayoutOffsets {
  uint64_t gofunc;
  uint64_t epclntab;  // 0: not in this layout
  uint64_t textsectmap;
};

LayoutOffsets OffsetsOf(ModuleDataLayout layout) {
  switch (layout) {
    case ModuleDataLayout::kGo118:
      return {304, 0, 312};
    case ModuleDataLayout::kGo120:
      return {320, 0, 328};
    case ModuleDataLayout::kGo126:
      return {320, 328, 336};
    case ModuleDataLayout::kGo127:
      return {344, 352, 360};
  }
  return {0, 0, 0};
}

constexpr std::array<ModuleDataLayout, 4> kAllLayouts = {
    ModuleDataLayout::kGo118, ModuleDataLayout::kGo120, ModuleDataLayout::kGo126,
    ModuleDataLayout::kGo127};

bool IsExecutable(const ElfFile& elf, uint64_t vaddr) {
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type == PT_LOAD && (seg.flags & PF_X) != 0 && vaddr >= seg.vaddr &&
        vaddr - seg.vaddr < seg.memsz) {
      return true;
    }
  }
  return false;
}

bool FieldsAgree(const ElfFile& elf, const RelativeRelocs& relocs, const ModuleData& md,
                 uint64_t textsect_len, uint64_t textsect_cap, const ByteView& header);

// The moduledata at md_vaddr read with `layout`, if every field agrees with
// the pclntab header and with itself.
std::optional<ModuleData> Validate(const ElfFile& elf, const RelativeRelocs& relocs,
                                   uint64_t md_vaddr, ModuleDataLayout layout,
                                   uint64_t pclntab_vaddr, const ByteView& header) {
  const LayoutOffsets offs = OffsetsOf(layout);
  bool ok = true;
  auto word = [&](uint64_t off) -> uint64_t {
    std::optional<uint64_t> addr = CheckedAdd(md_vaddr, off);
    std::optional<uint64_t> v = addr ? relocs.ReadPointer(*addr) : std::nullopt;
    if (!v) ok = false;
    return v.value_or(0);
  };
  auto table_at = [&](uint64_t header_off) -> uint64_t {
    std::optional<uint64_t> a = CheckedAdd(pclntab_vaddr, header.U64(header_off));
    if (!a) ok = false;
    return a.value_or(0);
  };
  if (word(kOffPcHeader) != pclntab_vaddr) return std::nullopt;
  // The slices over the pclntab start where its header says.
  if (word(kOffFuncnametab) != table_at(32) || word(kOffCutab) != table_at(40) ||
      word(kOffFiletab) != table_at(48) || word(kOffPctab) != table_at(56) ||
      word(kOffPclntable) != table_at(64) || word(kOffFtab) != table_at(64)) {
    return std::nullopt;
  }
  const uint64_t nfunc = header.U64(8);
  if (nfunc == UINT64_MAX || word(kOffFtab + 8) != nfunc + 1) return std::nullopt;

  ModuleData md;
  md.vaddr = md_vaddr;
  md.layout = layout;
  md.pclntab = pclntab_vaddr;
  md.minpc = word(kOffMinpc);
  md.maxpc = word(kOffMaxpc);
  md.text = word(kOffText);
  md.etext = word(kOffEtext);
  uint64_t* ranges[] = {&md.noptrdata, &md.enoptrdata, &md.data,     &md.edata,
                        &md.bss,       &md.ebss,       &md.noptrbss, &md.enoptrbss};
  for (size_t i = 0; i < 8; ++i) *ranges[i] = word(kOffNoptrdata + 8 * i);
  md.gofunc = word(offs.gofunc);
  if (offs.epclntab != 0) md.epclntab = word(offs.epclntab);
  const uint64_t textsect_len = word(offs.textsectmap + 8);
  const uint64_t textsect_cap = word(offs.textsectmap + 16);
  if (!ok) return std::nullopt;
  if (!FieldsAgree(elf, relocs, md, textsect_len, textsect_cap, header)) return std::nullopt;
  return md;
}

// Whether the fields read into `md` describe a module: text that is code,
// ordered ranges, a sane text section count, funcdata in the file, and the
// header's text start as its layout stores it.
bool FieldsAgree(const ElfFile& elf, const RelativeRelocs& relocs, const ModuleData& md,
                 uint64_t textsect_len, uint64_t textsect_cap, const ByteView& header) {
  const LayoutOffsets offs = OffsetsOf(md.layout);
  const uint64_t pclntab_vaddr = md.pclntab;
  if (md.text == 0 || md.etext <= md.text || !IsExecutable(elf, md.text)) return false;
  if (md.minpc < md.text || md.maxpc <= md.minpc || md.maxpc > md.etext) return false;
  if (md.enoptrdata < md.noptrdata || md.edata < md.data || md.ebss < md.bss ||
      md.enoptrbss < md.noptrbss) {
    return false;
  }
  if (textsect_len == 0 || textsect_len > kMaxTextSections || textsect_cap < textsect_len) {
    return false;
  }
  // Funcdata must be file bytes; from 1.26 on they are inside the pclntab.
  if (md.gofunc == 0 || !elf.ReadVaddr(md.gofunc, 1)) return false;
  if (offs.epclntab != 0 &&
      (md.epclntab <= pclntab_vaddr || md.gofunc < pclntab_vaddr || md.gofunc >= md.epclntab)) {
    return false;
  }
  // Until 1.25 the header stores text start; from 1.26 on it is always 0.
  const uint64_t header_text = relocs.ReadPointer(pclntab_vaddr + 24).value_or(header.U64(24));
  const bool new_layout =
      md.layout == ModuleDataLayout::kGo126 || md.layout == ModuleDataLayout::kGo127;
  return new_layout ? header_text == 0 : header_text == md.text;
}

}  // namespace

std::string_view DataSectionName(DataSection section) {
  switch (section) {
    case DataSection::kNoptrdata:
      return ".noptrdata";
    case DataSection::kData:
      return ".data";
    case DataSection::kBss:
      return ".bss";
    case DataSection::kNoptrbss:
      return ".noptrbss";
  }
  return "?";
}

std::string_view ModuleDataLayoutName(ModuleDataLayout layout) {
  switch (layout) {
    case ModuleDataLayout::kGo118:
      return "Go 1.18-1.19";
    case ModuleDataLayout::kGo120:
      return "Go 1.20-1.25";
    case ModuleDataLayout::kGo126:
      return "Go 1.26";
    case ModuleDataLayout::kGo127:
      return "Go 1.27";
  }
  return "?";
}

ModuleDataLayout ModuleDataLayoutFor(const GoVersion& v) {
  if (v.major == 1 && v.minor <= 19) return ModuleDataLayout::kGo118;
  if (v.major == 1 && v.minor <= 25) return ModuleDataLayout::kGo120;
  if (v.major == 1 && v.minor == 26) return ModuleDataLayout::kGo126;
  return ModuleDataLayout::kGo127;
}

std::optional<GoVersion> VersionImpliedBy(ModuleDataLayout layout) {
  switch (layout) {
    case ModuleDataLayout::kGo126:
      return GoVersion{1, 26, 0};
    case ModuleDataLayout::kGo127:
      return GoVersion{1, 27, 0};
    default:
      return std::nullopt;
  }
}

namespace {

// Candidate places: the .go.module section (1.26+ puts exactly
// runtime.firstmoduledata there), else every aligned word of writable file
// data equal to the pclntab address, and every RELATIVE relocation that
// would store it (a PIE may leave the word 0 in the file). At most
// kMaxCandidates; each with its source, or "" for a pointer to the pclntab.
std::vector<std::pair<uint64_t, std::string>> ModuleDataCandidates(const ElfFile& elf,
                                                                   const RelativeRelocs& relocs,
                                                                   uint64_t pclntab_vaddr) {
  std::vector<std::pair<uint64_t, std::string>> candidates;
  if (const ElfSection* s = elf.FindSection(".go.module"); s != nullptr && s->type != SHT_NOBITS) {
    candidates.emplace_back(s->addr, ".go.module section");
  } else {
    for (const ElfSegment& seg : elf.segments()) {
      if (seg.type != PT_LOAD || (seg.flags & PF_W) == 0) continue;
      std::optional<Bytes> bytes = elf.ReadVaddr(seg.vaddr, std::min(seg.filesz, seg.memsz));
      if (!bytes) continue;
      const uint64_t skip = (8 - seg.vaddr % 8) % 8;
      for (uint64_t off = skip; off + 8 <= bytes->size() && candidates.size() < kMaxCandidates;
           off += 8) {
        if (LoadU64(bytes->data() + off) == pclntab_vaddr) {
          candidates.emplace_back(seg.vaddr + off, "");
        }
      }
    }
    for (uint64_t place : relocs.PlacesWithAddend(pclntab_vaddr)) {
      if (candidates.size() >= kMaxCandidates) break;
      candidates.emplace_back(place, "");
    }
  }
  return candidates;
}

}  // namespace

Expected<std::optional<ModuleData>> FindModuleData(const ElfFile& elf, const RelativeRelocs& relocs,
                                                   uint64_t pclntab_vaddr, Bytes table,
                                                   std::optional<GoVersion> version) {
  const std::optional<ModuleData> none;
  ByteView header(table, "pclntab header");
  if (!header.Has(0, kPcHeaderSize)) return none;
  const uint32_t magic = header.U32(0);
  std::vector<ModuleDataLayout> layouts;
  if (version) {
    layouts.push_back(ModuleDataLayoutFor(*version));
  } else {
    for (ModuleDataLayout l : kAllLayouts) layouts.push_back(l);
  }
  // The pclntab magic separates 1.18-1.19 from the rest.
  std::erase_if(layouts, [&](ModuleDataLayout l) {
    return (magic == kPclntabMagicGo118) != (l == ModuleDataLayout::kGo118);
  });
  if (magic != kPclntabMagicGo118 && magic != kPclntabMagicGo120) return none;

  const std::vector<std::pair<uint64_t, std::string>> candidates =
      ModuleDataCandidates(elf, relocs, pclntab_vaddr);

  std::optional<ModuleData> found;
  for (const auto& [vaddr, source] : candidates) {
    for (ModuleDataLayout layout : layouts) {
      std::optional<ModuleData> md = Validate(elf, relocs, vaddr, layout, pclntab_vaddr, header);
      if (!md) continue;
      if (found && (found->vaddr != md->vaddr || found->layout != md->layout)) {
        return Error(ErrorKind::kUnsupported, elf.name(),
                     ": two places validate as the Go "
                     "moduledata for the pclntab at ",
                     Hex(pclntab_vaddr), ": ", Hex(found->vaddr), " (",
                     ModuleDataLayoutName(found->layout), " layout) and ", Hex(md->vaddr), " (",
                     ModuleDataLayoutName(md->layout), " layout); refusing to guess")
            .WithHint(
                "capture from an unstripped build of the same program (built without "
                "-ldflags=-s)");
      }
      md->source = source.empty() ? "pclntab pointer at " + Hex(vaddr) : source;
      found = md;
    }
  }
  return found;
}

std::vector<uint64_t> ScanForPclntabHeaders(const ElfFile& elf, size_t max_results) {
  std::vector<uint64_t> found;
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type != PT_LOAD || (seg.flags & PF_X) != 0) continue;
    std::optional<Bytes> bytes = elf.ReadVaddr(seg.vaddr, std::min(seg.filesz, seg.memsz));
    if (!bytes) continue;
    const uint8_t* p = bytes->data();
    const uint64_t skip = (8 - seg.vaddr % 8) % 8;
    for (uint64_t off = skip; off + kPcHeaderSize <= bytes->size(); off += 8) {
      uint32_t magic = LoadU32(p + off);
      if ((magic != kPclntabMagicGo118 && magic != kPclntabMagicGo120) || p[off + 4] != 0 ||
          p[off + 5] != 0 || (p[off + 6] != 1 && p[off + 6] != 2 && p[off + 6] != 4) ||
          p[off + 7] != 8) {
        continue;
      }
      found.push_back(seg.vaddr + off);
      if (found.size() >= max_results) return found;
    }
  }
  return found;
}

}  // namespace goheap2pprof
