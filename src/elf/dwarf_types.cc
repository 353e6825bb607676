#include "elf/dwarf_types.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <libdeflate.h>
#include <libelf.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/huge_pages.h"

namespace goheap2pprof {

namespace {

// Walks over the file's bytes are bounded: a DW_AT_sibling pointing
// backwards would otherwise loop. Go's own binaries have some 10^5
// top-level DIEs and structs of at most a few hundred members.
constexpr uint64_t kMaxTopLevelDies = 20'000'000;
constexpr uint64_t kMaxMembers = 100'000;

std::string DwarfErrorText() {
  const char* text = dwarf_errmsg(-1);
  return text != nullptr ? text : "unknown libdw error";
}

bool IsDebugSection(std::string_view name) {
  return name.starts_with(".debug_") || name.starts_with(".zdebug_");
}

// The debug sections that type and variable entries are read from. libdw
// decompresses every debug section when it opens a file, and line tables,
// frames, location and range lists are most of Go's DWARF, so the others are
// hidden from it (see DwarfTypes::Open).
bool IsTypeSection(std::string_view name) {
  if (name.starts_with(".zdebug_")) name.remove_prefix(2);
  for (std::string_view wanted : {".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str",
                                  ".debug_str_offsets", ".debug_addr"}) {
    if (name == wanted) return true;
  }
  return false;
}

bool HasDebugInfo(const ElfFile& elf) {
  for (std::string_view name : {".debug_info", ".zdebug_info"}) {
    const ElfSection* s = elf.FindSection(name);
    if (s != nullptr && s->type != SHT_NOBITS && s->size > 0) return true;
  }
  return false;
}

std::optional<uint64_t> UdataAttr(Dwarf_Die* die, unsigned int name) {
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (dwarf_attr(die, name, &attr) == nullptr || dwarf_formudata(&attr, &value) != 0) {
    return std::nullopt;
  }
  return value;
}

// The DIE that `die`'s DW_AT_type refers to.
bool TypeOf(Dwarf_Die* die, Dwarf_Die* type) {
  Dwarf_Attribute attr;
  return dwarf_attr_integrate(die, DW_AT_type, &attr) != nullptr &&
         dwarf_formref_die(&attr, type) != nullptr;
}

}  // namespace

// libelf decompresses a SHF_COMPRESSED section by rewriting its section
// header in the image it was given, so libdw cannot be handed the ElfFile's
// image, which others read (and which is const). It gets a private copy
// instead: a zero-filled anonymous image the size of the file, into which
// only the ELF, program and section headers, the section name table and the
// debug sections are copied. The pages never written cost no memory.
//
// The zlib-compressed type sections (what Go writes by default) are
// inflated by us, with libdeflate, into space after the file's bytes in that
// image, and our copy of their headers then describes plain sections there:
// inflating .debug_info was most of a capture's "identify" pass with zlib's
// inflate (which libdw uses), and libdeflate's whole-buffer decoder takes
// well under half the time.
namespace {

// Copies [offset, offset+size) of `elf`'s file into the same place of
// `image`; a range outside the file is left zero (libelf then reports it).
void CopyRange(const ElfFile& elf, MappedBytes& image, uint64_t offset, uint64_t size) {
  if (size > 0 && offset <= image.size() && size <= image.size() - offset) {
    elf.CopyFileRange(offset, std::span<uint8_t>(image.writable_data() + offset, size));
  }
}

// An inflated section is at most this big (Go's largest .debug_info, of a
// binary of some hundreds of MiB, is well below), and no more than deflate
// can expand its input: 1032 to 1 (the ratio of a stream of maximal-length
// matches), plus a block's worth of slack. A header that claims more is
// left to libdw, which then reports the section.
constexpr uint64_t kMaxInflatedSection = uint64_t{1} << 30;
constexpr uint64_t kMaxDeflateRatio = 1032;

// A type section we inflate: the section's index in ElfFile::sections(),
// where its compressed bytes are in the file, and where its inflated bytes
// go in the image.
struct Inflation {
  size_t index = 0;
  uint64_t compressed_offset = 0;
  uint64_t compressed_size = 0;
  uint64_t image_offset = 0;
  uint64_t size = 0;
};

// The inflation plan for section `s`, or nullopt to leave it to libdw (not
// zlib-compressed, or a header we do not trust).
std::optional<Inflation> PlanInflation(const ElfFile& elf, const ElfSection& s) {
  Elf64_Chdr chdr;
  if ((s.flags & SHF_COMPRESSED) == 0 || s.size <= sizeof(chdr) ||
      !elf.CopyFileRange(s.offset,
                         std::span<uint8_t>(reinterpret_cast<uint8_t*>(&chdr), sizeof(chdr)))) {
    return std::nullopt;
  }
  const uint64_t compressed = s.size - sizeof(chdr);
  if (chdr.ch_type != ELFCOMPRESS_ZLIB || chdr.ch_size == 0 || chdr.ch_size > kMaxInflatedSection ||
      chdr.ch_size / kMaxDeflateRatio > compressed + 1) {
    return std::nullopt;
  }
  return Inflation{.compressed_offset = s.offset + sizeof(chdr),
                   .compressed_size = compressed,
                   .size = chdr.ch_size};
}

struct DecompressorFree {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// Inflates `job`'s zlib stream from the file into its place in `image`.
// Throws kMalformed when the stream is corrupt or does not inflate to
// exactly the size its header states.
void Inflate(const ElfFile& elf, const Inflation& job, MappedBytes& image,
             libdeflate_decompressor* decompressor) {
  const std::string& name = elf.sections()[job.index].name;
  std::vector<uint8_t> compressed(job.compressed_size);
  if (!elf.CopyFileRange(job.compressed_offset, compressed)) {
    throw Error(ErrorKind::kMalformed, elf.name(), ": its DWARF section ", name,
                " runs past the end of the file");
  }
  const libdeflate_result rc =
      libdeflate_zlib_decompress(decompressor, compressed.data(), compressed.size(),
                                 image.writable_data() + job.image_offset, job.size, nullptr);
  if (rc != LIBDEFLATE_SUCCESS) {
    throw Error(ErrorKind::kMalformed, elf.name(), ": cannot read its DWARF: section ", name,
                rc == LIBDEFLATE_BAD_DATA ? " is not a valid zlib stream"
                                          : " does not inflate to the size its header states (" +
                                                std::to_string(job.size) + " bytes)");
  }
}

// Where each section we inflate goes: after the file's bytes (image_size on
// entry), 8-aligned; image_size grows to hold them.
std::vector<Inflation> PlanInflations(const ElfFile& elf, bool standard_headers,
                                      uint64_t& image_size) {
  std::vector<Inflation> inflations;
  for (size_t i = 0; standard_headers && i < elf.sections().size(); ++i) {
    const ElfSection& s = elf.sections()[i];
    if (s.type == SHT_NOBITS || !IsTypeSection(s.name) || s.name.starts_with(".zdebug_")) continue;
    if (std::optional<Inflation> job = PlanInflation(elf, s)) {
      job->index = i;
      job->image_offset = (image_size + 7) & ~uint64_t{7};
      image_size = job->image_offset + job->size;
      inflations.push_back(*job);
    }
  }
  return inflations;
}

// Our copy of section i's header (standard_headers only).
Elf64_Shdr ReadShdr(MappedBytes& image, const Elf64_Ehdr& ehdr, size_t i) {
  Elf64_Shdr shdr;
  std::memcpy(&shdr, image.writable_data() + ehdr.e_shoff + (i + 1) * sizeof(Elf64_Shdr),
              sizeof(shdr));
  return shdr;
}

void WriteShdr(MappedBytes& image, const Elf64_Ehdr& ehdr, size_t i, const Elf64_Shdr& shdr) {
  std::memcpy(image.writable_data() + ehdr.e_shoff + (i + 1) * sizeof(Elf64_Shdr), &shdr,
              sizeof(shdr));
}

// Puts into the image the sections libdw reads: the type sections (the
// planned ones inflated, their headers saying so), the name tables and
// Go 1.18's .zdebug_ sections; the other debug sections' headers say they
// have no bytes.
void WriteSections(const ElfFile& elf, const Elf64_Ehdr& ehdr, bool standard_headers,
                   const std::vector<Inflation>& inflations, MappedBytes& image) {
  std::unique_ptr<libdeflate_decompressor, DecompressorFree> decompressor;
  if (!inflations.empty()) {
    decompressor.reset(libdeflate_alloc_decompressor());
    if (decompressor == nullptr) throw Error(ErrorKind::kIo, "out of memory for a decompressor");
  }
  size_t next_inflation = 0;
  for (size_t i = 0; i < elf.sections().size(); ++i) {
    const ElfSection& s = elf.sections()[i];
    if (s.type == SHT_NOBITS) continue;
    if (next_inflation < inflations.size() && inflations[next_inflation].index == i) {
      const Inflation& job = inflations[next_inflation++];
      Inflate(elf, job, image, decompressor.get());
      Elf64_Shdr shdr = ReadShdr(image, ehdr, i);
      shdr.sh_flags &= ~uint64_t{SHF_COMPRESSED};
      shdr.sh_offset = job.image_offset;
      shdr.sh_size = job.size;
      shdr.sh_addralign = 1;
      WriteShdr(image, ehdr, i, shdr);
    } else if (IsTypeSection(s.name) || s.name == ".shstrtab") {
      CopyRange(elf, image, s.offset, s.size);
    } else if (s.name.starts_with(".zdebug_")) {
      // Go 1.18's GNU-style compressed sections: libdw decompresses each one
      // it sees and does not read a hidden .zdebug_ section as absent, so
      // they are all copied (they are a few hundred KiB at that version).
      CopyRange(elf, image, s.offset, s.size);
    } else if (IsDebugSection(s.name) && standard_headers) {
      // Not needed: our copy of its header says it has no bytes, which
      // libdw skips instead of decompressing.
      Elf64_Shdr shdr = ReadShdr(image, ehdr, i);
      shdr.sh_type = SHT_NOBITS;
      WriteShdr(image, ehdr, i, shdr);
    }
  }
}

}  // namespace

void DwarfTypes::ElfEnd::operator()(Elf* elf) const { elf_end(elf); }
void DwarfTypes::DwarfEnd::operator()(Dwarf* dwarf) const { dwarf_end(dwarf); }

DwarfTypes::DwarfTypes(DwarfTypes&&) noexcept = default;
DwarfTypes::~DwarfTypes() {
  // Members go in reverse order: dwarf_, then elf_, then image_.
}
DwarfTypes& DwarfTypes::operator=(DwarfTypes&& other) noexcept {
  if (this != &other) {
    dwarf_.reset();  // before the Elf it reads from, and that before its image
    elf_.reset();
    name_ = std::move(other.name_);
    image_ = std::move(other.image_);
    elf_ = std::move(other.elf_);
    dwarf_ = std::move(other.dwarf_);
    preferred_units_ = std::move(other.preferred_units_);
    indexed_unit_ = other.indexed_unit_;
    pass_ = other.pass_;
    indexed_dies_ = other.indexed_dies_;
    structs_ = std::move(other.structs_);
    variables_ = std::move(other.variables_);
  }
  return *this;
}

std::optional<DwarfTypes> DwarfTypes::Open(const ElfFile& elf,
                                           std::vector<std::string> preferred_units) {
  if (!HasDebugInfo(elf)) return std::nullopt;
  DwarfTypes types;
  types.name_ = elf.name();
  types.pass_ = preferred_units.empty() ? 1 : 0;
  types.preferred_units_ = std::move(preferred_units);
  // ElfFile has checked that this is a 64-bit little-endian ELF.
  Elf64_Ehdr ehdr;
  if (!elf.CopyFileRange(0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(&ehdr), sizeof(ehdr)))) {
    throw Error(ErrorKind::kMalformed, elf.name(), ": shorter than an ELF header");
  }
  // Section 0 is not in sections(); with extended numbering it holds the
  // real counts, which ElfFile has already used.
  const uint64_t section_count = elf.sections().size() + 1;
  const bool standard_headers =
      ehdr.e_shentsize == sizeof(Elf64_Shdr) && ehdr.e_shoff <= elf.file_size() &&
      section_count * sizeof(Elf64_Shdr) <= elf.file_size() - ehdr.e_shoff;
  uint64_t image_size = elf.file_size();
  const std::vector<Inflation> inflations = PlanInflations(elf, standard_headers, image_size);
  types.image_ = MappedBytes::Zeroed(image_size, "the DWARF of " + elf.name());
  MappedBytes& image = types.image_;
  // The inflated sections fill their space whole (the file's part is sparse).
  if (!inflations.empty()) {
    const uint64_t inflated_at = inflations.front().image_offset;
    AdviseHugePages(image.writable_data() + inflated_at, image_size - inflated_at);
  }
  CopyRange(elf, image, 0, sizeof(ehdr));
  CopyRange(elf, image, ehdr.e_phoff, uint64_t{ehdr.e_phnum} * ehdr.e_phentsize);
  CopyRange(elf, image, ehdr.e_shoff, section_count * ehdr.e_shentsize);
  WriteSections(elf, ehdr, standard_headers, inflations, image);
  // The name table under another name: find it by index.
  if (ehdr.e_shstrndx != SHN_UNDEF && ehdr.e_shstrndx < section_count) {
    const ElfSection& names = elf.sections()[ehdr.e_shstrndx - 1];
    if (names.type != SHT_NOBITS) CopyRange(elf, image, names.offset, names.size);
  }
  Elf* handle = elf_memory(reinterpret_cast<char*>(image.writable_data()), image.size());
  if (handle == nullptr) {
    throw Error(ErrorKind::kMalformed, elf.name(), ": libelf cannot read it: ", elf_errmsg(-1));
  }
  types.elf_.reset(handle);
  Dwarf* dwarf = dwarf_begin_elf(handle, DWARF_C_READ, nullptr);
  if (dwarf == nullptr) {
    throw Error(ErrorKind::kMalformed, elf.name(), ": cannot read its DWARF: ", DwarfErrorText());
  }
  types.dwarf_.reset(dwarf);
  return types;
}

bool DwarfTypes::IndexNextUnit() const {
  Dwarf_Die cu_die;
  for (;;) {
    if (pass_ > 1) return false;
    Dwarf_CU* next = nullptr;
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    // dwarf_get_units reads DWARF 2 to 5 unit headers alike (Go 1.27 writes 5).
    const int unit_rc =
        dwarf_get_units(dwarf_.get(), indexed_unit_, &next, &version, &unit_type, &cu_die, nullptr);
    if (unit_rc < 0) {
      pass_ = 2;
      throw Error(ErrorKind::kMalformed, name_, ": bad DWARF unit header: ", DwarfErrorText());
    }
    if (unit_rc != 0) {  // past the last unit: the next pass starts at the first
      ++pass_;
      indexed_unit_ = nullptr;
      continue;
    }
    indexed_unit_ = next;
    const char* unit_name = dwarf_diename(&cu_die);
    bool preferred = false;
    for (const std::string& p : preferred_units_)
      preferred |= unit_name != nullptr && p == unit_name;
    // Pass 0 indexes the preferred units, pass 1 the others.
    if (preferred == (pass_ == 0)) break;
  }
  Dwarf_Die die;
  int rc = dwarf_child(&cu_die, &die);
  while (rc == 0) {
    if (++indexed_dies_ > kMaxTopLevelDies) {
      pass_ = 2;
      throw Error(ErrorKind::kMalformed, name_, ": DWARF has more than ", kMaxTopLevelDies,
                  " top-level entries (or their sibling links loop)");
    }
    const int tag = dwarf_tag(&die);
    if ((tag == DW_TAG_structure_type || tag == DW_TAG_variable) &&
        !dwarf_hasattr(&die, DW_AT_declaration)) {
      if (const char* name = dwarf_diename(&die); name != nullptr && *name != '\0') {
        auto& index = tag == DW_TAG_structure_type ? structs_ : variables_;
        index.try_emplace(name, dwarf_dieoffset(&die));
      }
    }
    Dwarf_Die sibling;
    rc = dwarf_siblingof(&die, &sibling);
    die = sibling;
  }
  if (rc < 0) {
    pass_ = 2;
    throw Error(ErrorKind::kMalformed, name_, ": bad DWARF entry in the unit at ",
                Hex(dwarf_dieoffset(&cu_die)), ": ", DwarfErrorText());
  }
  return true;
}

std::optional<uint64_t> DwarfTypes::Lookup(const std::unordered_map<std::string, uint64_t>& index,
                                           std::string_view name) const {
  const std::string key(name);
  do {
    if (auto it = index.find(key); it != index.end()) return it->second;
  } while (IndexNextUnit());
  return std::nullopt;
}

std::optional<DwarfStruct> DwarfTypes::StructAt(uint64_t die_offset) const {
  Dwarf_Die die;
  if (dwarf_offdie(dwarf_.get(), die_offset, &die) == nullptr) return std::nullopt;
  std::optional<uint64_t> size = UdataAttr(&die, DW_AT_byte_size);
  if (!size) return std::nullopt;
  DwarfStruct s;
  const char* name = dwarf_diename(&die);
  s.name = name != nullptr ? name : "";
  s.size = *size;
  Dwarf_Die child;
  int rc = dwarf_child(&die, &child);
  while (rc == 0) {
    if (s.members.size() >= kMaxMembers) {
      throw Error(ErrorKind::kMalformed, name_, ": DWARF struct ", s.name, " has more than ",
                  kMaxMembers, " members");
    }
    if (dwarf_tag(&child) == DW_TAG_member) {
      DwarfMember m;
      const char* member_name = dwarf_diename(&child);
      m.name = member_name != nullptr ? member_name : "";
      m.offset = UdataAttr(&child, DW_AT_data_member_location);
      Dwarf_Die type;
      Dwarf_Word type_size = 0;
      if (TypeOf(&child, &type) && dwarf_aggregate_size(&type, &type_size) == 0) {
        m.size = type_size;
      }
      Dwarf_Die peeled;
      if (TypeOf(&child, &type) && dwarf_peel_type(&type, &peeled) == 0 &&
          dwarf_tag(&peeled) == DW_TAG_structure_type) {
        m.struct_die = dwarf_dieoffset(&peeled);
      }
      s.members.push_back(std::move(m));
    }
    Dwarf_Die sibling;
    rc = dwarf_siblingof(&child, &sibling);
    child = sibling;
  }
  if (rc < 0) {
    throw Error(ErrorKind::kMalformed, name_, ": bad DWARF member of struct ", s.name, ": ",
                DwarfErrorText());
  }
  return s;
}

std::optional<DwarfStruct> DwarfTypes::FindStruct(std::string_view name) const {
  const std::optional<uint64_t> offset = Lookup(structs_, name);
  if (!offset) return std::nullopt;
  return StructAt(*offset);
}

std::optional<DwarfStruct> DwarfTypes::MemberStruct(const DwarfMember& member) const {
  if (!member.struct_die) return std::nullopt;
  return StructAt(*member.struct_die);
}

std::optional<DwarfStruct> DwarfTypes::FindVariableStruct(std::string_view name) const {
  const std::optional<uint64_t> offset = Lookup(variables_, name);
  if (!offset) return std::nullopt;
  Dwarf_Die var;
  Dwarf_Die type;
  Dwarf_Die peeled;
  if (dwarf_offdie(dwarf_.get(), *offset, &var) == nullptr || !TypeOf(&var, &type) ||
      dwarf_peel_type(&type, &peeled) != 0 || dwarf_tag(&peeled) != DW_TAG_structure_type) {
    return std::nullopt;
  }
  return StructAt(dwarf_dieoffset(&peeled));
}

}  // namespace goheap2pprof
