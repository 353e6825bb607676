// A hand-built Go executable image for unit tests of the whole engine: an ELF
// with a Go build-info blob naming the version, a .gopclntab (from
// hand_pclntab.h), the go:func.* bytes holding its inline trees, and a symbol
// table with runtime.text and the runtime's heap-profile variables. No Go
// toolchain is involved; the runtime-side state (the variables' values and
// the buckets) is laid out in TestMemory by the test.
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "elf_bytes.h"
#include "hand_pclntab.h"

namespace goheap2pprof {
namespace testing_go_elf {

using testing_pclntab::HandFunc;
using testing_pclntab::HandTable;

// The functions of the hand-made Go program that the engine and the
// runtime/pprof-rule tests share, each 0x100 bytes long: an allocator in the
// runtime (hidden from profiles), main.alloc with main.helper inlined at
// [0x40, 0x50) called from offset 0x30, and main.main.
inline HandFunc HandMallocgc() {
  return {.name = "runtime.mallocgc",
          .file = "runtime/malloc.go",
          .start_line = 900,
          .lines = {{950, 0x100}}};
}

inline HandFunc HandAllocWithInlinedHelper() {
  return {.name = "main.alloc",
          .file = "main.go",
          .start_line = 10,
          .lines = {{11, 0x40}, {12, 0xc0}},
          .inlines = {{.name = "main.helper",
                       .begin = 0x40,
                       .end = 0x50,
                       .parent_pc = 0x30,
                       .line = 21,
                       .start_line = 20}}};
}

inline HandFunc HandMain() {
  return {.name = "main.main", .file = "main.go", .start_line = 30, .lines = {{31, 0x100}}};
}

struct HandGoElf {
  std::vector<uint8_t> image;
  // Link-time addresses.
  uint64_t text = 0;  // runtime.text: function entry offsets are relative to it
  uint64_t mbuckets = 0;
  uint64_t mem_profile_rate = 0;
  uint64_t cycle = 0;
  uint64_t disable_memory_profiling = 0;  // 0 when the symbol was left out
  uint64_t load_size = 0;  // the one PT_LOAD maps [0, load_size) of the file at vaddr 0
};

using testing_elf::PutAt;

inline void Align(std::vector<uint8_t>& b, size_t to) { b.resize((b.size() + to - 1) / to * to); }

// A position-independent (ET_DYN, linked at 0) amd64 executable.
inline HandGoElf BuildHandGoElf(const HandTable& table, std::string_view go_version,
                                uint32_t text_size, std::string_view cycle_symbol,
                                bool with_disable_symbol = true) {
  HandGoElf out;
  std::vector<uint8_t>& b = out.image;
  b.resize(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), 0);

  struct Section {
    std::string name;
    uint32_t type;
    uint64_t flags;
    uint64_t offset;
    uint64_t size;
    uint32_t link = 0;
    uint32_t info = 0;
    uint64_t entsize = 0;
  };
  std::vector<Section> sections;
  auto add = [&](std::string name, uint32_t type, uint64_t flags, const std::vector<uint8_t>& bytes,
                 size_t align) {
    Align(b, align);
    sections.push_back({std::move(name), type, flags, b.size(), bytes.size()});
    b.insert(b.end(), bytes.begin(), bytes.end());
    return sections.back().offset;
  };

  b.resize(0x1000, 0);
  out.text = add(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
                 std::vector<uint8_t>(text_size, 0xcc), 16);
  add(".gopclntab", SHT_PROGBITS, SHF_ALLOC, table.table, 32);
  const uint64_t gofunc = add(".rodata", SHT_PROGBITS, SHF_ALLOC, table.gofunc, 32);

  // Build info: magic, pointer size, flags (2: inline strings), then the
  // version and the module info as varint-prefixed strings at offset 32.
  std::vector<uint8_t> info(32, 0);
  std::memcpy(info.data(), "\xff Go buildinf:", 14);
  info[14] = 8;
  info[15] = 2;
  info.push_back(static_cast<uint8_t>(go_version.size()));
  info.insert(info.end(), go_version.begin(), go_version.end());
  info.push_back(0);
  add(".go.buildinfo", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, info, 16);

  const uint64_t data =
      add(".noptrdata", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, std::vector<uint8_t>(32, 0), 16);
  out.mbuckets = data;
  out.mem_profile_rate = data + 8;
  out.cycle = data + 16;
  if (with_disable_symbol) out.disable_memory_profiling = data + 24;
  Align(b, 16);
  out.load_size = b.size();

  // Symbols (not loaded).
  std::string strtab(1, '\0');
  std::vector<uint8_t> symtab(sizeof(Elf64_Sym), 0);
  auto sym = [&](std::string_view name, uint64_t value, uint16_t shndx) {
    Elf64_Sym s{};
    s.st_name = static_cast<uint32_t>(strtab.size());
    s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
    s.st_shndx = shndx;
    s.st_value = value;
    strtab += name;
    strtab.push_back('\0');
    PutAt(symtab, symtab.size(), s);
  };
  sym("runtime.text", out.text, 1);
  sym("go:func.*", gofunc, 3);
  sym("runtime.mbuckets", out.mbuckets, 5);
  sym("runtime.MemProfileRate", out.mem_profile_rate, 5);
  sym(cycle_symbol, out.cycle, 5);
  if (with_disable_symbol) sym("runtime.disableMemoryProfiling", out.disable_memory_profiling, 5);
  const size_t symtab_index = sections.size() + 1;
  add(".symtab", SHT_SYMTAB, 0, symtab, 8);
  sections.back().link = static_cast<uint32_t>(symtab_index + 1);
  sections.back().info = 1;
  sections.back().entsize = sizeof(Elf64_Sym);
  add(".strtab", SHT_STRTAB, 0, std::vector<uint8_t>(strtab.begin(), strtab.end()), 1);

  std::string shstrtab(1, '\0');
  std::vector<uint32_t> name_offsets;
  for (const Section& s : sections) {
    name_offsets.push_back(static_cast<uint32_t>(shstrtab.size()));
    shstrtab += s.name;
    shstrtab.push_back('\0');
  }
  name_offsets.push_back(static_cast<uint32_t>(shstrtab.size()));
  shstrtab += ".shstrtab";
  shstrtab.push_back('\0');
  add(".shstrtab", SHT_STRTAB, 0, std::vector<uint8_t>(shstrtab.begin(), shstrtab.end()), 1);

  Align(b, 8);
  const uint64_t shoff = b.size();
  PutAt(b, shoff, Elf64_Shdr{});
  for (size_t i = 0; i < sections.size(); ++i) {
    const Section& s = sections[i];
    Elf64_Shdr sh{};
    sh.sh_name = name_offsets[i];
    sh.sh_type = s.type;
    sh.sh_flags = s.flags;
    sh.sh_addr = (s.flags & SHF_ALLOC) ? s.offset : 0;  // linked at 0: vaddr == offset
    sh.sh_offset = s.offset;
    sh.sh_size = s.size;
    sh.sh_link = s.link;
    sh.sh_info = s.info;
    sh.sh_addralign = 1;
    sh.sh_entsize = s.entsize;
    PutAt(b, b.size(), sh);
  }

  Elf64_Ehdr eh = testing_elf::Elf64Header(ET_DYN, EM_X86_64);
  eh.e_entry = out.text;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_shoff = shoff;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = static_cast<uint16_t>(sections.size() + 1);
  eh.e_shstrndx = static_cast<uint16_t>(sections.size());
  PutAt(b, 0, eh);

  Elf64_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_flags = PF_R | PF_W | PF_X;
  ph.p_offset = 0;
  ph.p_vaddr = 0;
  ph.p_paddr = 0;
  ph.p_filesz = out.load_size;
  ph.p_memsz = out.load_size;
  ph.p_align = 0x1000;
  PutAt(b, sizeof(Elf64_Ehdr), ph);
  return out;
}

}  // namespace testing_go_elf
}  // namespace goheap2pprof
