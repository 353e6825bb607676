// ElfFile on a hand-built ELF image (headers, notes, vaddr reads), on bad
// headers, and on the running test binary itself.
#include "elf/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "elf/process_files.h"
#include "elf_bytes.h"
#include "proc/procfs.h"

// Called through its address below; C linkage keeps the symbol name plain.
extern "C" __attribute__((noinline)) int goheap2pprof_elf_test_marker(int x) { return x * 3 + 1; }

namespace goheap2pprof {
namespace {

using testing_elf::AppendNote;
using testing_elf::Elf64Header;

using testing_elf::PutAt;

// The header of the images below: ELF64 for this machine, these section
// headers; the caller sets the program headers.
Elf64_Ehdr Header(uint16_t type, uint16_t machine, uint64_t shoff, uint16_t shnum,
                  uint16_t shstrndx) {
  Elf64_Ehdr eh = Elf64Header(type, machine);
  eh.e_shoff = shoff;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = shnum;
  eh.e_shstrndx = shstrndx;
  return eh;
}

constexpr uint64_t kBase = 0x400000;

// ehdr | phdr (one PT_LOAD of the whole file at kBase) | notes | shstrtab |
// section headers (null, .note.gnu.build-id, .note.go.buildid, .shstrtab).
std::vector<uint8_t> BuildElf(uint16_t machine = EM_X86_64) {
  std::vector<uint8_t> b(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), 0);
  size_t gnu_off = b.size();
  AppendNote(b, "GNU", NT_GNU_BUILD_ID, std::string("\x01\x23\xab\xff", 4));
  size_t gnu_size = b.size() - gnu_off;
  size_t go_off = b.size();
  AppendNote(b, "Go", 4, "abc/def");
  size_t go_size = b.size() - go_off;
  size_t shstr_off = b.size();
  std::string shstr("\0.note.gnu.build-id\0.note.go.buildid\0.shstrtab\0", 48);
  b.insert(b.end(), shstr.begin(), shstr.end());
  b.resize((b.size() + 7) / 8 * 8, 0);
  size_t shoff = b.size();

  Elf64_Shdr sh[4] = {};
  sh[1].sh_name = 1;
  sh[1].sh_type = SHT_NOTE;
  sh[1].sh_flags = SHF_ALLOC;
  sh[1].sh_addr = kBase + gnu_off;
  sh[1].sh_offset = gnu_off;
  sh[1].sh_size = gnu_size;
  sh[1].sh_addralign = 4;
  sh[2].sh_name = 20;
  sh[2].sh_type = SHT_NOTE;
  sh[2].sh_flags = SHF_ALLOC;
  sh[2].sh_addr = kBase + go_off;
  sh[2].sh_offset = go_off;
  sh[2].sh_size = go_size;
  sh[2].sh_addralign = 4;
  sh[3].sh_name = 37;
  sh[3].sh_type = SHT_STRTAB;
  sh[3].sh_offset = shstr_off;
  sh[3].sh_size = shstr.size();
  sh[3].sh_addralign = 1;
  for (int i = 0; i < 4; ++i) PutAt(b, shoff + i * sizeof(Elf64_Shdr), sh[i]);

  Elf64_Ehdr eh = Header(ET_EXEC, machine, shoff, 4, 3);
  eh.e_entry = kBase + 0x100;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  PutAt(b, 0, eh);

  Elf64_Phdr ph = {};
  ph.p_type = PT_LOAD;
  ph.p_flags = PF_R;
  ph.p_offset = 0;
  ph.p_vaddr = kBase;
  ph.p_paddr = kBase;
  ph.p_filesz = shoff;  // the section headers are not loaded
  ph.p_memsz = shoff + 0x1000;
  ph.p_align = 0x1000;
  PutAt(b, sizeof(Elf64_Ehdr), ph);
  return b;
}

ErrorKind ElfKindOf(std::vector<uint8_t> bytes, std::string* message = nullptr) {
  try {
    ElfFile::FromBytes(std::move(bytes), "test.elf");
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  return ErrorKind::kInternal;  // did not throw
}

TEST(ElfFileTest, HandBuiltImage) {
  std::vector<uint8_t> image = BuildElf();
  ElfFile elf = ElfFile::FromBytes(image, "test.elf");
  EXPECT_EQ(elf.name(), "test.elf");
  EXPECT_EQ(elf.type(), ET_EXEC);
  EXPECT_EQ(elf.machine(), EM_X86_64);
  EXPECT_EQ(elf.entry(), kBase + 0x100);
  EXPECT_EQ(elf.bytes().size(), image.size());
  ASSERT_EQ(elf.segments().size(), 1u);
  EXPECT_EQ(elf.segments()[0].type, uint32_t{PT_LOAD});
  // libelf's section iteration skips the null section 0.
  ASSERT_EQ(elf.sections().size(), 3u);
  ASSERT_NE(elf.FindSection(".note.go.buildid"), nullptr);
  EXPECT_EQ(elf.FindSection(".nothing"), nullptr);
  EXPECT_FALSE(elf.SectionData(".nothing"));
  EXPECT_EQ(elf.SectionData(".shstrtab")->size(), 48u);

  EXPECT_EQ(elf.GnuBuildId(), "0123abff");
  EXPECT_EQ(elf.GoBuildId(), "abc/def");
  EXPECT_FALSE(elf.HasSymtab());
  EXPECT_FALSE(elf.FindSymbol("main.main"));

  std::optional<Bytes> head = elf.ReadVaddr(kBase, 4);
  ASSERT_TRUE(head);
  EXPECT_EQ(std::memcmp(head->data(), ELFMAG, 4), 0);
  uint64_t filesz = elf.segments()[0].filesz;
  EXPECT_TRUE(elf.ReadVaddr(kBase + filesz - 8, 8));
  EXPECT_FALSE(elf.ReadVaddr(kBase + filesz - 8, 9));  // into the zero-fill part
  EXPECT_FALSE(elf.ReadVaddr(kBase - 1, 2));
  EXPECT_FALSE(elf.ReadVaddr(~uint64_t{0} - 2, 8));  // overflowing range
  std::optional<Bytes> tail = elf.ReadVaddrToSegmentEnd(kBase + 0x10);
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->size(), filesz - 0x10);
  EXPECT_FALSE(elf.ReadVaddrToSegmentEnd(kBase + filesz));

  // Moving keeps everything valid.
  ElfFile moved = std::move(elf);
  EXPECT_EQ(moved.GoBuildId(), "abc/def");
  ElfFile assigned = ElfFile::FromBytes(BuildElf(EM_AARCH64), "arm64.elf");
  assigned = std::move(moved);
  EXPECT_EQ(assigned.GnuBuildId(), "0123abff");
}

// A symbol table's entry: name offset, value, size, type and section index.
Elf64_Sym Sym(uint32_t name, uint64_t value, uint8_t type = STT_OBJECT, uint16_t shndx = 1) {
  Elf64_Sym s = {};
  s.st_name = name;
  s.st_value = value;
  s.st_size = value / 16;
  s.st_info = ELF64_ST_INFO(STB_GLOBAL, type);
  s.st_shndx = shndx;
  return s;
}

// ehdr | .symtab | .strtab | .dynsym | .dynstr | .shstrtab | section headers.
std::vector<uint8_t> BuildElfWithSymbols(const std::vector<Elf64_Sym>& symtab,
                                         std::string_view strtab,
                                         const std::vector<Elf64_Sym>& dynsym,
                                         std::string_view dynstr) {
  std::vector<uint8_t> b(sizeof(Elf64_Ehdr), 0);
  const auto append = [&](const void* data, size_t size) {
    b.resize((b.size() + 7) / 8 * 8, 0);
    const size_t at = b.size();
    const auto* bytes = static_cast<const uint8_t*>(data);
    b.insert(b.end(), bytes, bytes + size);
    return at;
  };
  const std::string shstr("\0.symtab\0.strtab\0.dynsym\0.dynstr\0.shstrtab\0", 43);
  Elf64_Shdr sh[6] = {};
  const auto table = [&](int i, uint32_t name, uint32_t type, const std::vector<Elf64_Sym>& syms,
                         uint32_t link) {
    sh[i].sh_name = name;
    sh[i].sh_type = type;
    sh[i].sh_offset = append(syms.data(), syms.size() * sizeof(Elf64_Sym));
    sh[i].sh_size = syms.size() * sizeof(Elf64_Sym);
    sh[i].sh_link = link;
    sh[i].sh_info = 1;
    sh[i].sh_addralign = 8;
    sh[i].sh_entsize = sizeof(Elf64_Sym);
  };
  const auto strings = [&](int i, uint32_t name, std::string_view text) {
    sh[i].sh_name = name;
    sh[i].sh_type = SHT_STRTAB;
    sh[i].sh_offset = append(text.data(), text.size());
    sh[i].sh_size = text.size();
    sh[i].sh_addralign = 1;
  };
  table(1, 1, SHT_SYMTAB, symtab, 2);
  strings(2, 9, strtab);
  table(3, 17, SHT_DYNSYM, dynsym, 4);
  strings(4, 25, dynstr);
  strings(5, 33, shstr);
  const size_t shoff = append(sh, sizeof(sh));
  PutAt(b, 0, Header(ET_EXEC, EM_X86_64, shoff, 6, 5));
  return b;
}

// The first symbol of a name is the one found, .symtab's before .dynsym's;
// imports, section and file symbols, and names that start past their table
// or run past its end unterminated are not symbols to find.
TEST(ElfFileTest, SymbolsByNameFirstDefinitionWins) {
  // Names at 1, 8, 15, 21, 26 and 31.
  const std::string strtab("\0main.x\0main.y\0dup.z\0sect\0file\0undef\0", 37);
  const std::vector<Elf64_Sym> symtab = {Sym(0, 0),
                                         Sym(1, 0x1000),
                                         Sym(8, 0x2000),
                                         Sym(15, 0x3000),
                                         Sym(15, 0x3100),
                                         Sym(21, 0x4000, STT_SECTION),
                                         Sym(26, 0x5000, STT_FILE),
                                         Sym(31, 0x6000, STT_OBJECT, SHN_UNDEF),
                                         Sym(500, 0x7000)};
  // Names at 1, 10 and 16 (unterminated).
  const std::string dynstr("\0dyn.only\0dup.z\0tail", 20);
  const std::vector<Elf64_Sym> dynsym = {Sym(0, 0), Sym(1, 0x8000), Sym(10, 0x9000),
                                         Sym(16, 0xa000), Sym(0, 0xb000)};
  const ElfFile elf =
      ElfFile::FromBytes(BuildElfWithSymbols(symtab, strtab, dynsym, dynstr), "syms.elf");
  EXPECT_TRUE(elf.HasSymtab());
  const auto value = [&](std::string_view name) -> int64_t {
    const std::optional<ElfSymbol> s = elf.FindSymbol(name);
    return s ? static_cast<int64_t>(s->value) : -1;
  };
  EXPECT_EQ(value("main.x"), 0x1000);
  EXPECT_EQ(elf.FindSymbol("main.x")->size, 0x100u);
  EXPECT_EQ(value("main.y"), 0x2000);
  EXPECT_EQ(value("dup.z"), 0x3000);  // not .symtab's second, nor .dynsym's
  EXPECT_EQ(value("dyn.only"), 0x8000);
  EXPECT_EQ(value("sect"), -1);
  EXPECT_EQ(value("file"), -1);
  EXPECT_EQ(value("undef"), -1);
  EXPECT_EQ(value("tail"), -1);  // the table ends before its terminator
  EXPECT_EQ(value(""), -1);
  EXPECT_EQ(value("main"), -1);
  EXPECT_EQ(value(std::string_view("main.x\0", 7)), -1);
}

TEST(ElfFileTest, RejectsNonElfAndUnsupported) {
  std::string msg;
  EXPECT_EQ(ElfKindOf({'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '!', '!', '!',
                       '!', '!', '!'},
                      &msg),
            ErrorKind::kNotGo);
  EXPECT_NE(msg.find("not an ELF"), std::string::npos) << msg;
  EXPECT_EQ(ElfKindOf({}), ErrorKind::kNotGo);

  std::vector<uint8_t> b = BuildElf();
  b[EI_CLASS] = ELFCLASS32;
  EXPECT_EQ(ElfKindOf(b, &msg), ErrorKind::kUnsupported);
  EXPECT_NE(msg.find("32-bit ELF"), std::string::npos) << msg;

  b = BuildElf();
  b[EI_DATA] = ELFDATA2MSB;
  EXPECT_EQ(ElfKindOf(b, &msg), ErrorKind::kUnsupported);
  EXPECT_NE(msg.find("big-endian"), std::string::npos) << msg;

  EXPECT_EQ(ElfKindOf(BuildElf(EM_386), &msg), ErrorKind::kUnsupported);
  EXPECT_NE(msg.find("i386"), std::string::npos) << msg;
  EXPECT_EQ(ElfKindOf(BuildElf(EM_AARCH64)), ErrorKind::kInternal);  // accepted
}

TEST(ElfFileTest, TruncatedImagesThrowOrLoad) {
  std::vector<uint8_t> image = BuildElf();
  for (size_t n = 0; n < image.size(); ++n) {
    try {
      ElfFile elf = ElfFile::FromBytes(std::vector<uint8_t>(image.begin(), image.begin() + n), "t");
      elf.GnuBuildId();
      elf.GoBuildId();
      elf.FindSymbol("x");
      for (const ElfSection& s : elf.sections()) elf.SectionData(s.name);
    } catch (const Error&) {
    }
  }
}

TEST(ElfFileTest, OpenFileErrors) {
  try {
    ElfFile::Open("/nonexistent/goheap2pprof-test");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            ("goheap2pprof-elf-test-" + std::to_string(getpid()));
  {
    std::ofstream out(p);
    out << "#!/bin/sh\necho not an elf\n";
  }
  try {
    ElfFile::Open(p.string(), "script");
    ADD_FAILURE() << "expected kNotGo";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotGo);
    EXPECT_NE(std::string(e.what()).find("script is not an ELF"), std::string::npos) << e.what();
  }
  std::filesystem::remove(p);
}

TEST(ElfFileTest, FifoIsRefusedWithoutBlocking) {
  // A target can plant a FIFO where we look for its files (/proc/<pid>/root);
  // opening it must neither wait for a writer nor read from it.
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            ("goheap2pprof-elf-fifo-" + std::to_string(getpid()));
  std::filesystem::remove(p);
  ASSERT_EQ(mkfifo(p.c_str(), 0600), 0) << std::strerror(errno);
  std::future<std::string> opened = std::async(std::launch::async, [&p] {
    try {
      ElfFile::Open(p.string(), "planted");
      return std::string("opened");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  });
  // A hang guard, not a speed limit: a blocking open never returns at all.
  if (opened.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    // Unblock the open so the test can end, then fail.
    UniqueFd writer(open(p.c_str(), O_WRONLY | O_NONBLOCK));
    opened.wait();
    std::filesystem::remove(p);
    FAIL() << "opening a FIFO blocked";
  }
  const std::string result = opened.get();
  std::filesystem::remove(p);
  EXPECT_NE(result.find("planted is not a regular file"), std::string::npos) << result;
}

// Maps the first page of file p in this process (flags: MAP_PRIVATE or
// MAP_SHARED), as a target maps its files; entry is that mapping's line of
// /proc/self/maps (nullopt if the file could not be mapped).
void* MapFirstPage(const std::filesystem::path& p, int flags, std::optional<MapsEntry>& entry) {
  UniqueFd fd(open(p.c_str(), O_RDONLY | O_CLOEXEC));
  void* page = fd.valid() ? mmap(nullptr, 4096, PROT_READ, flags, fd.get(), 0) : MAP_FAILED;
  if (page == MAP_FAILED) return nullptr;
  for (const MapsEntry& e : ReadProcMaps(getpid())) {
    if (e.path == p.string()) entry = e;
  }
  return page;
}

// The files opened under /proc/<pid>/ are the target's: it may truncate its
// executable or a mapped file while we hold it open. Reading what is gone
// must be a kIo error, never SIGBUS (which a mapping of the file raises on
// touching a page past the new end, killing the tool or a serve worker).
TEST(ElfFileTest, TargetTruncatingItsMappedFileIsAnErrorNotASignal) {
  // A copy of this test binary plays the target's mapped file: an ELF with
  // a large .text well past its first page.
  const std::filesystem::path p = std::filesystem::temp_directory_path() /
                                  ("goheap2pprof-truncated-" + std::to_string(getpid()));
  {
    const ElfFile exe = ElfFile::Open("/proc/self/exe");
    const Bytes self = exe.bytes();
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(self.data()),
              static_cast<std::streamsize>(self.size()));
  }
  // Map its first page in this process, as the target maps its files, and
  // open it the way the engine opens a target's mapped file.
  std::optional<MapsEntry> entry;
  void* page = MapFirstPage(p, MAP_PRIVATE, entry);
  ASSERT_TRUE(entry);
  std::optional<ElfFile> elf = OpenMappedFile(getpid(), *entry);
  munmap(page, 4096);
  ASSERT_TRUE(elf);
  const ElfSection* text = elf->FindSection(".text");
  ASSERT_NE(text, nullptr);
  ASSERT_GT(text->offset, 4096u);

  // The target cuts the file before .text.
  ASSERT_EQ(truncate(p.c_str(), static_cast<off_t>(text->offset)), 0);
  try {
    std::optional<Bytes> code = elf->SectionData(".text");
    // Touch every byte, as the pclntab decoder would.
    unsigned sum = 0;
    for (uint8_t b : code.value()) sum += b;
    ADD_FAILURE() << "read a truncated section (sum " << sum << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("shrank while being read"), std::string::npos) << e.what();
  }
  // libelf's own reads (the symbol table, read on first lookup) fail
  // cleanly too.
  EXPECT_THROW(elf->FindSymbol("goheap2pprof_elf_test_marker"), Error);
  std::filesystem::remove(p);
}

// serve's worker asks for the build IDs of the same mapped files at every
// capture: they are remembered, and a file changed in place (the same
// inode) is read again.
TEST(ElfFileTest, AMappedFilesBuildIdIsReadAgainOnceTheFileChanged) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() /
                                  ("goheap2pprof-build-id-" + std::to_string(getpid()));
  std::vector<uint8_t> image = BuildElf();
  auto write = [&] {
    UniqueFd out(open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));  // in place
    ASSERT_TRUE(out.valid());
    ASSERT_EQ(pwrite(out.get(), image.data(), image.size(), 0), static_cast<ssize_t>(image.size()));
  };
  write();
  std::optional<MapsEntry> entry;
  void* page = MapFirstPage(p, MAP_SHARED, entry);
  ASSERT_TRUE(entry);
  // Settled (a file changed within the last second is not remembered),
  // then asked twice: remembered after the first.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  EXPECT_EQ(MappedFileGnuBuildId(getpid(), *entry), "0123abff");
  EXPECT_EQ(MappedFileGnuBuildId(getpid(), *entry), "0123abff");

  // Another build ID written over the note, in place: same inode and size.
  const uint8_t old_id[] = {0x01, 0x23, 0xab, 0xff};
  auto at = std::search(image.begin(), image.end(), std::begin(old_id), std::end(old_id));
  ASSERT_NE(at, image.end());
  at[3] = 0xee;
  write();
  EXPECT_EQ(MappedFileGnuBuildId(getpid(), *entry), "0123abee");
  munmap(page, 4096);
  std::filesystem::remove(p);
}

TEST(ElfFileTest, OpensOwnExecutableViaProc) {
  ElfFile elf = ElfFile::Open("/proc/self/exe");
  EXPECT_TRUE(elf.type() == ET_EXEC || elf.type() == ET_DYN);
  EXPECT_TRUE(elf.HasSymtab());
  std::optional<ElfSymbol> sym = elf.FindSymbol("goheap2pprof_elf_test_marker");
  ASSERT_TRUE(sym);
  EXPECT_GT(sym->size, 0u);
  // The file bytes at the symbol's link-time address are the code running in
  // this process at the relocated address.
  auto* fn = &goheap2pprof_elf_test_marker;
  EXPECT_EQ(fn(1), 4);
  uint64_t runtime_addr = reinterpret_cast<uint64_t>(fn);
  std::optional<Bytes> code = elf.ReadVaddr(sym->value, sym->size);
  ASSERT_TRUE(code);
  EXPECT_EQ(std::memcmp(code->data(), reinterpret_cast<const void*>(runtime_addr), code->size()),
            0);
  // Dynamic symbols are indexed too (libc imports are skipped as undefined).
  EXPECT_FALSE(elf.FindSymbol("__nonexistent_symbol__"));
}

}  // namespace
}  // namespace goheap2pprof
