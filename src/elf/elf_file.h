// An ELF executable opened with libelf, knowing nothing about Go: header
// facts, program headers, sections, symbols, notes, and reads of the file's
// bytes by link-time virtual address.
//
// A file opened from a path is never mapped: the files goheap2pprof opens
// are mostly the target's (its executable, its mapped files under
// /proc/<pid>/), and the target may truncate one while we hold it, which
// would turn a read of a mapped page into SIGBUS. libelf reads what it needs
// with pread into its own buffers (ELF_C_READ), and our reads go through
// MappedBytes::ReadOnDemand, so a file cut short is a kIo error.
//
//   ElfFile elf = ElfFile::Open("/proc/123/exe");
//   if (auto sym = elf.FindSymbol("runtime.mbuckets")) use(sym->value);
//   Bytes text = elf.SectionData(".gopclntab").value();
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/bytes.h"
#include "base/error.h"
#include "base/expected.h"
#include "base/mapped_bytes.h"

// libelf's opaque handle (libelf.h: typedef struct Elf Elf), declared here so
// this header does not pull in libelf.
struct Elf;

namespace goheap2pprof {

struct ElfSegment {
  uint32_t type = 0;   // PT_LOAD, ...
  uint32_t flags = 0;  // PF_R | PF_W | PF_X
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
  uint64_t align = 0;
};

struct ElfSection {
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct ElfSymbol {
  uint64_t value = 0;
  uint64_t size = 0;
};

class ElfFile {
 public:
  // Opens the file; throws kIo if it can't be read, kNotGo if it is not
  // ELF, kUnsupported if it is not a 64-bit little-endian ELF for
  // amd64/arm64.
  // `display_name` is used in messages (e.g. the target's exe path).
  static ElfFile Open(const std::string& path, std::string display_name = "");
  // The same with failure as a value, for callers to whom a file that
  // cannot be used is an expected outcome (a mapped file, a guess).
  static Expected<ElfFile> TryOpen(const std::string& path, std::string display_name = "");
  // Same, from bytes already in memory (tests, fuzzers).
  static ElfFile FromBytes(std::vector<uint8_t> bytes, std::string display_name);

  ElfFile(ElfFile&&) noexcept;
  ElfFile& operator=(ElfFile&&) noexcept;
  ~ElfFile();

  const std::string& name() const { return name_; }
  uint16_t type() const { return type_; }        // ET_EXEC, ET_DYN
  uint16_t machine() const { return machine_; }  // EM_X86_64, EM_AARCH64
  uint64_t entry() const { return entry_; }
  uint64_t file_size() const { return image_.size(); }
  // The whole file, read in full (tests and tools; the engine reads only
  // the ranges it needs).
  Bytes bytes() const { return image_.All(); }
  // File bytes [offset, offset+size), valid as long as this; nullopt if not
  // inside the file. Throws kIo if the file has shrunk since it was opened.
  std::optional<Bytes> FileRange(uint64_t offset, uint64_t size) const;
  // The same bytes copied into dst without keeping them here (for a caller
  // that builds its own image); false if not inside the file.
  bool CopyFileRange(uint64_t offset, std::span<uint8_t> dst) const;

  const std::vector<ElfSegment>& segments() const { return segments_; }
  const std::vector<ElfSection>& sections() const { return sections_; }
  const ElfSection* FindSection(std::string_view name) const;
  // File bytes of a section (empty for SHT_NOBITS); nullopt if absent.
  std::optional<Bytes> SectionData(std::string_view name) const;

  // .symtab first, then .dynsym. Symbols are indexed on first use.
  std::optional<ElfSymbol> FindSymbol(std::string_view name) const;
  bool HasSymtab() const;

  // File bytes backing [vaddr, vaddr+size) of one PT_LOAD segment; nullopt if
  // the range is not wholly file-backed by a single segment.
  std::optional<Bytes> ReadVaddr(uint64_t vaddr, uint64_t size) const;
  // File bytes from vaddr to the end of the file-backed part of the PT_LOAD
  // containing it; nullopt if vaddr is not file-backed.
  std::optional<Bytes> ReadVaddrToSegmentEnd(uint64_t vaddr) const;
  // How many file bytes ReadVaddrToSegmentEnd would give, without reading them.
  std::optional<uint64_t> BytesToSegmentEnd(uint64_t vaddr) const;

  // Hex of the NT_GNU_BUILD_ID note found in SHT_NOTE sections (what
  // runtime/pprof reports); empty if none.
  std::string GnuBuildId() const;
  // Go build ID from the .note.go.buildid note (owner "Go", type 4); empty if none.
  std::string GoBuildId() const;

 private:
  struct ElfEnd {
    void operator()(Elf* elf) const;
  };

  ElfFile();
  // Checks the identification bytes and reads the headers: nullopt when
  // all is well, else why the file cannot be used.
  std::optional<Error> Load();
  // The steps of Load after the ELF header: the program headers into
  // segments_, the section headers (with their names) into sections_.
  std::optional<Error> ReadSegments(Elf* elf);
  std::optional<Error> ReadSections(Elf* elf);
  void IndexSymbols() const;
  // Notes of SHT_NOTE sections: calls fn(owner, type, desc) for each until fn
  // returns true.
  template <typename Fn>
  void ForEachNote(Fn fn) const;

  std::string name_;
  // The image (and the descriptor libelf reads from) must outlive elf_, so
  // it is declared first.
  MappedBytes image_;
  std::unique_ptr<Elf, ElfEnd> elf_;
  uint16_t type_ = 0;
  uint16_t machine_ = 0;
  uint64_t entry_ = 0;
  std::vector<ElfSegment> segments_;
  std::vector<ElfSection> sections_;
  struct SymbolTables;
  mutable std::unique_ptr<SymbolTables> symbols_;
};

}  // namespace goheap2pprof
