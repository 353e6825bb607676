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

GoBinary::GoBinary(const ElfFile& elf) : elf_(elf) { FindVersion(); }

std::optional<uint64_t> GoBinary::SymbolAddress(std::string_view name) const {
  std::optional<ElfSymbol> sym = elf_.FindSymbol(name);
  if (!sym) return std::nullopt;
  return sym->value;
}

void GoBinary::FindVersion() {
  // 1. Build info: the section when there is one (it starts with the blob),
  // else debug/buildinfo's scan of the first writable data segment.
  if (std::optional<Bytes> section = elf_.SectionData(".go.buildinfo")) {
    build_info_ = FindBuildInfo(*section);
  } else {
    for (const ElfSegment& seg : elf_.segments()) {
      if (seg.type != PT_LOAD || (seg.flags & PF_W) == 0 || (seg.flags & PF_X) != 0) continue;
      if (std::optional<Bytes> bytes = elf_.ReadVaddr(seg.vaddr, std::min(seg.filesz, seg.memsz))) {
        build_info_ = FindBuildInfo(*bytes);
      }
      break;
    }
  }
  if (build_info_) {
    version_ = ParseGoVersion(build_info_->go_version);
    if (version_) {
      version_source_ = "buildinfo";
      return;
    }
  }

  // 2. runtime.buildVersion, a Go string header {ptr, len}. In externally
  // linked PIEs the pointer is a dynamic relocation and reads as 0 here, so
  // the read simply fails and we fall through.
  if (std::optional<uint64_t> addr = SymbolAddress("runtime.buildVersion")) {
    if (std::optional<Bytes> header = elf_.ReadVaddr(*addr, 16)) {
      ByteView h(*header, "runtime.buildVersion");
      uint64_t ptr = h.U64(0);
      uint64_t len = h.U64(8);
      if (ptr != 0 && len > 0 && len <= kMaxVersionLen) {
        if (std::optional<Bytes> s = elf_.ReadVaddr(ptr, len)) {
          version_ = ParseGoVersion(
              std::string_view(reinterpret_cast<const char*>(s->data()), s->size()));
          if (version_) {
            version_source_ = "runtime.buildVersion";
            return;
          }
        }
      }
    }
  }

  // 3. A "go1.N" string in read-only data, accepted only if unambiguous.
  if (std::optional<Bytes> rodata = elf_.SectionData(".rodata")) {
    version_ = ScanForGoVersion(*rodata);
    if (version_) version_source_ = "rodata scan";
  }
}

PclntabLocation GoBinary::LocatePclntab() const {
  PclntabLocation loc;
  for (std::string_view name : {".gopclntab", ".data.rel.ro.gopclntab"}) {
    const ElfSection* s = elf_.FindSection(name);
    if (s == nullptr || s->type == SHT_NOBITS) continue;
    loc.vaddr = s->addr;
    loc.table = *elf_.SectionData(name);
    loc.source = name;
    break;
  }
  if (loc.source.empty()) {
    std::optional<uint64_t> start = SymbolAddress("runtime.pclntab");
    std::optional<uint64_t> end = SymbolAddress("runtime.epclntab");
    if (!start || !end) {
      throw Error(ErrorKind::kNotGo, elf_.name(),
                  " has no Go pclntab (no .gopclntab section, no runtime.pclntab symbol)");
    }
    if (*end <= *start) {
      throw Error(ErrorKind::kMalformed, elf_.name(), ": runtime.epclntab ", Hex(*end),
                  " is not after runtime.pclntab ", Hex(*start));
    }
    std::optional<Bytes> bytes = elf_.ReadVaddr(*start, *end - *start);
    if (!bytes) {
      throw Error(ErrorKind::kMalformed, elf_.name(), ": pclntab [", Hex(*start), ", ",
                  Hex(*end), ") is not backed by file bytes of one segment");
    }
    loc.vaddr = *start;
    loc.table = *bytes;
    loc.source = "runtime.pclntab symbol";
  }

  // Never the .text section address: with external linking it is 0x100
  // below runtime.text.
  if (std::optional<uint64_t> text = SymbolAddress("runtime.text")) {
    loc.text_start = *text;
    loc.text_source = "runtime.text";
  } else if (ByteView view(loc.table, "pclntab"); view.Has(24, 8) && view.U64(24) != 0) {
    // Stored until 1.25 (0 from 1.26 on).
    loc.text_start = view.U64(24);
    loc.text_source = "pcHeader.textStart";
  }

  for (std::string_view name : {"go:func.*", "go.func.*"}) {
    if (std::optional<uint64_t> gofunc = SymbolAddress(name)) {
      loc.gofunc_vaddr = *gofunc;
      loc.gofunc = elf_.ReadVaddrToSegmentEnd(*gofunc).value_or(Bytes());
      break;
    }
  }
  return loc;
}

Pclntab GoBinary::OpenPclntab(uint64_t load_bias) const {
  PclntabLocation loc = LocatePclntab();
  if (!elf_.HasSymtab()) {
    throw Error(ErrorKind::kUnsupported, elf_.name(),
                " is stripped (no .symtab); its pclntab is in ", loc.source,
                " but reading stripped binaries is not supported yet")
        .WithHint("run the target from an unstripped build (without -ldflags=-s)");
  }
  if (loc.text_source.empty()) {
    throw Error(ErrorKind::kMalformed, elf_.name(),
                ": no runtime.text symbol and pcHeader.textStart is 0");
  }
  if (loc.gofunc_vaddr == 0) {
    throw Error(ErrorKind::kMalformed, elf_.name(),
                ": no go:func.* symbol, so inline trees cannot be located");
  }
  return Pclntab(loc.table, loc.text_start + load_bias, loc.gofunc);
}

}  // namespace goheap2pprof
