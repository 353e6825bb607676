// An ELF core file (written by the kernel or by gdb's gcore), opened with
// libelf, knowing nothing about Go: the dumped memory segments, the notes
// that describe the process (NT_FILE, NT_AUXV, NT_PRPSINFO, NT_SIGINFO,
// NT_PRSTATUS), the build IDs and program headers of a file from the ELF
// header page the producers dump, and a MemoryReader over the dumped memory.
// Every field is untrusted: counts and sizes are bounded by the note that
// holds them, and a segment that lies beyond the end of the file (a core cut
// short by RLIMIT_CORE or a size cap) is refused by name.
//
//   CoreFile core = CoreFile::Open("core");
//   uint64_t entry = core.auxv_entry().value();
//   const CoreFileMapping* exe = core.FileMappingAt(entry);
//   ElfFile elf = ElfFile::Open(exe->path);
//   CoreMemoryReader mem(core, &elf, entry - elf.entry());
//   uint64_t head = mem.ReadU64(mbuckets, "runtime.mbuckets");
#pragma once

#include <elf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "base/mapped_bytes.h"
#include "elf/elf_file.h"
#include "proc/memory_reader.h"

struct Elf;

namespace goheap2pprof {

// Who wrote the core, told from what each writes: gdb writes NT_FILE with a
// page size of 1 and a "GDB" note (NT_GDB_TDESC); the kernel writes the
// real page size and no GDB note.
enum class CoreProducer { kKernel, kGdb, kUnknown };
std::string_view CoreProducerName(CoreProducer producer);

// One PT_LOAD of the core: [vaddr, vaddr+memsz) in the process, of which the
// first filesz bytes are in the core at offset.
struct CoreSegment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t offset = 0;
  uint64_t filesz = 0;
  uint32_t flags = 0;  // PF_R | PF_W | PF_X
  uint64_t end() const { return vaddr + memsz; }
};

// One NT_FILE entry: [start, end) maps path from file_offset (in bytes,
// already multiplied by the note's page size).
struct CoreFileMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  std::string path;
};

// From NT_PRPSINFO.
struct CoreProcessInfo {
  int32_t pid = 0;
  int32_t ppid = 0;
  uint32_t uid = 0;
  std::string comm;    // pr_fname, at most 16 bytes
  std::string psargs;  // pr_psargs, the command line cut to 80 bytes
};

// From NT_SIGINFO (or, without it, the first NT_PRSTATUS's pr_cursig).
struct CoreSignal {
  int32_t signo = 0;
  int32_t code = 0;
  bool from_siginfo = false;
};

// What the dumped first page of an ELF file's first mapping tells: its
// loadable segments (if the program headers lie in that page) and build
// IDs (if their notes do).
struct DumpedElfHeader {
  uint16_t type = 0;
  uint16_t machine = 0;
  uint64_t entry = 0;
  std::vector<ElfSegment> loads;  // PT_LOAD headers read from the page
  bool phdrs_complete = false;    // every program header lay inside the page
  std::string gnu_build_id;       // hex; empty if absent or not in the page
  std::string go_build_id;        // empty if absent or not in the page
};

// Parses an ELF header page (bytes of the file from offset 0, as dumped).
// nullopt if it does not start like a 64-bit little-endian ELF.
std::optional<DumpedElfHeader> ParseDumpedElfHeader(Bytes page);

// Signal name for messages ("SIGABRT"), or "signal N".
std::string SignalName(int32_t signo);

class CoreFile {
 public:
  // Maps and parses the core. Throws kUsage if the file is empty or not an
  // ELF core, kIo if it cannot be read, kUnsupported for a core of another
  // class, byte order or machine, and kMalformed for a corrupt or truncated
  // core (naming the segment that lies beyond the end of the file).
  static CoreFile Open(const std::string& path);
  // Same, from bytes in memory (tests, fuzzers).
  static CoreFile FromBytes(std::vector<uint8_t> bytes, std::string display_name);

  CoreFile(CoreFile&&) noexcept;
  CoreFile& operator=(CoreFile&&) noexcept;
  ~CoreFile();

  const std::string& name() const { return name_; }
  uint16_t machine() const { return machine_; }
  Bytes bytes() const { return image_.All(); }
  // The libelf handle of the core (for libdwfl); valid as long as this.
  Elf* elf() const { return elf_.get(); }

  // PT_LOAD segments, sorted by address, not overlapping.
  const std::vector<CoreSegment>& segments() const { return segments_; }
  // NT_FILE entries in note order; empty if the core has no NT_FILE.
  const std::vector<CoreFileMapping>& file_mappings() const { return files_; }
  bool has_file_note() const { return has_file_note_; }
  // The NT_FILE note's page size (4096 from the kernel, 1 from gdb).
  uint64_t file_note_page_size() const { return file_page_size_; }
  std::optional<uint64_t> auxv(uint64_t type) const;
  std::optional<uint64_t> auxv_entry() const;  // AT_ENTRY
  std::optional<uint64_t> auxv_phdr() const;   // AT_PHDR
  const std::optional<CoreProcessInfo>& process() const { return process_; }
  const std::optional<CoreSignal>& signal() const { return signal_; }
  size_t threads() const { return threads_; }  // NT_PRSTATUS notes
  CoreProducer producer() const { return producer_; }

  // The segment holding addr, or nullptr.
  const CoreSegment* SegmentAt(uint64_t addr) const;
  // The NT_FILE entry holding addr, or nullptr.
  const CoreFileMapping* FileMappingAt(uint64_t addr) const;
  // The NT_FILE entry of path at file offset 0 with the lowest address (the
  // first mapping of that file), or nullptr.
  const CoreFileMapping* FirstMappingOf(const std::string& path) const;
  // Bytes [addr, addr+len) as dumped in the core, if the whole range lies
  // in the dumped part of one segment; valid as long as this.
  std::optional<Bytes> Dumped(uint64_t addr, uint64_t len) const;
  // The dumped ELF header page of the file mapped first at start (up to one
  // page, less if less is dumped), parsed; nullopt if not dumped or not ELF.
  std::optional<DumpedElfHeader> DumpedHeaderAt(uint64_t start) const;

 private:
  struct ElfEnd {
    void operator()(Elf* elf) const;
  };

  CoreFile() = default;
  void Load();
  // The steps of Load: checks the ELF header and opens it with libelf; reads
  // the program headers into segments_ (sorted, none overlapping) and returns
  // the notes.
  void OpenElf();
  std::vector<Bytes> ReadProgramHeaders();
  void AddProgramHeader(const Elf64_Phdr& ph, std::vector<Bytes>& notes);
  void SortSegments();
  void ParseNotes(Bytes notes);
  void ParseFileNote(Bytes desc);
  void ParseAuxv(Bytes desc);

  std::string name_;
  // The core, mapped: it is the user's file, not the target's, and can be
  // gigabytes, of which a capture touches little. Declared before elf_,
  // which points into it.
  MappedBytes image_;
  std::unique_ptr<Elf, ElfEnd> elf_;
  uint16_t machine_ = 0;
  std::vector<CoreSegment> segments_;
  std::vector<CoreFileMapping> files_;
  bool has_file_note_ = false;
  uint64_t file_page_size_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> auxv_;
  std::optional<CoreProcessInfo> process_;
  std::optional<CoreSignal> signal_;
  size_t threads_ = 0;
  bool gdb_note_ = false;
  CoreProducer producer_ = CoreProducer::kUnknown;
};

// Memory of the process as the core holds it. A range the core did not dump
// (filesz < memsz: text and read-only data, which producers leave out by
// default) reads from `exe` only where the segment is not writable and
// NT_FILE says the executable backs it: there the file's bytes are what the
// process saw. Writable memory that was not dumped reads as unmapped, since
// the file holds its initial values, not the process's.
class CoreMemoryReader : public MemoryReader {
 public:
  // exe may be null (nothing read from a file); exe_path is the NT_FILE path
  // of the executable's mappings. A core without NT_FILE reads exe's
  // PT_LOADs placed at bias instead.
  CoreMemoryReader(const CoreFile& core, const ElfFile* exe, std::string exe_path, uint64_t bias);
  bool TryRead(uint64_t addr, std::span<uint8_t> dst) override;
  const uint8_t* View(uint64_t addr, uint64_t len) override;
  ReadStats stats() const override { return stats_; }
  // Bytes served from the executable file rather than the core.
  uint64_t bytes_from_exe() const { return bytes_from_exe_; }

 private:
  // Copies [addr, addr+dst.size()) that lies inside seg; false if unreadable.
  bool ReadFromSegment(const CoreSegment& seg, uint64_t addr, std::span<uint8_t> dst);
  bool ReadFromExe(uint64_t addr, std::span<uint8_t> dst);
  // [addr, addr+len) lies in one read-only, file-backed PT_LOAD of exe.
  bool ReadOnlyInExe(uint64_t addr, uint64_t len) const;

  const CoreFile& core_;
  const ElfFile* exe_;
  std::string exe_path_;
  uint64_t bias_;
  ReadStats stats_;
  uint64_t bytes_from_exe_ = 0;
};

// What libdwfl's dwfl_core_file_report finds at an address of a core: the
// module, its load bias and the build ID it read from the core's memory.
struct DwflCoreModule {
  std::string name;
  uint64_t start = 0;
  uint64_t end = 0;
  std::optional<uint64_t> bias;  // nullopt when libdwfl could not open its ELF
  std::string build_id;          // hex; empty if libdwfl found none
};
// nullopt when libdwfl reports no module at addr. executable: the file to
// use for the main module (may be empty).
std::optional<DwflCoreModule> DwflModuleAt(const CoreFile& core, const std::string& executable,
                                           uint64_t addr);

}  // namespace goheap2pprof
