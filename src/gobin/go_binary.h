// Go knowledge about an ELF executable read from its file: runtime symbols,
// the Go version, and where the pclntab and its funcdata live. Everything is
// in link-time addresses; callers add the PIE load bias themselves (only
// OpenPclntab takes it, because the Pclntab works in runtime addresses).
// Stripped binaries (no .symtab) work too: text start and funcdata then come
// from runtime.firstmoduledata found in the file (gobin/moduledata.h), and
// runtime functions are found by name in the pclntab.
//
//   ElfFile elf = ElfFile::Open("/proc/123/exe");
//   GoBinary bin(elf);
//   GoVersion v = bin.version().value();         // from bin.version_source()
//   uint64_t mbuckets = *bin.SymbolAddress("runtime.mbuckets") + bias;
//   Pclntab tab = bin.OpenPclntab(bias);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/bytes.h"
#include "base/error.h"
#include "base/expected.h"
#include "elf/elf_file.h"
#include "elf/relative_relocs.h"
#include "gobin/buildinfo.h"
#include "gobin/code_scan.h"
#include "gobin/moduledata.h"
#include "gobin/pclntab.h"

namespace goheap2pprof {

// Where the pclntab and the data it refers to are in the file.
struct PclntabLocation {
  uint64_t vaddr = 0;  // link-time address of the pcHeader
  Bytes table;         // the pclntab's file bytes
  // ".gopclntab", ".data.rel.ro.gopclntab", "runtime.pclntab symbol" or
  // "pcHeader scan" (stripped externally linked PIE before 1.26).
  std::string source;
  // Link-time runtime.text, which functab entry offsets are relative to; 0 if
  // neither the symbol, moduledata nor pcHeader.textStart gives it.
  uint64_t text_start = 0;
  // "runtime.text", "moduledata.text" or "pcHeader.textStart"
  std::string text_source;
  uint64_t gofunc_vaddr = 0;  // link-time go:func.* (go.func.* before 1.20); 0 if unknown
  // From gofunc_vaddr to the end of its segment's file bytes, read from the
  // ElfFile as the Pclntab asks (the file must outlive it and stay put, as
  // for this GoBinary).
  GoFuncBytes gofunc;
  // runtime.firstmoduledata from the file; only looked for when the binary
  // has no symbol table.
  std::optional<ModuleData> moduledata;
};

class GoBinary {
 public:
  // Reads the build info and version eagerly (cheap); throws kMalformed if a
  // build-info blob is present but corrupt. elf must outlive the GoBinary.
  explicit GoBinary(const ElfFile& elf);
  // The same with that Error as a value, for a caller asking of a file it
  // found whether it is a Go program we read.
  static Expected<GoBinary> TryOpen(const ElfFile& elf);

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
  // "runtime.buildVersion (recovered from runtime.schedinit)", "rodata scan",
  // "moduledata layout (Go 1.26)", or "" when it was not.
  const std::string& version_source() const { return version_source_; }
  // True when the version did not come from the build info: callers warn.
  bool version_inferred() const { return version_ && version_source_ != "buildinfo"; }

  // Finds the pclntab by section (.gopclntab, .data.rel.ro.gopclntab), by
  // the runtime.pclntab..runtime.epclntab symbols (externally linked PIE
  // before 1.26 has no section), or in a stripped binary by scanning data for
  // a pcHeader that a moduledata points to. Throws kNotGo if there is none,
  // kUnsupported if a stripped binary's tables are ambiguous. Cached.
  PclntabLocation LocatePclntab() const;
  // The same with the Error as a value (for version probes); cached too.
  const Expected<PclntabLocation>& TryLocatePclntab() const;
  // A decoder for the pclntab with text_start = link-time runtime.text (or
  // moduledata.text) + load_bias. Throws kMalformed/kUnsupported if the table
  // is not one we can read.
  Pclntab OpenPclntab(uint64_t load_bias) const;
  Expected<Pclntab> TryOpenPclntab(uint64_t load_bias) const;

  // Data references of the machine code of the function named `name` in the
  // pclntab (link-time addresses), or nullopt if there is no such function.
  // Works on stripped binaries; throws like OpenPclntab.
  std::optional<std::vector<DataRef>> FunctionDataRefs(std::string_view name) const;
  Expected<std::optional<std::vector<DataRef>>> TryFunctionDataRefs(std::string_view name) const;

  // The link-time 8-byte pointer stored at vaddr in the file (PIE
  // relocations applied); nullopt if not file-backed.
  std::optional<uint64_t> ReadPointer(uint64_t vaddr) const;

 private:
  // Stores the Error of a corrupt build-info blob in *build_info_error
  // instead of throwing it.
  GoBinary(const ElfFile& elf, std::optional<Error>* build_info_error);
  // Sets build_info_ and version_; returns the Error of a build-info blob
  // that is present but does not parse. Other sources that fail to decode
  // are no evidence, not errors.
  std::optional<Error> FindVersion();
  // Sets build_info_ from the blob, if there is one; returns its Error if
  // it does not parse.
  std::optional<Error> ReadBuildInfo();
  // The version in runtime.buildVersion, read through its symbol.
  std::optional<GoVersion> ReadBuildVersionSymbol() const;
  Expected<PclntabLocation> FindPclntab() const;
  // The steps of FindPclntab, in order. Each Find* leaves loc.source empty
  // if it found nothing; an Error means the binary's tables are not usable.
  void FindPclntabSection(PclntabLocation& loc) const;
  std::optional<Error> FindPclntabBySymbols(PclntabLocation& loc) const;
  std::optional<Error> FindPclntabByScan(PclntabLocation& loc) const;
  std::optional<Error> FindModuleDataOfStripped(PclntabLocation& loc) const;
  std::optional<Error> CheckModuleDataMatchesVersion(const PclntabLocation& loc) const;
  // Where the text starts (the pclntab's function offsets are relative to
  // it) and where go:func.* is, from the best source there is.
  void SetTextStart(PclntabLocation& loc) const;
  void SetGoFunc(PclntabLocation& loc) const;
  // runtime.buildVersion located through runtime.schedinit's code.
  std::optional<GoVersion> RecoverBuildVersion() const;

  const ElfFile& elf_;
  RelativeRelocs relocs_;
  std::optional<BuildInfo> build_info_;
  std::optional<GoVersion> version_;
  std::string version_source_;
  mutable std::optional<Expected<PclntabLocation>> location_;
  // Link-time decoder and name -> functab index, built on first use.
  mutable std::unique_ptr<Pclntab> link_pclntab_;
  mutable std::unordered_map<std::string_view, uint32_t> func_index_;
};

// The Go version named by "go1.N[.P]" strings in data, if all such strings
// agree; nullopt if there are none or they disagree. Only for binaries
// without build info: a version string is not delimited in Go's string data,
// so the patch number may be wrong when the next string starts with a digit.
std::optional<GoVersion> ScanForGoVersion(Bytes data);

}  // namespace goheap2pprof
