// Builds small ELF core files in memory for the core reader's unit tests and
// fuzz seeds: PT_LOAD segments with or without their bytes, and the notes
// the kernel and gdb write (NT_FILE, NT_AUXV, NT_PRPSINFO, NT_SIGINFO,
// NT_PRSTATUS, a GDB note), laid out as the producers lay them out: ELF
// header, program headers, one PT_NOTE, then the dumped segment bytes.
//
//   SyntheticCore c;
//   c.AddSegment(0x400000, 0x2000, PF_R | PF_X, HeaderPage(...));
//   c.AddFileNote(4096, {{0x400000, 0x402000, 0, "/bin/app"}});
//   c.AddAuxv({{AT_ENTRY, 0x401000}});
//   std::vector<uint8_t> bytes = c.Build();
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "elf_bytes.h"

namespace goheap2pprof::testing_core {

using testing_elf::AppendNote;
using testing_elf::PutAt;

template <typename T>
inline void Append(std::vector<uint8_t>& b, const T& v) {
  PutAt(b, b.size(), v);
}

struct FileEntry {
  uint64_t start, end, page_offset;  // page_offset in units of the note's page size
  std::string path;
};

// The first page of an executable as the producers dump it: ELF header,
// program headers (the given PT_LOADs plus a PT_NOTE), the Go build ID note
// under the PT_NOTE and the GNU build ID note after it without a program
// header, as Go's linker lays them out. Empty IDs are left out.
inline std::vector<uint8_t> HeaderPage(uint16_t type, uint64_t entry,
                                       const std::vector<Elf64_Phdr>& loads,
                                       const std::string& go_id, const std::vector<uint8_t>& gnu_id,
                                       size_t page = 4096) {
  std::vector<uint8_t> b(page, 0);
  Elf64_Ehdr eh = testing_elf::Elf64Header(type, EM_X86_64);
  eh.e_entry = entry;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<uint16_t>(loads.size() + 1);
  PutAt(b, 0, eh);
  std::vector<uint8_t> notes;
  if (!go_id.empty()) AppendNote(notes, "Go", 4, std::vector<uint8_t>(go_id.begin(), go_id.end()));
  const size_t go_size = notes.size();
  if (!gnu_id.empty()) AppendNote(notes, "GNU", NT_GNU_BUILD_ID, gnu_id);
  const size_t notes_off = page - 0x100;
  Elf64_Phdr note{};
  note.p_type = PT_NOTE;
  note.p_flags = PF_R;
  note.p_offset = notes_off;
  note.p_filesz = note.p_memsz = go_size;
  note.p_align = 4;
  PutAt(b, sizeof(Elf64_Ehdr), note);
  for (size_t i = 0; i < loads.size(); ++i) {
    PutAt(b, sizeof(Elf64_Ehdr) + (i + 1) * sizeof(Elf64_Phdr), loads[i]);
  }
  std::memcpy(&b[notes_off], notes.data(), notes.size());
  return b;
}

inline Elf64_Phdr Load(uint64_t offset, uint64_t vaddr, uint64_t filesz, uint64_t memsz,
                       uint32_t flags) {
  Elf64_Phdr p{};
  p.p_type = PT_LOAD;
  p.p_flags = flags;
  p.p_offset = offset;
  p.p_vaddr = p.p_paddr = vaddr;
  p.p_filesz = filesz;
  p.p_memsz = memsz;
  p.p_align = 0x1000;
  return p;
}

class SyntheticCore {
 public:
  uint16_t machine = EM_X86_64;
  uint16_t type = ET_CORE;

  // data.size() bytes are dumped (p_filesz); memsz may be larger.
  void AddSegment(uint64_t vaddr, uint64_t memsz, uint32_t flags, std::vector<uint8_t> data = {}) {
    segments_.push_back({vaddr, memsz, flags, std::move(data)});
  }
  void AddNote(std::string owner, uint32_t type_, std::vector<uint8_t> desc) {
    notes_.push_back({std::move(owner), type_, std::move(desc)});
  }
  void AddFileNote(uint64_t page_size, const std::vector<FileEntry>& files) {
    std::vector<uint8_t> d;
    Append(d, uint64_t{files.size()});
    Append(d, page_size);
    for (const FileEntry& f : files) {
      Append(d, f.start);
      Append(d, f.end);
      Append(d, f.page_offset);
    }
    for (const FileEntry& f : files) {
      d.insert(d.end(), f.path.begin(), f.path.end());
      d.push_back(0);
    }
    AddNote("CORE", NT_FILE, std::move(d));
  }
  void AddAuxv(const std::vector<std::pair<uint64_t, uint64_t>>& entries) {
    std::vector<uint8_t> d;
    for (const auto& [t, v] : entries) {
      Append(d, t);
      Append(d, v);
    }
    Append(d, uint64_t{AT_NULL});
    Append(d, uint64_t{0});
    AddNote("CORE", NT_AUXV, std::move(d));
  }
  void AddPrpsinfo(int32_t pid, int32_t ppid, uint32_t uid, std::string comm, std::string args) {
    std::vector<uint8_t> d(136, 0);
    PutAt(d, 16, uid);
    PutAt(d, 24, pid);
    PutAt(d, 28, ppid);
    std::memcpy(&d[40], comm.data(), std::min<size_t>(comm.size(), 16));
    std::memcpy(&d[56], args.data(), std::min<size_t>(args.size(), 80));
    AddNote("CORE", NT_PRPSINFO, std::move(d));
  }
  void AddSiginfo(int32_t signo, int32_t code) {
    std::vector<uint8_t> d(128, 0);
    PutAt(d, 0, signo);
    PutAt(d, 8, code);
    AddNote("CORE", NT_SIGINFO, std::move(d));
  }
  void AddPrstatus(int16_t cursig) {
    std::vector<uint8_t> d(336, 0);
    PutAt(d, 12, cursig);
    AddNote("CORE", NT_PRSTATUS, std::move(d));
  }
  // gdb's target description note (NT_GDB_TDESC).
  void AddGdbNote() {
    std::string xml = "<target/>";
    AddNote("GDB", 0xff000000, std::vector<uint8_t>(xml.begin(), xml.end()));
  }

  std::vector<uint8_t> Build() const {
    const size_t phnum = segments_.size() + 1;
    std::vector<uint8_t> notes;
    for (const Note& n : notes_) AppendNote(notes, n.owner, n.type, n.desc);
    const size_t notes_off = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
    std::vector<uint8_t> b(notes_off, 0);
    b.insert(b.end(), notes.begin(), notes.end());
    Elf64_Ehdr eh = testing_elf::Elf64Header(type, machine);
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = static_cast<uint16_t>(phnum);
    PutAt(b, 0, eh);
    Elf64_Phdr note{};
    note.p_type = PT_NOTE;
    note.p_offset = notes_off;
    note.p_filesz = notes.size();
    note.p_align = 4;
    PutAt(b, sizeof(Elf64_Ehdr), note);
    for (size_t i = 0; i < segments_.size(); ++i) {
      const Seg& s = segments_[i];
      b.resize((b.size() + 15) / 16 * 16, 0);
      Elf64_Phdr p{};
      p.p_type = PT_LOAD;
      p.p_flags = s.flags;
      p.p_offset = b.size();
      p.p_vaddr = s.vaddr;
      p.p_filesz = s.data.size();
      p.p_memsz = s.memsz;
      p.p_align = 0x1000;
      PutAt(b, sizeof(Elf64_Ehdr) + (i + 1) * sizeof(Elf64_Phdr), p);
      b.insert(b.end(), s.data.begin(), s.data.end());
    }
    return b;
  }

 private:
  struct Seg {
    uint64_t vaddr, memsz;
    uint32_t flags;
    std::vector<uint8_t> data;
  };
  struct Note {
    std::string owner;
    uint32_t type;
    std::vector<uint8_t> desc;
  };
  std::vector<Seg> segments_;
  std::vector<Note> notes_;
};

}  // namespace goheap2pprof::testing_core
