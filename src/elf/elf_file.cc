#include "elf/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "base/hash_index.h"
#include "base/unique_fd.h"
#include "elf/libelf_calls.h"

namespace goheap2pprof {

// Built on first FindSymbol; the once_flag makes concurrent first lookups safe.
struct ElfFile::SymbolTables {
  std::once_flag once;
  bool has_symtab = false;
  // Names point into the string tables libelf holds (in the file image, or
  // read into its own buffers), which live as long as the ElfFile's Elf
  // handle (moves keep them where they are). One entry per name: the first
  // symbol of that name.
  struct Entry {
    std::string_view name;
    ElfSymbol symbol;
  };
  std::vector<Entry> entries;
  HashIndex by_name;
  // Enters a symbol unless one of its name is in already.
  void Add(std::string_view name, ElfSymbol symbol) {
    const auto next = static_cast<uint32_t>(entries.size());
    if (by_name.FindOrInsert(name, next, [&](uint32_t e) { return entries[e].name; }) == next) {
      entries.push_back({name, symbol});
    }
  }
};

namespace {

// The bytes of string table section `index`, or nullptr when it cannot be
// read (libelf's elf_strptr would find no name in it either).
const Elf_Data* StringTableData(Elf* elf, size_t index) {
  Elf_Scn* scn = elf_getscn(elf, index);
  GElf_Shdr shdr;
  if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_STRTAB) {
    return nullptr;
  }
  const Elf_Data* data = elf_getdata(scn, nullptr);
  return data != nullptr && data->d_buf != nullptr ? data : nullptr;
}

// The name at `offset` of a string table: empty when it starts past the
// table's end or runs past it unterminated. (elf_strptr, once per symbol,
// took 0.8 ms of the 3.7 that indexing a small Go program's symbols did.)
std::string_view NameAt(const Elf_Data& table, uint64_t offset) {
  if (offset >= table.d_size) return {};
  const char* start = static_cast<const char*>(table.d_buf) + offset;
  const void* end = std::memchr(start, '\0', table.d_size - offset);
  if (end == nullptr) return {};
  return std::string_view(start, static_cast<size_t>(static_cast<const char*>(end) - start));
}

std::string MachineName(uint16_t machine) {
  switch (machine) {
    case EM_386:
      return "i386";
    case EM_ARM:
      return "32-bit ARM";
    case EM_PPC64:
      return "ppc64";
    case EM_S390:
      return "s390x";
    case EM_RISCV:
      return "riscv";
    case EM_MIPS:
      return "mips";
    case EM_LOONGARCH:
      return "loong64";
    default:
      return "machine " + std::to_string(machine);
  }
}

// Identifies the file ourselves first so the error says exactly what it is:
// not ELF, or not the class and byte order we read.
std::optional<Error> CheckIdent(const MappedBytes& image, const std::string& name) {
  static constexpr uint8_t kMagic[4] = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3};
  std::optional<Bytes> ident = image.Range(0, EI_NIDENT);
  if (!ident || std::memcmp(ident->data(), kMagic, 4) != 0) {
    return Error(ErrorKind::kNotGo, name, " is not an ELF file");
  }
  const uint8_t elf_class = (*ident)[EI_CLASS];
  const uint8_t elf_data = (*ident)[EI_DATA];
  if (elf_class == ELFCLASS32) {
    return Error(ErrorKind::kUnsupported, name, " is a 32-bit ELF; only 64-bit is supported");
  }
  if (elf_class != ELFCLASS64) {
    return Error(ErrorKind::kMalformed, name, ": unknown ELF class ", int{elf_class});
  }
  if (elf_data == ELFDATA2MSB) {
    return Error(ErrorKind::kUnsupported, name,
                 " is a big-endian ELF; only little-endian is supported");
  }
  if (elf_data != ELFDATA2LSB) {
    return Error(ErrorKind::kMalformed, name, ": unknown ELF data encoding ", int{elf_data});
  }
  return std::nullopt;
}

}  // namespace

void ElfFile::ElfEnd::operator()(Elf* elf) const { elf_end(elf); }

ElfFile::ElfFile() : symbols_(std::make_unique<SymbolTables>()) {}
ElfFile::ElfFile(ElfFile&&) noexcept = default;
ElfFile& ElfFile::operator=(ElfFile&& other) noexcept {
  if (this != &other) {
    // Drop the libelf handle before the image and descriptor it reads.
    elf_.reset();
    symbols_.reset();
    name_ = std::move(other.name_);
    image_ = std::move(other.image_);
    elf_ = std::move(other.elf_);
    type_ = other.type_;
    machine_ = other.machine_;
    entry_ = other.entry_;
    segments_ = std::move(other.segments_);
    sections_ = std::move(other.sections_);
    symbols_ = std::move(other.symbols_);
  }
  return *this;
}
ElfFile::~ElfFile() {
  // Members are destroyed in reverse order, so elf_ goes before the image.
}

ElfFile ElfFile::Open(const std::string& path, std::string display_name) {
  return TryOpen(path, std::move(display_name)).value();
}

Expected<ElfFile> ElfFile::TryOpen(const std::string& path, std::string display_name) {
  ElfFile file;
  file.name_ = display_name.empty() ? path : std::move(display_name);
  // Read, never mapped (see the header); OpenFile does not block on a
  // FIFO the target planted where we look.
  Expected<MappedBytes> image =
      MappedBytes::OpenFile(path, file.name_, MappedBytes::Access::kReadOnDemand, ErrorKind::kIo);
  if (!image) return image.error();
  file.image_ = std::move(image).value();
  if (file.image_.size() < EI_NIDENT) {
    return Error(ErrorKind::kNotGo, file.name_, " is not an ELF file (", file.image_.size(),
                 " bytes)");
  }
  if (std::optional<Error> bad = file.Load()) return std::move(*bad);
  return file;
}

ElfFile ElfFile::FromBytes(std::vector<uint8_t> bytes, std::string display_name) {
  ElfFile file;
  file.name_ = std::move(display_name);
  file.image_ = MappedBytes::Own(std::move(bytes));
  if (std::optional<Error> bad = file.Load()) throw std::move(*bad);
  return file;
}

std::optional<Bytes> ElfFile::FileRange(uint64_t offset, uint64_t size) const {
  return image_.Range(offset, size);
}

bool ElfFile::CopyFileRange(uint64_t offset, std::span<uint8_t> dst) const {
  return image_.CopyTo(offset, dst);
}

std::optional<Error> ElfFile::Load() {
  if (std::optional<Error> bad = CheckIdent(image_, name_)) return bad;

  InitLibelf();
  Elf* elf = nullptr;
  if (image_.fd() >= 0) {
    // libelf preads headers and section data into buffers of its own when
    // they are first asked for; a file cut short makes that call fail.
    elf = elf_begin(image_.fd(), ELF_C_READ, nullptr);
  } else {
    // elf_memory takes a non-const pointer; the image is our own vector, so
    // in-place conversion could never reach a file.
    const Bytes all = image_.All();
    elf = elf_memory(reinterpret_cast<char*>(const_cast<uint8_t*>(all.data())), all.size());
  }
  if (elf == nullptr) {
    return Error(ErrorKind::kMalformed, name_, ": libelf cannot read it: ", ElfErrorText());
  }
  elf_.reset(elf);
  if (elf_kind(elf) != ELF_K_ELF) {
    return Error(ErrorKind::kNotGo, name_, " is not an ELF file");
  }

  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) {
    return Error(ErrorKind::kMalformed, name_, ": bad ELF header: ", ElfErrorText());
  }
  if (ehdr.e_machine != EM_X86_64 && ehdr.e_machine != EM_AARCH64) {
    return Error(ErrorKind::kUnsupported, name_, " is an ELF for ", MachineName(ehdr.e_machine),
                 "; only x86-64 and aarch64 are supported");
  }
  type_ = ehdr.e_type;
  machine_ = ehdr.e_machine;
  entry_ = ehdr.e_entry;

  if (std::optional<Error> bad = ReadSegments(elf)) return bad;
  return ReadSections(elf);
}

std::optional<Error> ElfFile::ReadSegments(Elf* elf) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) {
    return Error(ErrorKind::kMalformed, name_, ": bad program header count: ", ElfErrorText());
  }
  segments_.reserve(phnum);
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr) {
      return Error(ErrorKind::kMalformed, name_, ": bad program header ", i, ": ", ElfErrorText());
    }
    segments_.push_back(ElfSegment{phdr.p_type, phdr.p_flags, phdr.p_offset, phdr.p_vaddr,
                                   phdr.p_filesz, phdr.p_memsz, phdr.p_align});
  }
  return std::nullopt;
}

std::optional<Error> ElfFile::ReadSections(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
    return Error(ErrorKind::kMalformed, name_, ": bad section name table index: ", ElfErrorText());
  }
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) {
      return Error(ErrorKind::kMalformed, name_, ": bad section header ", elf_ndxscn(scn), ": ",
                   ElfErrorText());
    }
    const char* section_name = elf_strptr(elf, shstrndx, shdr.sh_name);
    sections_.push_back(ElfSection{section_name != nullptr ? section_name : "", shdr.sh_type,
                                   shdr.sh_flags, shdr.sh_addr, shdr.sh_offset, shdr.sh_size});
  }
  return std::nullopt;
}

const ElfSection* ElfFile::FindSection(std::string_view name) const {
  for (const ElfSection& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::optional<Bytes> ElfFile::SectionData(std::string_view name) const {
  const ElfSection* s = FindSection(name);
  if (s == nullptr) return std::nullopt;
  if (s->type == SHT_NOBITS) return Bytes();
  std::optional<Bytes> data = image_.Range(s->offset, s->size);
  if (!data) {
    throw Error(ErrorKind::kMalformed, name_, ": section ", s->name, " [", Hex(s->offset), ", +",
                Hex(s->size), ") lies outside the ", image_.size(), "-byte file");
  }
  return data;
}

void ElfFile::IndexSymbols() const {
  SymbolTables& tables = *symbols_;
  std::call_once(tables.once, [&] {
    Elf* elf = elf_.get();
    // .symtab first so its entries win over .dynsym duplicates.
    for (uint32_t wanted : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
      for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) == nullptr) {
          throw Error(ErrorKind::kMalformed, name_, ": bad section header: ", ElfErrorText());
        }
        if (shdr.sh_type != wanted) continue;
        if (wanted == SHT_SYMTAB) tables.has_symtab = true;
        if (shdr.sh_entsize == 0) {
          throw Error(ErrorKind::kMalformed, name_, ": symbol table with entry size 0");
        }
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (data == nullptr) {
          throw Error(ErrorKind::kMalformed, name_, ": cannot read symbol table: ", ElfErrorText());
        }
        const size_t count = data->d_size / shdr.sh_entsize;
        const Elf_Data* names = StringTableData(elf, shdr.sh_link);
        if (names == nullptr) continue;  // no symbol of it has a name
        tables.entries.reserve(tables.entries.size() + count);
        tables.by_name.Reserve(tables.entries.size() + count);
        for (size_t i = 1; i < count; ++i) {
          GElf_Sym sym;
          if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) {
            throw Error(ErrorKind::kMalformed, name_, ": bad symbol ", i, ": ", ElfErrorText());
          }
          // Imports have no address in this file.
          if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0) continue;
          int type = GELF_ST_TYPE(sym.st_info);
          if (type == STT_SECTION || type == STT_FILE) continue;
          const std::string_view name = NameAt(*names, sym.st_name);
          if (!name.empty()) tables.Add(name, ElfSymbol{sym.st_value, sym.st_size});
        }
      }
    }
  });
}

std::optional<ElfSymbol> ElfFile::FindSymbol(std::string_view name) const {
  IndexSymbols();
  const SymbolTables& tables = *symbols_;
  const uint32_t at = tables.by_name.Find(name, [&](uint32_t e) { return tables.entries[e].name; });
  if (at == HashIndex::kNone) return std::nullopt;
  return tables.entries[at].symbol;
}

bool ElfFile::HasSymtab() const {
  IndexSymbols();
  return symbols_->has_symtab;
}

std::optional<Bytes> ElfFile::ReadVaddr(uint64_t vaddr, uint64_t size) const {
  std::optional<uint64_t> end = CheckedAdd(vaddr, size);
  if (!end) return std::nullopt;
  for (const ElfSegment& seg : segments_) {
    if (seg.type != PT_LOAD) continue;
    if (vaddr < seg.vaddr || *end > seg.vaddr + std::min(seg.filesz, seg.memsz)) continue;
    std::optional<uint64_t> off = CheckedAdd(seg.offset, vaddr - seg.vaddr);
    if (!off) return std::nullopt;
    return image_.Range(*off, size);
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::BytesToSegmentEnd(uint64_t vaddr) const {
  for (const ElfSegment& seg : segments_) {
    if (seg.type != PT_LOAD) continue;
    uint64_t backed = std::min(seg.filesz, seg.memsz);
    if (vaddr < seg.vaddr || vaddr - seg.vaddr >= backed) continue;
    return backed - (vaddr - seg.vaddr);
  }
  return std::nullopt;
}

std::optional<Bytes> ElfFile::ReadVaddrToSegmentEnd(uint64_t vaddr) const {
  const std::optional<uint64_t> size = BytesToSegmentEnd(vaddr);
  if (!size) return std::nullopt;
  return ReadVaddr(vaddr, *size);
}

template <typename Fn>
void ElfFile::ForEachNote(Fn fn) const {
  Elf* elf = elf_.get();
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr) continue;
    size_t offset = 0;
    GElf_Nhdr nhdr;
    size_t name_off = 0;
    size_t desc_off = 0;
    // gelf_getnote returns 0 at the end or on a truncated note.
    while ((offset = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
      const char* base = static_cast<const char*>(data->d_buf);
      std::string_view owner(base + name_off, nhdr.n_namesz);
      while (!owner.empty() && owner.back() == '\0') owner.remove_suffix(1);
      Bytes desc(reinterpret_cast<const uint8_t*>(base + desc_off), nhdr.n_descsz);
      if (fn(owner, nhdr.n_type, desc)) return;
    }
  }
}

std::string ElfFile::GnuBuildId() const {
  std::string hex;
  ForEachNote([&](std::string_view owner, uint32_t type, Bytes desc) {
    if (owner != "GNU" || type != NT_GNU_BUILD_ID) return false;
    static constexpr char kDigits[] = "0123456789abcdef";
    for (uint8_t b : desc) {
      hex.push_back(kDigits[b >> 4]);
      hex.push_back(kDigits[b & 15]);
    }
    return true;
  });
  return hex;
}

std::string ElfFile::GoBuildId() const {
  // cmd/link writes the Go build ID as a note with owner "Go" and type 4
  // (ELF_NOTE_GOBUILDID_TAG).
  constexpr uint32_t kGoBuildIdNoteType = 4;
  std::string id;
  ForEachNote([&](std::string_view owner, uint32_t type, Bytes desc) {
    if (owner != "Go" || type != kGoBuildIdNoteType) return false;
    id.assign(reinterpret_cast<const char*>(desc.data()), desc.size());
    while (!id.empty() && id.back() == '\0') id.pop_back();
    return true;
  });
  return id;
}

}  // namespace goheap2pprof
