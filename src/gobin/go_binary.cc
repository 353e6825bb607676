#include "gobin/go_binary.h"

#include <elf.h>

#include <cstring>

namespace goheap2pprof {

namespace {

// runtime.buildVersion is short ("go1.22.0 X:boringcrypto" at most a few
// dozen bytes); anything longer is not a version.
constexpr uint64_t kMaxVersionLen = 256;

bool IsAlnum(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

std::optional<GoVersion> ScanForGoVersion(Bytes data) {
  static constexpr std::string_view kPrefix = "go1.";
  std::optional<GoVersion> found;
  std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  for (size_t pos = text.find(kPrefix); pos != std::string_view::npos;
       pos = text.find(kPrefix, pos + 1)) {
    // "cargo1.2" is not a version; a version starts a string or follows
    // punctuation/NUL.
    if (pos > 0 && IsAlnum(static_cast<uint8_t>(text[pos - 1]))) continue;
    std::optional<GoVersion> v = ParseGoVersion(text.substr(pos, 32));
    if (!v) continue;
    if (found && *found != *v) return std::nullopt;
    found = v;
  }
  return found;
}

GoBinary::GoBinary(const ElfFile& elf) : elf_(elf), relocs_(elf) {
  if (std::optional<Error> bad = FindVersion()) throw std::move(*bad);
}

GoBinary::GoBinary(const ElfFile& elf, std::optional<Error>* build_info_error)
    : elf_(elf), relocs_(elf) {
  *build_info_error = FindVersion();
}

Expected<GoBinary> GoBinary::TryOpen(const ElfFile& elf) {
  std::optional<Error> bad;
  GoBinary bin(elf, &bad);
  if (bad) return std::move(*bad);
  return bin;
}

std::optional<uint64_t> GoBinary::ReadPointer(uint64_t vaddr) const {
  return relocs_.ReadPointer(vaddr);
}

std::optional<uint64_t> GoBinary::SymbolAddress(std::string_view name) const {
  std::optional<ElfSymbol> sym = elf_.FindSymbol(name);
  if (!sym) return std::nullopt;
  return sym->value;
}

std::optional<Error> GoBinary::FindVersion() {
  // 1. Build info.
  if (std::optional<Error> bad = ReadBuildInfo()) return bad;
  if (build_info_) {
    version_ = ParseGoVersion(build_info_->go_version);
    if (version_) {
      version_source_ = "buildinfo";
      return std::nullopt;
    }
  }

  // 2. runtime.buildVersion.
  version_ = ReadBuildVersionSymbol();
  if (version_) {
    version_source_ = "runtime.buildVersion";
    return std::nullopt;
  }

  // The remaining sources need the pclntab and moduledata. They are
  // optional evidence: a binary that is not Go, or whose tables do not
  // validate, simply has no version here, and the caller reports that.
  if (!elf_.HasSymtab()) {
    // 3. Stripped: runtime.buildVersion found through schedinit's code.
    version_ = RecoverBuildVersion();
    if (version_) {
      version_source_ = "runtime.buildVersion (recovered from runtime.schedinit)";
      return std::nullopt;
    }
  }

  // 4. A "go1.N" string in read-only data, accepted only if unambiguous.
  if (std::optional<Bytes> rodata = elf_.SectionData(".rodata")) {
    version_ = ScanForGoVersion(*rodata);
    if (version_) {
      version_source_ = "rodata scan";
      return std::nullopt;
    }
  }

  // 5. The moduledata layout, when it implies a single release (1.26, 1.27).
  if (!elf_.HasSymtab()) {
    const Expected<PclntabLocation>& loc = TryLocatePclntab();
    if (loc && loc->moduledata) {
      version_ = VersionImpliedBy(loc->moduledata->layout);
      if (version_) {
        version_source_ = "moduledata layout (" +
                          std::string(ModuleDataLayoutName(loc->moduledata->layout)) + ")";
      }
    }
  }
  return std::nullopt;
}

std::optional<Error> GoBinary::ReadBuildInfo() {
  // The section when there is one (it starts with the blob), else
  // debug/buildinfo's scan of the first writable data segment.
  std::optional<Bytes> build_info_bytes = elf_.SectionData(".go.buildinfo");
  if (!build_info_bytes) {
    for (const ElfSegment& seg : elf_.segments()) {
      if (seg.type != PT_LOAD || (seg.flags & PF_W) == 0 || (seg.flags & PF_X) != 0) continue;
      build_info_bytes = elf_.ReadVaddr(seg.vaddr, std::min(seg.filesz, seg.memsz));
      break;
    }
  }
  if (!build_info_bytes) return std::nullopt;
  // A blob that is there but does not parse ends the search: the binary
  // is not one we read (a Go 1.17 pointer-format blob, or a corrupt one).
  Expected<std::optional<BuildInfo>> found = TryFindBuildInfo(*build_info_bytes);
  if (!found) return found.error();
  build_info_ = std::move(*found);
  return std::nullopt;
}

std::optional<GoVersion> GoBinary::ReadBuildVersionSymbol() const {
  // A Go string header {ptr, len}. In externally linked PIEs the pointer is
  // a dynamic relocation and reads as 0 here, so the read simply fails.
  std::optional<uint64_t> addr = SymbolAddress("runtime.buildVersion");
  if (!addr) return std::nullopt;
  std::optional<Bytes> header = elf_.ReadVaddr(*addr, 16);
  if (!header) return std::nullopt;
  ByteView h(*header, "runtime.buildVersion");
  uint64_t ptr = h.U64(0);
  uint64_t len = h.U64(8);
  if (ptr == 0 || len == 0 || len > kMaxVersionLen) return std::nullopt;
  std::optional<Bytes> s = elf_.ReadVaddr(ptr, len);
  if (!s) return std::nullopt;
  return ParseGoVersion(std::string_view(reinterpret_cast<const char*>(s->data()), s->size()));
}

std::optional<GoVersion> GoBinary::RecoverBuildVersion() const {
  // schedinit does `if buildVersion == "" { buildVersion = "unknown" }`: it
  // reads and writes buildVersion.len (8 bytes at +8). It does the same to
  // runtime.modinfo, so every such header is a candidate and only one whose
  // bytes parse as a Go version counts; all must agree. (The pointer store
  // is not required: on arm64 it may go through a register loaded earlier.)
  // Tables that do not decode are no evidence: no version from here.
  Expected<std::optional<std::vector<DataRef>>> found_refs =
      TryFunctionDataRefs("runtime.schedinit");
  if (!found_refs || !*found_refs) return std::nullopt;
  const std::optional<std::vector<DataRef>>& refs = *found_refs;
  std::optional<GoVersion> found;
  for (const DataRef& len_write : *refs) {
    if (!len_write.write || len_write.size != 8 || len_write.target < 8) continue;
    const uint64_t header = len_write.target - 8;
    bool len_read = false;
    for (const DataRef& r : *refs) {
      if (!r.write && r.size == 8 && r.target == len_write.target) len_read = true;
    }
    if (!len_read) continue;
    std::optional<uint64_t> ptr = ReadPointer(header);
    std::optional<uint64_t> len = ReadPointer(header + 8);
    if (!ptr || !len || *ptr == 0 || *len == 0 || *len > kMaxVersionLen) continue;
    std::optional<Bytes> s = elf_.ReadVaddr(*ptr, *len);
    if (!s) continue;
    std::optional<GoVersion> v =
        ParseGoVersion(std::string_view(reinterpret_cast<const char*>(s->data()), s->size()));
    if (!v) continue;
    if (found && *found != *v) return std::nullopt;
    found = v;
  }
  return found;
}

PclntabLocation GoBinary::LocatePclntab() const { return TryLocatePclntab().value(); }

const Expected<PclntabLocation>& GoBinary::TryLocatePclntab() const {
  if (!location_) location_ = FindPclntab();
  return *location_;
}

Expected<PclntabLocation> GoBinary::FindPclntab() const {
  PclntabLocation loc;
  FindPclntabSection(loc);
  if (loc.source.empty()) {
    if (std::optional<Error> bad = FindPclntabBySymbols(loc)) return *bad;
  }
  if (loc.source.empty() && !elf_.HasSymtab()) {
    if (std::optional<Error> bad = FindPclntabByScan(loc)) return *bad;
  }
  if (loc.source.empty()) {
    return Error(ErrorKind::kNotGo, elf_.name(),
                 " has no Go pclntab (no .gopclntab section, no runtime.pclntab symbol, no "
                 "pcHeader referenced by a moduledata)");
  }
  if (!elf_.HasSymtab() && !loc.moduledata) {
    if (std::optional<Error> bad = FindModuleDataOfStripped(loc)) return *bad;
  }
  if (std::optional<Error> bad = CheckModuleDataMatchesVersion(loc)) return *bad;
  SetTextStart(loc);
  SetGoFunc(loc);
  return loc;
}

void GoBinary::FindPclntabSection(PclntabLocation& loc) const {
  for (std::string_view name : {".gopclntab", ".data.rel.ro.gopclntab"}) {
    const ElfSection* s = elf_.FindSection(name);
    if (s == nullptr || s->type == SHT_NOBITS) continue;
    loc.vaddr = s->addr;
    loc.table = *elf_.SectionData(name);
    loc.source = name;
    return;
  }
}

std::optional<Error> GoBinary::FindPclntabBySymbols(PclntabLocation& loc) const {
  std::optional<uint64_t> start = SymbolAddress("runtime.pclntab");
  std::optional<uint64_t> end = SymbolAddress("runtime.epclntab");
  if (!start || !end) return std::nullopt;
  if (*end <= *start) {
    return Error(ErrorKind::kMalformed, elf_.name(), ": runtime.epclntab ", Hex(*end),
                 " is not after runtime.pclntab ", Hex(*start));
  }
  std::optional<Bytes> bytes = elf_.ReadVaddr(*start, *end - *start);
  if (!bytes) {
    return Error(ErrorKind::kMalformed, elf_.name(), ": pclntab [", Hex(*start), ", ", Hex(*end),
                 ") is not backed by file bytes of one segment");
  }
  loc.vaddr = *start;
  loc.table = *bytes;
  loc.source = "runtime.pclntab symbol";
  return std::nullopt;
}

std::optional<Error> GoBinary::FindPclntabByScan(PclntabLocation& loc) const {
  // Stripped externally linked PIE before 1.26: the pclntab is somewhere in
  // .data.rel.ro. A pcHeader-looking place counts only if a moduledata
  // points to it and validates; exactly one must.
  std::vector<uint64_t> headers = ScanForPclntabHeaders(elf_);
  for (uint64_t vaddr : headers) {
    std::optional<Bytes> bytes = elf_.ReadVaddrToSegmentEnd(vaddr);
    if (!bytes) continue;
    Expected<std::optional<ModuleData>> found =
        FindModuleData(elf_, relocs_, vaddr, *bytes, std::nullopt);
    if (!found) return found.error();
    const std::optional<ModuleData>& md = *found;
    if (!md) continue;
    if (loc.moduledata) {
      return Error(ErrorKind::kUnsupported, elf_.name(), ": two pclntabs validate, at ",
                   Hex(loc.vaddr), " and ", Hex(vaddr), "; refusing to guess")
          .WithHint(
              "capture from an unstripped build of the same program (built without "
              "-ldflags=-s)");
    }
    loc.vaddr = vaddr;
    loc.table = *bytes;
    loc.source = "pcHeader scan";
    loc.moduledata = md;
  }
  if (loc.source.empty() && !headers.empty()) {
    return Error(ErrorKind::kUnsupported, elf_.name(),
                 " is stripped and has no pclntab "
                 "section; none of the ",
                 headers.size(), " pcHeader-like places (first at ", Hex(headers[0]),
                 ") is referenced by a moduledata that validates")
        .WithHint(
            "capture from an unstripped build of the same program (built without "
            "-ldflags=-s); Go 1.18 or newer is required");
  }
  return std::nullopt;
}

std::optional<Error> GoBinary::FindModuleDataOfStripped(PclntabLocation& loc) const {
  Expected<std::optional<ModuleData>> found =
      FindModuleData(elf_, relocs_, loc.vaddr, loc.table, std::nullopt);
  if (!found) return found.error();
  loc.moduledata = *found;
  if (loc.moduledata) return std::nullopt;
  return Error(ErrorKind::kUnsupported, elf_.name(),
               " is stripped and no runtime.firstmoduledata pointing to its pclntab at ",
               Hex(loc.vaddr), " (", loc.source, ") validates")
      .WithHint(
          "capture from an unstripped build of the same program (built without "
          "-ldflags=-s); Go 1.18 or newer is required");
}

std::optional<Error> GoBinary::CheckModuleDataMatchesVersion(const PclntabLocation& loc) const {
  if (!loc.moduledata || !version_ ||
      (version_source_ != "buildinfo" && version_source_ != "runtime.buildVersion")) {
    return std::nullopt;
  }
  // The build info names the release; its layout family must be the one
  // that validated, or one of the two is not what it seems.
  if (ModuleDataLayoutFor(*version_) == loc.moduledata->layout) return std::nullopt;
  return Error(ErrorKind::kUnsupported, elf_.name(), ": the build info says ",
               FormatGoVersion(*version_), " but the moduledata at ", Hex(loc.moduledata->vaddr),
               " has the ", ModuleDataLayoutName(loc.moduledata->layout), " layout")
      .WithHint("capture from an unstripped build of the same program");
}

void GoBinary::SetTextStart(PclntabLocation& loc) const {
  // Never the .text section address: with external linking it is 0x100
  // below runtime.text.
  if (std::optional<uint64_t> text = SymbolAddress("runtime.text")) {
    loc.text_start = *text;
    loc.text_source = "runtime.text";
  } else if (loc.moduledata) {
    loc.text_start = loc.moduledata->text;
    loc.text_source = "moduledata.text";
  } else if (ByteView view(loc.table, "pclntab"); view.Has(24, 8) && view.U64(24) != 0) {
    // Stored until 1.25 (0 from 1.26 on).
    loc.text_start = view.U64(24);
    loc.text_source = "pcHeader.textStart";
  }
}

void GoBinary::SetGoFunc(PclntabLocation& loc) const {
  for (std::string_view name : {"go:func.*", "go.func.*"}) {
    if (std::optional<uint64_t> gofunc = SymbolAddress(name)) {
      loc.gofunc_vaddr = *gofunc;
      break;
    }
  }
  if (loc.gofunc_vaddr == 0 && loc.moduledata) loc.gofunc_vaddr = loc.moduledata->gofunc;
  if (loc.gofunc_vaddr == 0) return;
  const std::optional<uint64_t> size = elf_.BytesToSegmentEnd(loc.gofunc_vaddr);
  if (!size) return;
  loc.gofunc.size = *size;
  loc.gofunc.read = [elf = &elf_, vaddr = loc.gofunc_vaddr](uint64_t off, uint64_t len) {
    return elf->ReadVaddr(vaddr + off, len);  // within the segment: GoFuncAt checks
  };
}

Pclntab GoBinary::OpenPclntab(uint64_t load_bias) const {
  return TryOpenPclntab(load_bias).value();
}

Expected<Pclntab> GoBinary::TryOpenPclntab(uint64_t load_bias) const {
  const Expected<PclntabLocation>& found = TryLocatePclntab();
  if (!found) return found.error();
  const PclntabLocation& loc = *found;
  if (loc.text_source.empty()) {
    return Error(ErrorKind::kMalformed, elf_.name(),
                 ": no runtime.text symbol, no moduledata and pcHeader.textStart is 0");
  }
  if (loc.gofunc_vaddr == 0) {
    return Error(ErrorKind::kMalformed, elf_.name(),
                 ": no go:func.* symbol or moduledata.gofunc, so inline trees cannot be located");
  }
  return Pclntab::TryParse(loc.table, loc.text_start + load_bias, loc.gofunc);
}

std::optional<std::vector<DataRef>> GoBinary::FunctionDataRefs(std::string_view name) const {
  return TryFunctionDataRefs(name).value();
}

Expected<std::optional<std::vector<DataRef>>> GoBinary::TryFunctionDataRefs(
    std::string_view name) const {
  if (!link_pclntab_) {
    Expected<Pclntab> tab = TryOpenPclntab(0);
    if (!tab) return tab.error();
    // One pass over the functab (bounded by nfunc, which the Pclntab checked
    // against the table size). Names are views into the file image.
    std::unordered_map<std::string_view, uint32_t> index;
    for (uint32_t i = 0; i < tab->nfunc(); ++i) {
      Expected<std::string_view> func_name = tab->TryFuncName(tab->FuncAt(i));
      if (!func_name) return func_name.error();
      index.emplace(*func_name, i);
    }
    link_pclntab_ = std::make_unique<Pclntab>(std::move(tab).value());
    func_index_ = std::move(index);
  }
  auto it = func_index_.find(name);
  if (it == func_index_.end()) return std::optional<std::vector<DataRef>>();
  const Pclntab& tab = *link_pclntab_;
  const FuncRef f = tab.FuncAt(it->second);
  const uint64_t end =
      it->second + 1 < tab.nfunc() ? tab.FuncAt(it->second + 1).entry : tab.text_end();
  // Go functions are at most a few hundred KiB; a larger span means the
  // table is corrupt.
  constexpr uint64_t kMaxFuncSize = 1 << 20;
  if (end <= f.entry || end - f.entry > kMaxFuncSize) {
    return Error(ErrorKind::kMalformed, elf_.name(), ": function ", name, " at ", Hex(f.entry),
                 " has implausible size ", end - f.entry, " (next entry ", Hex(end), ")");
  }
  std::optional<Bytes> code = elf_.ReadVaddr(f.entry, end - f.entry);
  if (!code) {
    return Error(ErrorKind::kMalformed, elf_.name(), ": code of ", name, " [", Hex(f.entry), ", ",
                 Hex(end), ") is not in the file");
  }
  return std::optional<std::vector<DataRef>>(ScanDataRefs(elf_.machine(), *code, f.entry));
}

}  // namespace goheap2pprof
