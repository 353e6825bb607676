#include "elf/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "base/unique_fd.h"

namespace goheap2pprof {

// Built on first FindSymbol; the once_flag makes concurrent first lookups safe.
struct ElfFile::SymbolTables {
  std::once_flag once;
  bool has_symtab = false;
  // Keys point into the string tables of the file image, which lives as long
  // as the ElfFile (moves keep the image where it is).
  std::unordered_map<std::string_view, ElfSymbol> by_name;
};

namespace {

std::string ElfErrorText() { return elf_errmsg(-1) ? elf_errmsg(-1) : "unknown libelf error"; }

// elf_version must be called once per process before any other libelf call.
void InitLibelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  if (!ok) {
    throw Error(ErrorKind::kInternal,
                "libelf is older than the ELF version it was built for: ", ElfErrorText());
  }
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

}  // namespace

ElfFile::Mapping::Mapping(Mapping&& other) noexcept
    : addr(std::exchange(other.addr, nullptr)), size(std::exchange(other.size, 0)) {}

ElfFile::Mapping& ElfFile::Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (addr != nullptr) munmap(addr, size);
    addr = std::exchange(other.addr, nullptr);
    size = std::exchange(other.size, 0);
  }
  return *this;
}

ElfFile::Mapping::~Mapping() {
  if (addr != nullptr) munmap(addr, size);
}

void ElfFile::ElfEnd::operator()(Elf* elf) const { elf_end(elf); }

ElfFile::ElfFile() : symbols_(std::make_unique<SymbolTables>()) {}
ElfFile::ElfFile(ElfFile&&) noexcept = default;
ElfFile& ElfFile::operator=(ElfFile&& other) noexcept {
  if (this != &other) {
    // Drop the libelf handle before the image it points into.
    elf_.reset();
    symbols_.reset();
    name_ = std::move(other.name_);
    owned_ = std::move(other.owned_);
    mapping_ = std::move(other.mapping_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
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
  ElfFile file;
  file.name_ = display_name.empty() ? path : std::move(display_name);
  // Files under /proc/<pid>/root and map_files are the target's to choose: a
  // FIFO there would block a plain open until someone writes to it, and a
  // terminal would become ours. O_NONBLOCK makes the open return at once;
  // the type is checked before anything is read.
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) {
    int err = errno;
    ErrorKind kind = (err == EACCES || err == EPERM) ? ErrorKind::kPermission : ErrorKind::kIo;
    throw Error(kind, "cannot open ", file.name_, ": ", std::strerror(err));
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    throw Error(ErrorKind::kIo, "cannot stat ", file.name_, ": ", std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorKind::kIo, file.name_, " is not a regular file");
  }
  if (st.st_size < static_cast<off_t>(EI_NIDENT)) {
    throw Error(ErrorKind::kNotGo, file.name_, " is not an ELF file (", st.st_size, " bytes)");
  }
  size_t size = static_cast<size_t>(st.st_size);
  // Private and writable: libelf may convert data in place, which must never
  // reach the file.
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) {
    throw Error(ErrorKind::kIo, "cannot map ", file.name_, ": ", std::strerror(errno));
  }
  file.mapping_ = Mapping(addr, size);
  file.data_ = static_cast<const uint8_t*>(addr);
  file.size_ = size;
  file.Load();
  return file;
}

ElfFile ElfFile::FromBytes(std::vector<uint8_t> bytes, std::string display_name) {
  ElfFile file;
  file.name_ = std::move(display_name);
  file.owned_ = std::move(bytes);
  file.data_ = file.owned_.data();
  file.size_ = file.owned_.size();
  file.Load();
  return file;
}

Bytes ElfFile::bytes() const { return Bytes(data_, size_); }

void ElfFile::Load() {
  // Identify the file ourselves first so the error says exactly what it is.
  static constexpr uint8_t kMagic[4] = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3};
  if (size_ < EI_NIDENT || std::memcmp(data_, kMagic, 4) != 0) {
    throw Error(ErrorKind::kNotGo, name_, " is not an ELF file");
  }
  if (data_[EI_CLASS] == ELFCLASS32) {
    throw Error(ErrorKind::kUnsupported, name_, " is a 32-bit ELF; only 64-bit is supported");
  }
  if (data_[EI_CLASS] != ELFCLASS64) {
    throw Error(ErrorKind::kMalformed, name_, ": unknown ELF class ", int{data_[EI_CLASS]});
  }
  if (data_[EI_DATA] == ELFDATA2MSB) {
    throw Error(ErrorKind::kUnsupported, name_,
                " is a big-endian ELF; only little-endian is supported");
  }
  if (data_[EI_DATA] != ELFDATA2LSB) {
    throw Error(ErrorKind::kMalformed, name_, ": unknown ELF data encoding ", int{data_[EI_DATA]});
  }

  InitLibelf();
  // elf_memory takes a non-const pointer; the image is a private mapping or
  // our own vector, so in-place conversion could never reach the file.
  Elf* elf = elf_memory(reinterpret_cast<char*>(const_cast<uint8_t*>(data_)), size_);
  if (elf == nullptr) {
    throw Error(ErrorKind::kMalformed, name_, ": libelf cannot read it: ", ElfErrorText());
  }
  elf_.reset(elf);
  if (elf_kind(elf) != ELF_K_ELF) {
    throw Error(ErrorKind::kNotGo, name_, " is not an ELF file");
  }

  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) {
    throw Error(ErrorKind::kMalformed, name_, ": bad ELF header: ", ElfErrorText());
  }
  if (ehdr.e_machine != EM_X86_64 && ehdr.e_machine != EM_AARCH64) {
    throw Error(ErrorKind::kUnsupported, name_, " is an ELF for ", MachineName(ehdr.e_machine),
                "; only x86-64 and aarch64 are supported");
  }
  type_ = ehdr.e_type;
  machine_ = ehdr.e_machine;
  entry_ = ehdr.e_entry;

  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) {
    throw Error(ErrorKind::kMalformed, name_, ": bad program header count: ", ElfErrorText());
  }
  segments_.reserve(phnum);
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr) {
      throw Error(ErrorKind::kMalformed, name_, ": bad program header ", i, ": ", ElfErrorText());
    }
    segments_.push_back(ElfSegment{phdr.p_type, phdr.p_flags, phdr.p_offset, phdr.p_vaddr,
                                   phdr.p_filesz, phdr.p_memsz, phdr.p_align});
  }

  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
    throw Error(ErrorKind::kMalformed, name_, ": bad section name table index: ", ElfErrorText());
  }
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) {
      throw Error(ErrorKind::kMalformed, name_, ": bad section header ", elf_ndxscn(scn), ": ",
                  ElfErrorText());
    }
    const char* section_name = elf_strptr(elf, shstrndx, shdr.sh_name);
    sections_.push_back(ElfSection{section_name != nullptr ? section_name : "", shdr.sh_type,
                                   shdr.sh_flags, shdr.sh_addr, shdr.sh_offset, shdr.sh_size});
  }
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
  ByteView file(bytes(), name_);
  if (!file.Has(s->offset, s->size)) {
    throw Error(ErrorKind::kMalformed, name_, ": section ", s->name, " [", Hex(s->offset), ", +",
                Hex(s->size), ") lies outside the ", size_, "-byte file");
  }
  return bytes().subspan(s->offset, s->size);
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
        size_t count = data->d_size / shdr.sh_entsize;
        for (size_t i = 1; i < count; ++i) {
          GElf_Sym sym;
          if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) {
            throw Error(ErrorKind::kMalformed, name_, ": bad symbol ", i, ": ", ElfErrorText());
          }
          // Imports have no address in this file.
          if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0) continue;
          int type = GELF_ST_TYPE(sym.st_info);
          if (type == STT_SECTION || type == STT_FILE) continue;
          const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
          if (name == nullptr || *name == '\0') continue;
          tables.by_name.try_emplace(std::string_view(name), ElfSymbol{sym.st_value, sym.st_size});
        }
      }
    }
  });
}

std::optional<ElfSymbol> ElfFile::FindSymbol(std::string_view name) const {
  IndexSymbols();
  auto it = symbols_->by_name.find(name);
  if (it == symbols_->by_name.end()) return std::nullopt;
  return it->second;
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
    uint64_t off = seg.offset + (vaddr - seg.vaddr);
    if (!ByteView(bytes(), name_).Has(off, size)) return std::nullopt;
    return bytes().subspan(off, size);
  }
  return std::nullopt;
}

std::optional<Bytes> ElfFile::ReadVaddrToSegmentEnd(uint64_t vaddr) const {
  for (const ElfSegment& seg : segments_) {
    if (seg.type != PT_LOAD) continue;
    uint64_t backed = std::min(seg.filesz, seg.memsz);
    if (vaddr < seg.vaddr || vaddr - seg.vaddr >= backed) continue;
    return ReadVaddr(vaddr, backed - (vaddr - seg.vaddr));
  }
  return std::nullopt;
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
  constexpr uint32_t kGoBuildIdTag = 4;
  std::string id;
  ForEachNote([&](std::string_view owner, uint32_t type, Bytes desc) {
    if (owner != "Go" || type != kGoBuildIdTag) return false;
    id.assign(reinterpret_cast<const char*>(desc.data()), desc.size());
    while (!id.empty() && id.back() == '\0') id.pop_back();
    return true;
  });
  return id;
}

}  // namespace goheap2pprof
