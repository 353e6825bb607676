#include "elf/dwarf_types.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <isa-l/igzip_lib.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/huge_pages.h"
#include "base/mapped_bytes.h"

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

// The DIE that `die`'s DW_AT_type refers to. A type libdw cannot find may
// be in a unit not inflated yet: that is noted in `missed`.
bool TypeOf(Dwarf_Die* die, Dwarf_Die* type, bool& missed) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, DW_AT_type, &attr) == nullptr) return false;
  if (dwarf_formref_die(&attr, type) != nullptr) return true;
  missed = true;
  return false;
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
// inflated by us into space after the file's bytes in that image, and our
// copy of their headers then describes plain sections there: inflating
// .debug_info was most of a capture's "identify" pass with zlib's inflate
// (which libdw uses). We inflate with ISA-L's streaming inflate (as fast
// here as libdeflate's whole-buffer one: 2.6 against 2.5 ms for a Go 1.19
// binary's 1.76 MB). The small sections are inflated whole; .debug_info a
// step at a time, and its header says the section ends where the last whole
// unit inflated so far ends; libdw is opened again on each step. Go's
// runtime units, which the capture's lookups read, end 22% of the way into
// helm's 22.6 MB (whose check took 37 ms inflating it whole, 13 ms now),
// and inflating was the most CPU a small capture spent on anything.
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

// A zlib-compressed section inflated into its place in the image with
// ISA-L's streaming inflate, the compressed bytes read from the file as it
// goes: whole (InflateAll), or as far as lookups need (Grow, .debug_info's).
class SectionInflater {
 public:
  SectionInflater(const ElfFile& elf, const Inflation& job, uint8_t* out)
      : elf_(elf), job_(job), out_(out), state_(std::make_unique<inflate_state>()) {
    isal_inflate_init(state_.get());
    state_->crc_flag = ISAL_ZLIB;  // the zlib header, and its Adler-32 checked at the end
  }

  const Inflation& job() const { return job_; }
  uint64_t size() const { return job_.size; }
  uint64_t inflated() const { return inflated_; }
  bool complete() const { return finished_; }
  // Where the last unit wholly inflated ends (the section's size when
  // complete): libdw is shown that much.
  uint64_t visible() const { return complete() ? job_.size : visible_; }

  // Inflates all of it. Throws as Grow.
  void InflateAll() { InflateTo(job_.size); }

  // Inflates a step more: at least kStep bytes (an eighth of the section
  // for a big one), then on until one more unit is whole, or to the end.
  // Throws kMalformed when the stream is corrupt or does not inflate to
  // exactly the size its header states.
  void Grow() {
    const uint64_t before = visible();
    uint64_t target = inflated_ + std::max(kStep, job_.size / 8);
    while (!complete()) {
      InflateTo(std::min(target, job_.size));
      FindVisibleEnd();
      if (visible() > before) return;
      target = inflated_ + kStep;
    }
  }

 private:
  static constexpr uint64_t kStep = 256 * 1024;
  static constexpr size_t kInputChunk = 64 * 1024;

  [[noreturn]] void Corrupt(const std::string& what) const {
    throw Error(ErrorKind::kMalformed, elf_.name(), ": cannot read its DWARF: section ",
                elf_.sections()[job_.index].name, what);
  }
  [[noreturn]] void WrongSize() const {
    Corrupt(" does not inflate to the size its header states (" + std::to_string(job_.size) +
            " bytes)");
  }

  // The next piece of the compressed stream, when ISA-L has taken the last.
  void Refill() {
    if (state_->avail_in > 0 || consumed_ == job_.compressed_size) return;
    input_.resize(std::min<uint64_t>(kInputChunk, job_.compressed_size - consumed_));
    if (!elf_.CopyFileRange(job_.compressed_offset + consumed_, input_)) {
      throw Error(ErrorKind::kMalformed, elf_.name(), ": its DWARF section ",
                  elf_.sections()[job_.index].name, " runs past the end of the file");
    }
    consumed_ += input_.size();
    state_->next_in = input_.data();
    state_->avail_in = static_cast<uint32_t>(input_.size());
  }

  // Inflates until `target` bytes are out (short of the section's size),
  // or to the end of the stream, which must come exactly at that size.
  void InflateTo(uint64_t target) {
    uint8_t spare = 0;  // at the size: the stream must end without a byte more
    while (!finished_ && !(inflated_ == target && target < job_.size)) {
      Refill();
      const bool at_size = inflated_ == job_.size;
      state_->next_out = at_size ? &spare : out_ + inflated_;
      state_->avail_out = at_size ? 1 : static_cast<uint32_t>(target - inflated_);
      const uint32_t in_before = state_->avail_in;
      const uint32_t out_before = state_->avail_out;
      // Any answer but OK (an error, or a preset dictionary: zlib sections
      // have none) is a stream we do not read.
      if (isal_inflate(state_.get()) != ISAL_DECOMP_OK) Corrupt(" is not a valid zlib stream");
      if (at_size && state_->avail_out == 0) WrongSize();
      inflated_ = state_->total_out;
      finished_ = state_->block_state == ISAL_BLOCK_FINISH;
      if (finished_ && inflated_ != job_.size) WrongSize();
      // Room left, and no input: the stream stops short.
      const bool dry = state_->avail_in == 0 && consumed_ == job_.compressed_size;
      if (!finished_ && state_->avail_out > 0 && dry) WrongSize();
      // Neither input taken nor output made: a loop over a file's bytes
      // ends even if ISA-L stops moving without saying why.
      const bool stuck = state_->avail_in == in_before && state_->avail_out == out_before;
      if (!finished_ && stuck) Corrupt(" is not a valid zlib stream");
    }
  }

  // Moves visible_ past each unit now wholly inflated (its initial length:
  // 4 bytes, or 0xffffffff and 8). A length no unit has leaves the section
  // hidden from there until it is all inflated.
  void FindVisibleEnd() {
    while (!odd_length_ && inflated_ - visible_ >= 4) {
      uint32_t length32 = 0;
      std::memcpy(&length32, out_ + visible_, 4);
      uint64_t header = 4;
      uint64_t length = length32;
      if (length32 == 0xffffffff) {
        if (inflated_ - visible_ < 12) return;
        std::memcpy(&length, out_ + visible_ + 4, 8);
        header = 12;
      } else if (length32 >= 0xfffffff0) {
        odd_length_ = true;
        return;
      }
      if (length > inflated_ - visible_ - header) return;
      visible_ += header + length;
    }
  }

  const ElfFile& elf_;
  Inflation job_;
  uint8_t* out_;
  std::unique_ptr<inflate_state> state_;
  std::vector<uint8_t> input_;
  uint64_t consumed_ = 0;  // compressed bytes handed to ISA-L
  uint64_t inflated_ = 0;
  uint64_t visible_ = 0;
  bool odd_length_ = false;
  bool finished_ = false;
};

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

// Our copy of the header of `job`'s section: `size` plain bytes at its
// place in the image.
void DescribeInflated(MappedBytes& image, const Elf64_Ehdr& ehdr, const Inflation& job,
                      uint64_t size) {
  Elf64_Shdr shdr = ReadShdr(image, ehdr, job.index);
  shdr.sh_flags &= ~uint64_t{SHF_COMPRESSED};
  shdr.sh_offset = job.image_offset;
  shdr.sh_size = size;
  shdr.sh_addralign = 1;
  WriteShdr(image, ehdr, job.index, shdr);
}

// The planned inflation that is done lazily, if any: .debug_info's.
std::optional<Inflation> TakeLazyInflation(const ElfFile& elf, std::vector<Inflation>& planned) {
  for (auto it = planned.begin(); it != planned.end(); ++it) {
    if (elf.sections()[it->index].name == ".debug_info") {
      const Inflation lazy = *it;
      planned.erase(it);
      return lazy;
    }
  }
  return std::nullopt;
}

// Puts into the image the sections libdw reads: the type sections (the
// planned ones inflated, their headers saying so; the lazy one is left to
// Grow), the name tables and Go 1.18's .zdebug_ sections; the other
// debug sections' headers say they have no bytes.
void WriteSections(const ElfFile& elf, const Elf64_Ehdr& ehdr, bool standard_headers,
                   const std::vector<Inflation>& inflations, const std::optional<Inflation>& lazy,
                   MappedBytes& image) {
  size_t next_inflation = 0;
  for (size_t i = 0; i < elf.sections().size(); ++i) {
    const ElfSection& s = elf.sections()[i];
    if (s.type == SHT_NOBITS) continue;
    if (lazy && lazy->index == i) continue;
    if (next_inflation < inflations.size() && inflations[next_inflation].index == i) {
      const Inflation& job = inflations[next_inflation++];
      SectionInflater(elf, job, image.writable_data() + job.image_offset).InflateAll();
      DescribeInflated(image, ehdr, job, job.size);
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

namespace {

struct ElfEnd {
  void operator()(Elf* elf) const { elf_end(elf); }
};
struct DwarfEnd {
  void operator()(Dwarf* dwarf) const { dwarf_end(dwarf); }
};

}  // namespace

struct DwarfTypes::View {
  std::string name;  // the file, for messages
  // What libelf reads: a private copy of the parts of the file image that
  // libdw needs (see above). Declared first, so it outlives the handles.
  MappedBytes image;
  Elf64_Ehdr ehdr{};
  std::optional<SectionInflater> info;  // .debug_info, when inflated lazily
  // Our libelf handle on image, then libdw's on it; destroyed in reverse.
  std::unique_ptr<Elf, ElfEnd> elf;
  std::unique_ptr<Dwarf, DwarfEnd> dwarf;

  void OpenHandles() {
    dwarf.reset();  // before the Elf it reads from
    elf.reset();
    Elf* handle = elf_memory(reinterpret_cast<char*>(image.writable_data()), image.size());
    if (handle == nullptr) {
      throw Error(ErrorKind::kMalformed, name, ": libelf cannot read it: ", elf_errmsg(-1));
    }
    elf.reset(handle);
    Dwarf* d = dwarf_begin_elf(handle, DWARF_C_READ, nullptr);
    if (d == nullptr) {
      throw Error(ErrorKind::kMalformed, name, ": cannot read its DWARF: ", DwarfErrorText());
    }
    dwarf.reset(d);
  }

  // Inflates .debug_info a step further and shows libdw the units now
  // whole; false when it is all there already. DIE offsets stay as they
  // were; Dwarf_Die and Dwarf_CU values from before do not.
  bool Grow() {
    if (!info || info->complete()) return false;
    info->Grow();
    DescribeInflated(image, ehdr, info->job(), info->visible());
    OpenHandles();
    return true;
  }
};

DwarfTypes::DwarfTypes() = default;
DwarfTypes::DwarfTypes(DwarfTypes&&) noexcept = default;
DwarfTypes& DwarfTypes::operator=(DwarfTypes&&) noexcept = default;
DwarfTypes::~DwarfTypes() = default;

std::optional<DwarfTypes> DwarfTypes::Open(const ElfFile& elf,
                                           std::vector<std::string> preferred_units) {
  if (!HasDebugInfo(elf)) return std::nullopt;
  DwarfTypes types;
  types.pass_ = preferred_units.empty() ? 1 : 0;
  types.preferred_units_ = std::move(preferred_units);
  types.view_ = std::make_unique<View>();
  View& view = *types.view_;
  view.name = elf.name();
  // ElfFile has checked that this is a 64-bit little-endian ELF.
  Elf64_Ehdr& ehdr = view.ehdr;
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
  std::vector<Inflation> inflations = PlanInflations(elf, standard_headers, image_size);
  const std::optional<Inflation> lazy = TakeLazyInflation(elf, inflations);
  view.image = MappedBytes::Zeroed(image_size, "the DWARF of " + elf.name());
  MappedBytes& image = view.image;
  // The inflated sections fill their space (the file's part is sparse).
  if (image_size > elf.file_size()) {
    const uint64_t inflated_at = (elf.file_size() + 7) & ~uint64_t{7};
    AdviseHugePages(image.writable_data() + inflated_at, image_size - inflated_at);
  }
  CopyRange(elf, image, 0, sizeof(ehdr));
  CopyRange(elf, image, ehdr.e_phoff, uint64_t{ehdr.e_phnum} * ehdr.e_phentsize);
  CopyRange(elf, image, ehdr.e_shoff, section_count * ehdr.e_shentsize);
  WriteSections(elf, ehdr, standard_headers, inflations, lazy, image);
  // The name table under another name: find it by index.
  if (ehdr.e_shstrndx != SHN_UNDEF && ehdr.e_shstrndx < section_count) {
    const ElfSection& names = elf.sections()[ehdr.e_shstrndx - 1];
    if (names.type != SHT_NOBITS) CopyRange(elf, image, names.offset, names.size);
  }
  if (lazy) {
    view.info.emplace(elf, *lazy, image.writable_data() + lazy->image_offset);
    view.Grow();
  } else {
    view.OpenHandles();
  }
  return types;
}

std::pair<uint64_t, uint64_t> DwarfTypes::InflatedInfo() const {
  if (!view_->info) return {0, 0};
  return {view_->info->inflated(), view_->info->size()};
}

namespace {

// Adds the named top-level structs and variables of the unit `cu_die` to
// `structs` and `variables` (the first definition of each name), counting
// the entries in `indexed_dies`. Throws kMalformed for a bad entry, or past
// kMaxTopLevelDies in all. `file` is for messages.
void IndexTopLevel(Dwarf_Die* cu_die, const std::string& file, uint64_t& indexed_dies,
                   std::unordered_map<std::string, uint64_t>& structs,
                   std::unordered_map<std::string, uint64_t>& variables) {
  Dwarf_Die die;
  int rc = dwarf_child(cu_die, &die);
  while (rc == 0) {
    if (++indexed_dies > kMaxTopLevelDies) {
      throw Error(ErrorKind::kMalformed, file, ": DWARF has more than ", kMaxTopLevelDies,
                  " top-level entries (or their sibling links loop)");
    }
    const int tag = dwarf_tag(&die);
    if ((tag == DW_TAG_structure_type || tag == DW_TAG_variable) &&
        !dwarf_hasattr(&die, DW_AT_declaration)) {
      if (const char* name = dwarf_diename(&die); name != nullptr && *name != '\0') {
        auto& index = tag == DW_TAG_structure_type ? structs : variables;
        index.try_emplace(name, dwarf_dieoffset(&die));
      }
    }
    Dwarf_Die sibling;
    rc = dwarf_siblingof(&die, &sibling);
    die = sibling;
  }
  if (rc < 0) {
    throw Error(ErrorKind::kMalformed, file, ": bad DWARF entry in the unit at ",
                Hex(dwarf_dieoffset(cu_die)), ": ", DwarfErrorText());
  }
}

}  // namespace

bool DwarfTypes::IndexNextUnit() const {
  Dwarf* dwarf = view_->dwarf.get();
  Dwarf_Die cu_die;
  for (;;) {
    if (pass_ > 1) return false;
    Dwarf_Off next = 0;
    size_t header_size = 0;
    // dwarf_next_unit reads DWARF 2 to 5 unit headers alike (Go 1.27 writes 5).
    int unit_rc = dwarf_next_unit(dwarf, next_unit_, &next, &header_size, nullptr, nullptr, nullptr,
                                  nullptr, nullptr, nullptr);
    if (unit_rc == 0 && dwarf_offdie(dwarf, next_unit_ + header_size, &cu_die) == nullptr) {
      unit_rc = -1;
    }
    if (unit_rc != 0 && view_->Grow()) {  // more units, or a whole view to fail in
      dwarf = view_->dwarf.get();
      continue;
    }
    if (unit_rc < 0) {
      pass_ = 2;
      throw Error(ErrorKind::kMalformed, view_->name,
                  ": bad DWARF unit header: ", DwarfErrorText());
    }
    if (unit_rc != 0) {  // past the last unit: the next pass starts at the first
      ++pass_;
      next_unit_ = 0;
      continue;
    }
    next_unit_ = next;
    const char* unit_name = dwarf_diename(&cu_die);
    bool preferred = false;
    for (const std::string& p : preferred_units_)
      preferred |= unit_name != nullptr && p == unit_name;
    // Pass 0 indexes the preferred units, pass 1 the others.
    if (preferred == (pass_ == 0)) break;
  }
  // A bad unit ends the walk: no later lookup reads it again.
  const int pass = pass_;
  pass_ = 2;
  IndexTopLevel(&cu_die, view_->name, indexed_dies_, structs_, variables_);
  pass_ = pass;
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

template <typename Read>
auto DwarfTypes::WithEnoughInfo(Read read) const -> decltype(read()) {
  for (;;) {
    missed_ = false;
    auto result = read();
    if (!missed_ || !view_->Grow()) return result;
  }
}

std::optional<DwarfStruct> DwarfTypes::StructAt(uint64_t die_offset) const {
  return WithEnoughInfo([&] { return ReadStruct(die_offset); });
}

std::optional<DwarfStruct> DwarfTypes::ReadStruct(uint64_t die_offset) const {
  Dwarf_Die die;
  if (dwarf_offdie(view_->dwarf.get(), die_offset, &die) == nullptr) {
    missed_ = true;
    return std::nullopt;
  }
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
      throw Error(ErrorKind::kMalformed, view_->name, ": DWARF struct ", s.name, " has more than ",
                  kMaxMembers, " members");
    }
    if (dwarf_tag(&child) == DW_TAG_member) {
      DwarfMember m;
      const char* member_name = dwarf_diename(&child);
      m.name = member_name != nullptr ? member_name : "";
      m.offset = UdataAttr(&child, DW_AT_data_member_location);
      // libdw follows the type's references for its size and to peel it:
      // a failure may be a unit not inflated yet.
      Dwarf_Die type;
      Dwarf_Word type_size = 0;
      Dwarf_Die peeled;
      if (TypeOf(&child, &type, missed_)) {
        if (dwarf_aggregate_size(&type, &type_size) == 0) {
          m.size = type_size;
        } else {
          missed_ = true;
        }
        if (dwarf_peel_type(&type, &peeled) != 0) {
          missed_ = true;
        } else if (dwarf_tag(&peeled) == DW_TAG_structure_type) {
          m.struct_die = dwarf_dieoffset(&peeled);
        }
      }
      s.members.push_back(std::move(m));
    }
    Dwarf_Die sibling;
    rc = dwarf_siblingof(&child, &sibling);
    child = sibling;
  }
  if (rc < 0) {
    throw Error(ErrorKind::kMalformed, view_->name, ": bad DWARF member of struct ", s.name, ": ",
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
  return WithEnoughInfo([&] { return ReadVariableStruct(*offset); });
}

std::optional<DwarfStruct> DwarfTypes::ReadVariableStruct(uint64_t die_offset) const {
  Dwarf_Die var;
  Dwarf_Die type;
  Dwarf_Die peeled;
  if (dwarf_offdie(view_->dwarf.get(), die_offset, &var) == nullptr) {
    missed_ = true;
    return std::nullopt;
  }
  if (!TypeOf(&var, &type, missed_)) return std::nullopt;
  if (dwarf_peel_type(&type, &peeled) != 0) {
    missed_ = true;
    return std::nullopt;
  }
  if (dwarf_tag(&peeled) != DW_TAG_structure_type) return std::nullopt;
  return ReadStruct(dwarf_dieoffset(&peeled));
}

}  // namespace goheap2pprof
