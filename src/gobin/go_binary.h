// Go knowledge about an ELF executable read from its file: runtime symbols,
// the Go version, and where the pclntab and its funcdata live. Everything is
// in link-time addresses; callers add the PIE load bias themselves (only
// OpenPclntab takes it, because the Pclntab works in runtime addresses).
//
//   ElfFile elf = ElfFile::Open("/proc/123/exe");
//   GoBinary bin(elf);
//   GoVersion v = bin.version().value();         // from bin.version_source()
//   uint64_t mbuckets = *bin.SymbolAddress("runtime.mbuckets") + bias;
//   Pclntab tab = bin.OpenPclntab(bias);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/bytes.h"
#include "elf/elf_file.h"
#include "gobin/buildinfo.h"
#include "gobin/pclntab.h"

namespace goheap2pprof {

// Where the pclntab and the data it refers to are in the file.
struct PclntabLocation {
  uint64_t vaddr = 0;  // link-time address of the pcHeader
  Bytes table;         // the pclntab's file bytes
  std::string source;  // ".gopclntab", ".data.rel.ro.gopclntab" or "runtime.pclntab symbol"
  // Link-time runtime.text, which functab entry offsets are relative to; 0 if
  // neither the symbol nor pcHeader.textStart gives it.
  uint64_t text_start = 0;
  std::string text_source;    // "runtime.text" or "pcHeader.textStart"
  uint64_t gofunc_vaddr = 0;  // link-time go:func.* (go.func.* before 1.20); 0 if unknown
  Bytes gofunc;               // from gofunc_vaddr to the end of its segment's file bytes
};

class GoBinary {
 public:
  // Reads the build info and version eagerly (cheap); throws kMalformed if a
  // build-info blob is present but corrupt. elf must outlive the GoBinary.
  explicit GoBinary(const ElfFile& elf);

  const ElfFile& elf() const { return elf_; }

  // Link-time address of a symbol (runtime.mbuckets, ...); nullopt if absent.
  std::optional<uint64_t> SymbolAddress(std::string_view name) const;

  // From the .go.buildinfo section, else found in the first writable,
  // non-executable PT_LOAD as debug/buildinfo does.
  std::optional<BuildInfo> build_info() const { return build_info_; }
  // From the build info, else the runtime.buildVersion string, else an
  // unambiguous "go1.N" string in .rodata. nullopt if none worked.
  std::optional<GoVersion> version() const { return version_; }
  // How version() was found: "buildinfo", "runtime.buildVersion",
  // "rodata scan", or "" when it was not.
  const std::string& version_source() const { return version_source_; }

  // Finds the pclntab by section (.gopclntab, .data.rel.ro.gopclntab) or by
  // the runtime.pclntab..runtime.epclntab symbols (externally linked PIE
  // before 1.26 has no section). Throws kNotGo if there is none.
  PclntabLocation LocatePclntab() const;
  // A decoder for the pclntab with text_start = link-time runtime.text +
  // load_bias. Throws kUnsupported for stripped binaries (no .symtab), and
  // kMalformed/kUnsupported if the table is not one we can read.
  Pclntab OpenPclntab(uint64_t load_bias) const;

 private:
  void FindVersion();

  const ElfFile& elf_;
  std::optional<BuildInfo> build_info_;
  std::optional<GoVersion> version_;
  std::string version_source_;
};

// The Go version named by "go1.N[.P]" strings in data, if all such strings
// agree; nullopt if there are none or they disagree. Only for binaries
// without build info: a version string is not delimited in Go's string data,
// so the patch number may be wrong when the next string starts with a digit.
std::optional<GoVersion> ScanForGoVersion(Bytes data);

}  // namespace goheap2pprof
