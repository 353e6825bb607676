// Fuzz target: ELF parsing, symbol lookup, notes, vaddr reads, DWARF types,
// and the Go layer on top (build info, pclntab location, runtime variables,
// the heap-bucket layout check).
#include <cstdint>
#include <optional>
#include <vector>

#include "base/error.h"
#include "elf/dwarf_types.h"
#include "elf/elf_file.h"
#include "gobin/go_binary.h"
#include "gobin/runtime_variables.h"
#include "runtime/bucket_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  try {
    ElfFile elf = ElfFile::FromBytes(std::vector<uint8_t>(data, data + size), "fuzz");
    for (const char* name : {"main", "runtime.mbuckets", "runtime.text", "_start"}) {
      if (auto sym = elf.FindSymbol(name)) (void)elf.ReadVaddr(sym->value, 16);
    }
    (void)elf.GnuBuildId();
    (void)elf.GoBuildId();
    (void)elf.SectionData(".gopclntab");
    (void)elf.ReadVaddr(elf.entry(), 64);
    GoBinary bin(elf);
    (void)bin.version();
    try {
      (void)bin.LocatePclntab();
    } catch (const Error&) {
    }
    try {
      // The struct and variable of the tiny-c-dwarf seed.
      if (std::optional<DwarfTypes> dwarf = DwarfTypes::Open(elf)) {
        (void)dwarf->FindStruct("seed");
        (void)dwarf->FindVariableStruct("marker_struct");
        (void)dwarf->FindStruct("absent");  // indexes every unit
      }
    } catch (const Error&) {
    }
    try {
      // Reads the DWARF, if any, for a newer Go (the path that trusts it most).
      (void)CheckBucketLayout(elf, TraitsForVersion({1, 29, 0}), GoVersion{1, 27, 0});
    } catch (const Error&) {
    }
    try {
      (void)LocateRuntimeVariables(bin, RuntimeVariableLayout{});
    } catch (const Error&) {
    }
    try {
      Pclntab tab = bin.OpenPclntab(0);
      for (uint32_t i = 0; i < tab.nfunc() && i < 32; ++i) {
        FuncRef f = tab.FuncAt(i);
        (void)tab.FuncName(f);
        (void)tab.FrameAt(f, f.entry);
      }
    } catch (const Error&) {
    }
  } catch (const Error&) {
  }
  return 0;
}
