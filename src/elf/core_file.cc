#include "elf/core_file.h"

#include <elf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "base/unique_fd.h"
#include "elf/libelf_calls.h"

namespace goheap2pprof {

namespace {

// Sizes of the x86-64 and aarch64 note structures (both LP64 with 32-bit
// uid_t, so the layouts agree): struct elf_prpsinfo is 136 bytes with
// pr_uid at 16, pr_pid at 24, pr_ppid at 28, pr_fname[16] at 40 and
// pr_psargs[80] at 56; struct elf_prstatus has pr_cursig (short) at 12.
constexpr uint64_t kPrpsinfoSize = 136;
constexpr uint64_t kPrstatusCursigOff = 12;
// Bounds on untrusted counts: a process has at most ~65530 mappings
// (vm.max_map_count default) and the auxv a few dozen entries.
constexpr uint64_t kMaxFileEntries = 1 << 20;
constexpr uint64_t kMaxAuxv = 1024;
constexpr uint64_t kMaxPathLen = 8192;  // PATH_MAX is 4096
constexpr uint64_t kHeaderPage = 4096;
// ELF_NOTE_GOBUILDID_TAG: cmd/link's note type for the Go build ID (owner "Go").
constexpr uint32_t kGoBuildIdTag = 4;

std::string ToHex(Bytes bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : bytes) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

std::string FixedString(ByteView v, uint64_t off, uint64_t len) {
  ByteView s = v.Sub(off, len);
  std::string out(reinterpret_cast<const char*>(s.data().data()), len);
  size_t nul = out.find('\0');
  if (nul != std::string::npos) out.resize(nul);
  return out;
}

uint64_t AlignUp(uint64_t v, uint64_t align) { return (v + align - 1) & ~(align - 1); }

// Walks the notes in `data` (4- or 8-byte aligned) calling fn(owner, type,
// desc); bounded by the data, stops at the first note that does not fit.
template <typename Fn>
void WalkNotes(Bytes data, uint64_t align, Fn fn) {
  ByteView v(data, "ELF notes");
  uint64_t off = 0;
  while (v.Has(off, 12)) {
    uint64_t namesz = v.U32(off), descsz = v.U32(off + 4);
    uint32_t type = v.U32(off + 8);
    uint64_t name_off = off + 12;
    uint64_t desc_off = AlignUp(name_off + namesz, align);
    if (!v.Has(name_off, namesz) || !v.Has(desc_off, descsz)) return;
    std::string_view owner(reinterpret_cast<const char*>(data.data() + name_off), namesz);
    while (!owner.empty() && owner.back() == '\0') owner.remove_suffix(1);
    fn(owner, type, data.subspan(desc_off, descsz));
    off = AlignUp(desc_off + descsz, align);
  }
}

}  // namespace

std::string_view CoreProducerName(CoreProducer producer) {
  switch (producer) {
    case CoreProducer::kKernel:
      return "the Linux kernel";
    case CoreProducer::kGdb:
      return "gdb (gcore)";
    case CoreProducer::kUnknown:
      break;
  }
  return "an unknown producer";
}

std::string SignalName(int32_t signo) {
  if (signo > 0 && signo < 65) {
    if (const char* abbrev = sigabbrev_np(signo)) return std::string("SIG") + abbrev;
  }
  return "signal " + std::to_string(signo);
}

std::optional<DumpedElfHeader> ParseDumpedElfHeader(Bytes page) {
  ByteView v(page, "ELF header page");
  static constexpr uint8_t kMagic[4] = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3};
  if (!v.Has(0, sizeof(Elf64_Ehdr)) || std::memcmp(page.data(), kMagic, 4) != 0 ||
      page[EI_CLASS] != ELFCLASS64 || page[EI_DATA] != ELFDATA2LSB) {
    return std::nullopt;
  }
  DumpedElfHeader h;
  h.type = v.U16(offsetof(Elf64_Ehdr, e_type));
  h.machine = v.U16(offsetof(Elf64_Ehdr, e_machine));
  h.entry = v.U64(offsetof(Elf64_Ehdr, e_entry));
  const uint64_t phoff = v.U64(offsetof(Elf64_Ehdr, e_phoff));
  const uint64_t phentsize = v.U16(offsetof(Elf64_Ehdr, e_phentsize));
  const uint64_t phnum = v.U16(offsetof(Elf64_Ehdr, e_phnum));
  if (phentsize != sizeof(Elf64_Phdr) || phoff > page.size()) return h;
  h.phdrs_complete = true;
  auto on_note = [&h](std::string_view owner, uint32_t type, Bytes desc) {
    if (owner == "GNU" && type == NT_GNU_BUILD_ID && h.gnu_build_id.empty()) {
      h.gnu_build_id = ToHex(desc);
    } else if (owner == "Go" && type == kGoBuildIdTag && h.go_build_id.empty()) {
      h.go_build_id.assign(reinterpret_cast<const char*>(desc.data()), desc.size());
      while (!h.go_build_id.empty() && h.go_build_id.back() == '\0') h.go_build_id.pop_back();
    }
  };
  for (uint64_t i = 0; i < phnum; ++i) {
    const uint64_t off = phoff + i * phentsize;  // phoff <= page size: no overflow
    if (!v.Has(off, phentsize)) {
      h.phdrs_complete = false;
      break;
    }
    ElfSegment s{
        v.U32(off + offsetof(Elf64_Phdr, p_type)),   v.U32(off + offsetof(Elf64_Phdr, p_flags)),
        v.U64(off + offsetof(Elf64_Phdr, p_offset)), v.U64(off + offsetof(Elf64_Phdr, p_vaddr)),
        v.U64(off + offsetof(Elf64_Phdr, p_filesz)), v.U64(off + offsetof(Elf64_Phdr, p_memsz)),
        v.U64(off + offsetof(Elf64_Phdr, p_align))};
    if (s.type == PT_LOAD) h.loads.push_back(s);
    if (s.type != PT_NOTE || !v.Has(s.offset, s.filesz)) continue;
    // File offset = offset in the page: the page is the file's first page.
    WalkNotes(page.subspan(s.offset, s.filesz), s.align == 8 ? 8 : 4, on_note);
  }
  // Go's linker covers only .note.go.buildid with its PT_NOTE; the
  // .note.gnu.build-id section right after it has no program header. So a
  // build ID still missing is looked for by its note header, 4-byte aligned
  // after the program headers (the rest of a Go binary's first page is the
  // notes and zero padding).
  const uint64_t scan_from = std::min<uint64_t>(
      page.size(), std::max<uint64_t>(sizeof(Elf64_Ehdr), AlignUp(phoff + phnum * phentsize, 4)));
  for (uint64_t off = AlignUp(scan_from, 4); v.Has(off, 16); off += 4) {
    const uint32_t namesz = v.U32(off), type = v.U32(off + 8);
    const bool gnu = namesz == 4 && type == NT_GNU_BUILD_ID &&
                     std::memcmp(page.data() + off + 12, "GNU", 4) == 0;
    const bool go =
        namesz == 3 && type == kGoBuildIdTag && std::memcmp(page.data() + off + 12, "Go\0", 4) == 0;
    if (!gnu && !go) continue;
    const uint64_t descsz = v.U32(off + 4);
    if (v.Has(off + 16, descsz)) on_note(gnu ? "GNU" : "Go", type, page.subspan(off + 16, descsz));
  }
  return h;
}

void CoreFile::ElfEnd::operator()(Elf* elf) const { elf_end(elf); }

CoreFile::CoreFile(CoreFile&&) noexcept = default;
CoreFile& CoreFile::operator=(CoreFile&& other) noexcept {
  if (this != &other) {
    elf_.reset();  // before the image it points into
    name_ = std::move(other.name_);
    image_ = std::move(other.image_);
    elf_ = std::move(other.elf_);
    machine_ = other.machine_;
    segments_ = std::move(other.segments_);
    files_ = std::move(other.files_);
    has_file_note_ = other.has_file_note_;
    file_page_size_ = other.file_page_size_;
    auxv_ = std::move(other.auxv_);
    process_ = std::move(other.process_);
    signal_ = other.signal_;
    threads_ = other.threads_;
    gdb_note_ = other.gdb_note_;
    producer_ = other.producer_;
  }
  return *this;
}
CoreFile::~CoreFile() = default;

CoreFile CoreFile::Open(const std::string& path) {
  CoreFile core;
  core.name_ = path;
  Expected<MappedBytes> image = MappedBytes::OpenFile(path, "core file " + path,
                                                      MappedBytes::Access::kMap, ErrorKind::kUsage);
  core.image_ = std::move(image).value();
  if (core.image_.size() == 0) throw Error(ErrorKind::kUsage, path, " is empty, not a core file");
  core.Load();
  return core;
}

CoreFile CoreFile::FromBytes(std::vector<uint8_t> bytes, std::string display_name) {
  CoreFile core;
  core.name_ = std::move(display_name);
  core.image_ = MappedBytes::Own(std::move(bytes));
  core.Load();
  return core;
}

void CoreFile::Load() {
  OpenElf();
  std::vector<Bytes> notes = ReadProgramHeaders();
  SortSegments();
  if (notes.empty()) throw Error(ErrorKind::kMalformed, name_, ": core has no notes (PT_NOTE)");
  for (Bytes n : notes) ParseNotes(n);

  if (gdb_note_ || (has_file_note_ && file_page_size_ == 1)) {
    producer_ = CoreProducer::kGdb;
  } else if (has_file_note_ && file_page_size_ >= 4096) {
    producer_ = CoreProducer::kKernel;
  }
}

void CoreFile::OpenElf() {
  const Bytes all = image_.All();
  const uint8_t* data = all.data();
  const size_t size = all.size();
  static constexpr uint8_t kMagic[4] = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3};
  if (size == 0) throw Error(ErrorKind::kUsage, name_, " is empty, not a core file");
  if (size < EI_NIDENT || std::memcmp(data, kMagic, 4) != 0) {
    throw Error(ErrorKind::kUsage, name_, " is not a core file (not ELF)");
  }
  if (data[EI_CLASS] != ELFCLASS64 || data[EI_DATA] != ELFDATA2LSB) {
    throw Error(ErrorKind::kUnsupported, name_,
                " is not a 64-bit little-endian ELF; only amd64 and arm64 cores are read");
  }
  InitLibelf();
  Elf* elf = elf_memory(reinterpret_cast<char*>(const_cast<uint8_t*>(data)), size);
  if (elf == nullptr) {
    throw Error(ErrorKind::kMalformed, name_, ": libelf cannot read it: ", ElfErrorText());
  }
  elf_.reset(elf);
  GElf_Ehdr ehdr;
  if (elf_kind(elf) != ELF_K_ELF || gelf_getehdr(elf, &ehdr) == nullptr) {
    throw Error(ErrorKind::kMalformed, name_, ": bad ELF header: ", ElfErrorText());
  }
  if (ehdr.e_type != ET_CORE) {
    throw Error(ErrorKind::kUsage, name_, " is not a core file (ELF type ", ehdr.e_type,
                ehdr.e_type == ET_EXEC || ehdr.e_type == ET_DYN ? ", an executable or library" : "",
                ")");
  }
  if (ehdr.e_machine != EM_X86_64 && ehdr.e_machine != EM_AARCH64) {
    throw Error(ErrorKind::kUnsupported, name_, " is a core of ELF machine ", ehdr.e_machine,
                "; only x86-64 and aarch64 are supported");
  }
  machine_ = ehdr.e_machine;
}

std::vector<Bytes> CoreFile::ReadProgramHeaders() {
  Elf* elf = elf_.get();
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) {
    throw Error(ErrorKind::kMalformed, name_, ": bad program header count: ", ElfErrorText());
  }
  if (phnum == 0) throw Error(ErrorKind::kMalformed, name_, ": core has no program headers");
  std::vector<Bytes> notes;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) {
      throw Error(ErrorKind::kMalformed, name_, ": bad program header ", i, ": ", ElfErrorText());
    }
    AddProgramHeader(ph, notes);
  }
  return notes;
}

void CoreFile::AddProgramHeader(const Elf64_Phdr& ph, std::vector<Bytes>& notes) {
  if (ph.p_type != PT_LOAD && ph.p_type != PT_NOTE) return;
  const Bytes all = image_.All();
  // A producer cut short (RLIMIT_CORE, a systemd-coredump size cap, a full
  // disk) leaves headers that promise bytes the file does not have.
  std::optional<uint64_t> file_end = CheckedAdd(ph.p_offset, ph.p_filesz);
  if (!file_end || *file_end > all.size()) {
    throw Error(ErrorKind::kMalformed, name_, " is truncated: ",
                ph.p_type == PT_NOTE ? "its notes" : "the segment at " + Hex(ph.p_vaddr),
                " (file bytes ", Hex(ph.p_offset), "..", Hex(ph.p_offset + ph.p_filesz), ") extend",
                ph.p_type == PT_NOTE ? "" : "s", " past the end of the ", all.size(), "-byte file")
        .WithHint(
            "the core was cut short while it was written (a small `ulimit -c`, a "
            "systemd-coredump size cap or a full disk); raise the limit and get a new "
            "core");
  }
  if (ph.p_type == PT_NOTE) {
    notes.push_back(Bytes(all.data() + ph.p_offset, ph.p_filesz));
    return;
  }
  std::optional<uint64_t> mem_end = CheckedAdd(ph.p_vaddr, ph.p_memsz);
  if (!mem_end) {
    throw Error(ErrorKind::kMalformed, name_, ": segment at ", Hex(ph.p_vaddr), " size ",
                Hex(ph.p_memsz), " wraps around the address space");
  }
  if (ph.p_memsz == 0) return;
  segments_.push_back(CoreSegment{ph.p_vaddr, ph.p_memsz, ph.p_offset,
                                  std::min(ph.p_filesz, ph.p_memsz), ph.p_flags});
}

void CoreFile::SortSegments() {
  std::sort(segments_.begin(), segments_.end(),
            [](const CoreSegment& a, const CoreSegment& b) { return a.vaddr < b.vaddr; });
  for (size_t i = 1; i < segments_.size(); ++i) {
    if (segments_[i].vaddr < segments_[i - 1].end()) {
      throw Error(ErrorKind::kMalformed, name_, ": segments at ", Hex(segments_[i - 1].vaddr),
                  " and ", Hex(segments_[i].vaddr), " overlap");
    }
  }
}

void CoreFile::ParseNotes(Bytes notes) {
  // Core notes are 4-byte aligned (the kernel's and gdb's writers).
  WalkNotes(notes, 4, [&](std::string_view owner, uint32_t type, Bytes desc) {
    ByteView v(desc, "core note");
    if (owner == "GDB") gdb_note_ = true;
    if (owner != "CORE") return;
    switch (type) {
      case NT_FILE:
        if (!has_file_note_) ParseFileNote(desc);
        break;
      case NT_AUXV:
        if (auxv_.empty()) ParseAuxv(desc);
        break;
      case NT_PRPSINFO:
        if (!process_ && v.Has(0, kPrpsinfoSize)) {
          CoreProcessInfo p;
          p.uid = v.U32(16);
          p.pid = v.I32(24);
          p.ppid = v.I32(28);
          p.comm = FixedString(v, 40, 16);
          p.psargs = FixedString(v, 56, 80);
          process_ = std::move(p);
        }
        break;
      case NT_SIGINFO:
        // gdb writes one per thread; the first is the process's.
        if ((!signal_ || !signal_->from_siginfo) && v.Has(0, 12)) {
          signal_ = CoreSignal{v.I32(0), v.I32(8), true};
        }
        break;
      case NT_PRSTATUS:
        ++threads_;
        if (!signal_ && v.Has(kPrstatusCursigOff, 2)) {
          signal_ = CoreSignal{static_cast<int16_t>(v.U16(kPrstatusCursigOff)), 0, false};
        }
        break;
      default:
        break;
    }
  });
}

void CoreFile::ParseFileNote(Bytes desc) {
  // count, page_size, count x (start, end, file_ofs), then count NUL-ended
  // names (fill_files_note in the kernel, gdb's linux-tdep.c).
  ByteView v(desc, "NT_FILE note");
  const uint64_t count = v.U64(0);
  const uint64_t page_size = v.U64(8);
  if (count > kMaxFileEntries || !v.Has(16, count * 24)) {
    throw Error(ErrorKind::kMalformed, name_, ": NT_FILE note claims ", count,
                " mappings but holds ", desc.size(), " bytes");
  }
  if (page_size == 0 || (page_size & (page_size - 1)) != 0 || page_size > (uint64_t{1} << 30)) {
    throw Error(ErrorKind::kMalformed, name_, ": NT_FILE page size ", page_size,
                " is not a power of two");
  }
  has_file_note_ = true;
  file_page_size_ = page_size;
  uint64_t name_off = 16 + count * 24;
  files_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t e = 16 + i * 24;
    CoreFileMapping m;
    m.start = v.U64(e);
    m.end = v.U64(e + 8);
    std::optional<uint64_t> offset = CheckedMul(v.U64(e + 16), page_size);
    if (!offset || m.end < m.start) {
      throw Error(ErrorKind::kMalformed, name_, ": NT_FILE entry ", i, " [", Hex(m.start), ", ",
                  Hex(m.end), ") is invalid");
    }
    m.file_offset = *offset;
    if (!v.Has(name_off, 1)) {
      throw Error(ErrorKind::kMalformed, name_, ": NT_FILE note holds fewer than ", count,
                  " names");
    }
    std::string_view path =
        v.CString(name_off, std::min<uint64_t>(kMaxPathLen, v.size() - name_off));
    m.path = std::string(path);
    name_off += path.size() + 1;
    files_.push_back(std::move(m));
  }
}

void CoreFile::ParseAuxv(Bytes desc) {
  ByteView v(desc, "NT_AUXV note");
  for (uint64_t off = 0; v.Has(off, 16) && auxv_.size() < kMaxAuxv; off += 16) {
    const uint64_t type = v.U64(off);
    if (type == AT_NULL) break;
    auxv_.emplace_back(type, v.U64(off + 8));
  }
}

std::optional<uint64_t> CoreFile::auxv(uint64_t type) const {
  for (const auto& [t, value] : auxv_) {
    if (t == type) return value;
  }
  return std::nullopt;
}
std::optional<uint64_t> CoreFile::auxv_entry() const { return auxv(AT_ENTRY); }
std::optional<uint64_t> CoreFile::auxv_phdr() const { return auxv(AT_PHDR); }

const CoreSegment* CoreFile::SegmentAt(uint64_t addr) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), addr,
                             [](uint64_t a, const CoreSegment& s) { return a < s.vaddr; });
  if (it == segments_.begin()) return nullptr;
  --it;
  return addr < it->end() ? &*it : nullptr;
}

const CoreFileMapping* CoreFile::FileMappingAt(uint64_t addr) const {
  for (const CoreFileMapping& m : files_) {
    if (addr >= m.start && addr < m.end) return &m;
  }
  return nullptr;
}

const CoreFileMapping* CoreFile::FirstMappingOf(const std::string& path) const {
  const CoreFileMapping* best = nullptr;
  for (const CoreFileMapping& m : files_) {
    if (m.path == path && m.file_offset == 0 && (best == nullptr || m.start < best->start)) {
      best = &m;
    }
  }
  return best;
}

std::optional<Bytes> CoreFile::Dumped(uint64_t addr, uint64_t len) const {
  const CoreSegment* seg = SegmentAt(addr);
  if (seg == nullptr) return std::nullopt;
  const uint64_t in_seg = addr - seg->vaddr;
  if (in_seg > seg->filesz || len > seg->filesz - in_seg) return std::nullopt;
  // offset + filesz <= the file's size was checked in Load.
  return bytes().subspan(seg->offset + in_seg, len);
}

std::optional<DumpedElfHeader> CoreFile::DumpedHeaderAt(uint64_t start) const {
  const CoreSegment* seg = SegmentAt(start);
  if (seg == nullptr) return std::nullopt;
  const uint64_t in_seg = start - seg->vaddr;
  if (in_seg >= seg->filesz) return std::nullopt;
  const uint64_t len = std::min(kHeaderPage, seg->filesz - in_seg);
  return ParseDumpedElfHeader(bytes().subspan(seg->offset + in_seg, len));
}

CoreMemoryReader::CoreMemoryReader(const CoreFile& core, const ElfFile* exe, std::string exe_path,
                                   uint64_t bias)
    : core_(core), exe_(exe), exe_path_(std::move(exe_path)), bias_(bias) {}

bool CoreMemoryReader::TryRead(uint64_t addr, std::span<uint8_t> dst) {
  if (!CheckedAdd(addr, dst.size())) return false;
  uint64_t done = 0;
  while (done < dst.size()) {
    const uint64_t cur = addr + done;
    const CoreSegment* seg = core_.SegmentAt(cur);
    if (seg == nullptr) {
      // Not in the core: gdb's gcore leaves out read-only file mappings
      // (the executable's .rodata) that the kernel would list empty.
      if (!ReadOnlyInExe(cur, dst.size() - done)) return false;
      if (!ReadFromExe(cur, dst.subspan(done))) return false;
      break;
    }
    const uint64_t n = std::min<uint64_t>(dst.size() - done, seg->end() - cur);
    if (!ReadFromSegment(*seg, cur, dst.subspan(done, n))) return false;
    done += n;
  }
  stats_.bytes_read += dst.size();
  return true;
}

bool CoreMemoryReader::ReadFromSegment(const CoreSegment& seg, uint64_t addr,
                                       std::span<uint8_t> dst) {
  uint64_t in_seg = addr - seg.vaddr;
  uint64_t done = 0;
  if (in_seg < seg.filesz) {
    const uint64_t n = std::min<uint64_t>(dst.size(), seg.filesz - in_seg);
    std::memcpy(dst.data(), core_.bytes().data() + seg.offset + in_seg, n);
    done = n;
  }
  if (done == dst.size()) return true;
  // Not dumped. Only read-only file-backed memory equals the file.
  if (seg.flags & PF_W) return false;
  return ReadFromExe(addr + done, dst.subspan(done));
}

bool CoreMemoryReader::ReadOnlyInExe(uint64_t addr, uint64_t len) const {
  if (exe_ == nullptr || addr < bias_) return false;
  const uint64_t vaddr = addr - bias_;
  for (const ElfSegment& s : exe_->segments()) {
    if (s.type == PT_LOAD && vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz &&
        len <= s.filesz - (vaddr - s.vaddr)) {
      return (s.flags & PF_W) == 0;
    }
  }
  return false;
}

bool CoreMemoryReader::ReadFromExe(uint64_t addr, std::span<uint8_t> dst) {
  if (exe_ == nullptr) return false;
  std::optional<Bytes> bytes;
  if (core_.has_file_note()) {
    // NT_FILE says which file and offset back the address: exactly what the
    // process's page cache held.
    const CoreFileMapping* m = core_.FileMappingAt(addr);
    if (m == nullptr || m->path != exe_path_ || dst.size() > m->end - addr) return false;
    std::optional<uint64_t> off = CheckedAdd(m->file_offset, addr - m->start);
    if (!off) return false;
    bytes = exe_->FileRange(*off, dst.size());
  } else {
    if (addr < bias_) return false;
    bytes = exe_->ReadVaddr(addr - bias_, dst.size());
  }
  if (!bytes) return false;
  std::memcpy(dst.data(), bytes->data(), dst.size());
  bytes_from_exe_ += dst.size();
  return true;
}

const uint8_t* CoreMemoryReader::View(uint64_t addr, uint64_t len) {
  std::optional<Bytes> bytes = core_.Dumped(addr, len);
  return bytes ? bytes->data() : nullptr;
}

namespace {

// The core's main module is opened by libdwfl from the `executable` given to
// dwfl_core_file_report; every other module is left without a file, so
// nothing is searched for on disk or fetched over the network (debuginfod).
int FindNoElf(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) { return -1; }
int FindNoDebuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*,
                    GElf_Word, char**) {
  return -1;
}

struct DwflEnd {
  void operator()(Dwfl* dwfl) const { dwfl_end(dwfl); }
};

}  // namespace

std::optional<DwflCoreModule> DwflModuleAt(const CoreFile& core, const std::string& executable,
                                           uint64_t addr) {
  static const Dwfl_Callbacks kCallbacks = {FindNoElf, FindNoDebuginfo, nullptr, nullptr};
  std::unique_ptr<Dwfl, DwflEnd> dwfl(dwfl_begin(&kCallbacks));
  if (!dwfl) return std::nullopt;
  dwfl_report_begin(dwfl.get());
  const int reported = dwfl_core_file_report(dwfl.get(), core.elf(),
                                             executable.empty() ? nullptr : executable.c_str());
  dwfl_report_end(dwfl.get(), nullptr, nullptr);
  if (reported < 0) return std::nullopt;
  Dwfl_Module* mod = dwfl_addrmodule(dwfl.get(), addr);
  if (mod == nullptr) return std::nullopt;
  DwflCoreModule out;
  Dwarf_Addr start = 0, end = 0;
  const char* name =
      dwfl_module_info(mod, nullptr, &start, &end, nullptr, nullptr, nullptr, nullptr);
  out.name = name != nullptr ? name : "";
  out.start = start;
  out.end = end;
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int len = dwfl_module_build_id(mod, &bits, &vaddr);
  if (len > 0 && bits != nullptr) out.build_id = ToHex(Bytes(bits, static_cast<size_t>(len)));
  GElf_Addr bias = 0;
  if (dwfl_module_getelf(mod, &bias) != nullptr) out.bias = bias;
  return out;
}

}  // namespace goheap2pprof
