// runtime.firstmoduledata read statically from an executable's file, for
// binaries without a symbol table. moduledata is the runtime's own map of the
// binary: where the pclntab, text, funcdata and each data section are.
//
// Found as the .go.module section (Go 1.26+), else as the one place in
// writable data holding a pointer to the pclntab (its first field), checked
// field by field against the pclntab header so a stray equal word cannot pass.
// The field offsets differ per layout family (see ModuleDataLayout).
//
//   RelativeRelocs relocs(elf);
//   std::optional<ModuleData> md = FindModuleData(elf, relocs, pclntab_vaddr, table).value();
//   if (md) use(md->text, md->gofunc);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "base/expected.h"
#include "elf/elf_file.h"
#include "elf/relative_relocs.h"
#include "gobin/buildinfo.h"

namespace goheap2pprof {

// moduledata field layouts (runtime/symtab.go), 64-bit.
enum class ModuleDataLayout {
  kGo118,  // 1.18-1.19: gofunc@304, textsectmap@312
  kGo120,  // 1.20-1.25: covctrs added; gofunc@320, textsectmap@328
  kGo126,  // 1.26: gofunc@320, epclntab@328, textsectmap@336
  kGo127,  // 1.27: typedesclen, itaboffset, itabsize added; gofunc@344, epclntab@352,
           // textsectmap@360
};

// "Go 1.20-1.25" etc., for messages.
std::string_view ModuleDataLayoutName(ModuleDataLayout layout);
// The layout family a Go version uses (versions after 1.27 are assumed to
// keep the 1.27 layout; validation rejects them otherwise).
ModuleDataLayout ModuleDataLayoutFor(const GoVersion& v);
// The one Go minor version a layout family implies, if it implies only one
// (1.26 and 1.27; the older families span several releases).
std::optional<GoVersion> VersionImpliedBy(ModuleDataLayout layout);

// The data sections whose ranges moduledata records, where package
// variables live.
enum class DataSection { kNoptrdata, kData, kBss, kNoptrbss };

// ".noptrbss" etc., for messages.
std::string_view DataSectionName(DataSection section);

// All link-time addresses.
struct ModuleData {
  uint64_t vaddr = 0;  // of runtime.firstmoduledata
  std::string source;  // ".go.module section" or "pclntab pointer at 0x..."
  ModuleDataLayout layout = ModuleDataLayout::kGo120;
  uint64_t pclntab = 0;   // pcHeader
  uint64_t epclntab = 0;  // 1.26+, else 0
  uint64_t minpc = 0, maxpc = 0;
  uint64_t text = 0, etext = 0;
  uint64_t noptrdata = 0, enoptrdata = 0;
  uint64_t data = 0, edata = 0;
  uint64_t bss = 0, ebss = 0;
  uint64_t noptrbss = 0, enoptrbss = 0;
  uint64_t gofunc = 0;

  bool InNoptrdata(uint64_t a) const { return a >= noptrdata && a < enoptrdata; }
  bool InData(uint64_t a) const { return a >= data && a < edata; }
  bool InBss(uint64_t a) const { return a >= bss && a < ebss; }
  bool InNoptrbss(uint64_t a) const { return a >= noptrbss && a < enoptrbss; }
  bool InAnyData(uint64_t a) const {
    return InNoptrdata(a) || InData(a) || InBss(a) || InNoptrbss(a);
  }
  bool In(DataSection section, uint64_t a) const {
    switch (section) {
      case DataSection::kNoptrdata:
        return InNoptrdata(a);
      case DataSection::kData:
        return InData(a);
      case DataSection::kBss:
        return InBss(a);
      case DataSection::kNoptrbss:
        return InNoptrbss(a);
    }
    return false;
  }
};

// Finds and validates moduledata for the pclntab at pclntab_vaddr (table: its
// file bytes, at least the 72-byte header). `version`, when known, restricts
// the layouts tried to its family. nullopt when no candidate validates; an
// Error(kUnsupported) when candidates of different addresses or layouts
// validate (ambiguous: we never guess).
Expected<std::optional<ModuleData>> FindModuleData(const ElfFile& elf, const RelativeRelocs& relocs,
                                                   uint64_t pclntab_vaddr, Bytes table,
                                                   std::optional<GoVersion> version);

// 8-byte aligned places in non-executable PT_LOAD file bytes that start like
// a 64-bit little-endian Go 1.18+ pcHeader (magic, zero padding, PC quantum
// 1/2/4, pointer size 8). At most max_results are returned.
std::vector<uint64_t> ScanForPclntabHeaders(const ElfFile& elf, size_t max_results = 64);

}  // namespace goheap2pprof
