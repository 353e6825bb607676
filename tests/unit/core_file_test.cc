// CoreFile and CoreMemoryReader on small cores built in memory: the notes as
// the kernel and gdb write them, the dumped ELF header page, truncated and
// malformed cores, and reads that fall back to the executable.
#include "elf/core_file.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

#include "base/error.h"
#include "synthetic_core.h"

namespace goheap2pprof {
namespace {

using testing_core::FileEntry;
using testing_core::HeaderPage;
using testing_core::Load;
using testing_core::SyntheticCore;

constexpr uint64_t kCoreText = 0x400000;
constexpr uint64_t kRodata = 0x402000;
constexpr uint64_t kData = 0x403000;
constexpr uint64_t kCoreHeap = 0xc000000000;
const std::vector<uint8_t> kCoreGnuId = {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04};
const std::string kGoId = "goid-a/goid-b/goid-c/goid-d";

std::vector<Elf64_Phdr> ExeLoads() {
  return {Load(0, kCoreText, 0x2000, 0x2000, PF_R | PF_X),
          Load(0x2000, kRodata, 0x1000, 0x1000, PF_R),
          Load(0x3000, kData, 0x1000, 0x1800, PF_R | PF_W)};
}

// The executable the cores below were "dumped" from: its first page is the
// header page, then text, rodata and data filled with recognisable bytes.
std::vector<uint8_t> ExeBytes() {
  std::vector<uint8_t> b = HeaderPage(ET_EXEC, kCoreText + 0x1000, ExeLoads(), kGoId, kCoreGnuId);
  b.resize(0x4000);
  for (size_t i = 0x1000; i < 0x2000; ++i) b[i] = 0xcc;                     // text
  for (size_t i = 0x2000; i < 0x3000; ++i) b[i] = static_cast<uint8_t>(i);  // rodata
  for (size_t i = 0x3000; i < 0x4000; ++i) b[i] = 0x11;                     // initial data
  return b;
}

// A kernel-style core of that executable: the header page of the text
// mapping dumped, rodata not dumped, data and one heap arena dumped, and a
// never-touched reservation (filesz 0).
SyntheticCore KernelCore() {
  SyntheticCore c;
  std::vector<uint8_t> exe = ExeBytes();
  c.AddSegment(kCoreText, 0x2000, PF_R | PF_X,
               std::vector<uint8_t>(exe.begin(), exe.begin() + 0x1000));
  c.AddSegment(kRodata, 0x1000, PF_R);
  std::vector<uint8_t> data(0x2000, 0x22);  // the process wrote its data
  c.AddSegment(kData, 0x2000, PF_R | PF_W, data);
  std::vector<uint8_t> heap(0x1000);
  for (size_t i = 0; i < heap.size(); ++i) heap[i] = static_cast<uint8_t>(i * 7);
  c.AddSegment(kCoreHeap, 0x1000, PF_R | PF_W, heap);
  c.AddSegment(kCoreHeap + 0x1000, 0x100000, 0);  // PROT_NONE reservation
  c.AddPrstatus(SIGABRT);
  c.AddPrpsinfo(4242, 1, 1000, "myservice", "/srv/myservice -flag value");
  c.AddSiginfo(SIGABRT, -6);
  c.AddAuxv({{AT_PHDR, kCoreText + 64}, {AT_PAGESZ, 4096}, {AT_ENTRY, kCoreText + 0x1000}});
  c.AddFileNote(4096, {{kCoreText, kCoreText + 0x2000, 0, "/srv/myservice"},
                       {kRodata, kRodata + 0x1000, 2, "/srv/myservice"},
                       {kData, kData + 0x1000, 3, "/srv/myservice"}});
  c.AddPrstatus(0);
  return c;
}

ErrorKind CoreKindOf(const std::vector<uint8_t>& bytes, std::string* message = nullptr) {
  try {
    CoreFile::FromBytes(bytes, "test-core");
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  return ErrorKind::kInternal;  // no error: never expected by the callers
}

TEST(CoreFileTest, KernelCoreNotes) {
  CoreFile core = CoreFile::FromBytes(KernelCore().Build(), "core");
  EXPECT_EQ(core.producer(), CoreProducer::kKernel);
  EXPECT_EQ(core.machine(), EM_X86_64);
  ASSERT_EQ(core.segments().size(), 5u);
  EXPECT_EQ(core.segments()[0].vaddr, kCoreText);
  EXPECT_EQ(core.segments()[0].filesz, 0x1000u);
  EXPECT_EQ(core.segments()[1].filesz, 0u);
  EXPECT_EQ(core.threads(), 2u);
  ASSERT_TRUE(core.process());
  EXPECT_EQ(core.process()->pid, 4242);
  EXPECT_EQ(core.process()->ppid, 1);
  EXPECT_EQ(core.process()->uid, 1000u);
  EXPECT_EQ(core.process()->comm, "myservice");
  EXPECT_EQ(core.process()->psargs, "/srv/myservice -flag value");
  ASSERT_TRUE(core.signal());
  EXPECT_EQ(core.signal()->signo, SIGABRT);
  EXPECT_EQ(core.signal()->code, -6);
  EXPECT_TRUE(core.signal()->from_siginfo);
  EXPECT_EQ(SignalName(core.signal()->signo), "SIGABRT");
  EXPECT_EQ(core.auxv_entry(), kCoreText + 0x1000);
  EXPECT_EQ(core.auxv_phdr(), kCoreText + 64);
  EXPECT_FALSE(core.auxv(AT_BASE));
  ASSERT_TRUE(core.has_file_note());
  EXPECT_EQ(core.file_note_page_size(), 4096u);
  ASSERT_EQ(core.file_mappings().size(), 3u);
  // The kernel writes offsets in pages: 3 pages = 0x3000 bytes.
  EXPECT_EQ(core.file_mappings()[2].file_offset, 0x3000u);
  EXPECT_EQ(core.FileMappingAt(kCoreText + 0x1000)->path, "/srv/myservice");
  EXPECT_EQ(core.FileMappingAt(kCoreHeap), nullptr);
  EXPECT_EQ(core.FirstMappingOf("/srv/myservice")->start, kCoreText);
  EXPECT_EQ(core.FirstMappingOf("/other"), nullptr);
}

TEST(CoreFileTest, GdbCoreHasByteOffsetsAndIsNamed) {
  SyntheticCore c;
  c.AddSegment(kCoreText, 0x2000, PF_R | PF_X, std::vector<uint8_t>(0x2000, 1));
  c.AddSegment(kData, 0x1000, PF_R | PF_W, std::vector<uint8_t>(0x1000, 2));
  c.AddPrstatus(SIGSTOP);
  c.AddPrpsinfo(77, 1, 0, "app", "app");
  c.AddSiginfo(SIGSTOP, 0);
  c.AddSiginfo(SIGSEGV, 1);  // gdb writes one per thread: the first is kept
  c.AddAuxv({{AT_ENTRY, kCoreText + 0x10}});
  // gdb: page size 1, offsets in bytes.
  c.AddFileNote(1, {{kCoreText, kCoreText + 0x2000, 0, "/bin/app"},
                    {kData, kData + 0x1000, 0x3000, "/bin/app"}});
  c.AddGdbNote();
  CoreFile core = CoreFile::FromBytes(c.Build(), "core.77");
  EXPECT_EQ(core.producer(), CoreProducer::kGdb);
  EXPECT_EQ(core.file_note_page_size(), 1u);
  EXPECT_EQ(core.file_mappings()[1].file_offset, 0x3000u);
  EXPECT_EQ(core.signal()->signo, SIGSTOP);
  EXPECT_EQ(CoreProducerName(core.producer()), "gdb (gcore)");
}

TEST(CoreFileTest, PageSizeOneAloneMeansGdb) {
  SyntheticCore c;
  c.AddSegment(kCoreText, 0x1000, PF_R | PF_X, std::vector<uint8_t>(0x1000, 1));
  c.AddFileNote(1, {{kCoreText, kCoreText + 0x1000, 0, "/bin/app"}});
  EXPECT_EQ(CoreFile::FromBytes(c.Build(), "c").producer(), CoreProducer::kGdb);
}

TEST(CoreFileTest, NoFileNoteAndSignalFromPrstatus) {
  SyntheticCore c;
  c.AddSegment(kCoreHeap, 0x1000, PF_R | PF_W, std::vector<uint8_t>(0x1000, 1));
  c.AddPrstatus(SIGSEGV);
  CoreFile core = CoreFile::FromBytes(c.Build(), "c");
  EXPECT_FALSE(core.has_file_note());
  EXPECT_TRUE(core.file_mappings().empty());
  EXPECT_EQ(core.producer(), CoreProducer::kUnknown);
  EXPECT_FALSE(core.process());
  EXPECT_FALSE(core.auxv_entry());
  ASSERT_TRUE(core.signal());
  EXPECT_EQ(core.signal()->signo, SIGSEGV);
  EXPECT_FALSE(core.signal()->from_siginfo);
}

TEST(CoreFileTest, TruncatedCoreIsNamed) {
  std::vector<uint8_t> bytes = KernelCore().Build();
  bytes.resize(bytes.size() - 100);  // the heap segment (dumped last) is cut short
  std::string message;
  EXPECT_EQ(CoreKindOf(bytes, &message), ErrorKind::kMalformed);
  EXPECT_NE(message.find("is truncated"), std::string::npos) << message;
  EXPECT_NE(message.find(Hex(kCoreHeap)), std::string::npos) << message;
  // Cut inside the notes: named as the notes.
  SyntheticCore c = KernelCore();
  bytes = c.Build();
  bytes.resize(sizeof(Elf64_Ehdr) + 6 * sizeof(Elf64_Phdr) + 40);
  EXPECT_EQ(CoreKindOf(bytes, &message), ErrorKind::kMalformed);
  EXPECT_NE(message.find("its notes"), std::string::npos) << message;
}

TEST(CoreFileTest, NotACore) {
  std::string message;
  EXPECT_EQ(CoreKindOf({}, &message), ErrorKind::kUsage);
  EXPECT_NE(message.find("empty"), std::string::npos) << message;
  std::string text = "hello, this is not a core file at all\n";
  EXPECT_EQ(CoreKindOf(std::vector<uint8_t>(text.begin(), text.end()), &message),
            ErrorKind::kUsage);
  EXPECT_NE(message.find("not a core file"), std::string::npos) << message;
  SyntheticCore exe = KernelCore();
  exe.type = ET_EXEC;
  EXPECT_EQ(CoreKindOf(exe.Build(), &message), ErrorKind::kUsage);
  EXPECT_NE(message.find("an executable"), std::string::npos) << message;
  SyntheticCore other = KernelCore();
  other.machine = EM_PPC64;
  EXPECT_EQ(CoreKindOf(other.Build()), ErrorKind::kUnsupported);
  std::vector<uint8_t> elf32 = KernelCore().Build();
  elf32[EI_CLASS] = ELFCLASS32;
  EXPECT_EQ(CoreKindOf(elf32), ErrorKind::kUnsupported);
}

TEST(CoreFileTest, MalformedNotesAndSegments) {
  std::string message;
  {
    SyntheticCore c;
    c.AddSegment(kCoreHeap, 0x1000, PF_R | PF_W, std::vector<uint8_t>(16, 0));
    std::vector<uint8_t> d(16, 0);
    testing_core::PutAt(d, 0, uint64_t{1} << 40);  // count far beyond the note
    testing_core::PutAt(d, 8, uint64_t{4096});
    c.AddNote("CORE", NT_FILE, d);
    EXPECT_EQ(CoreKindOf(c.Build(), &message), ErrorKind::kMalformed);
    EXPECT_NE(message.find("NT_FILE"), std::string::npos) << message;
  }
  {
    SyntheticCore c;
    c.AddSegment(kCoreHeap, 0x1000, PF_R | PF_W);
    std::vector<uint8_t> d;
    testing_core::Append(d, uint64_t{2});
    testing_core::Append(d, uint64_t{4096});
    for (int i = 0; i < 6; ++i) testing_core::Append(d, uint64_t{0x1000});
    d.push_back('/');
    d.push_back(0);  // one name for two entries
    c.AddNote("CORE", NT_FILE, d);
    EXPECT_EQ(CoreKindOf(c.Build(), &message), ErrorKind::kMalformed);
  }
  {
    SyntheticCore c;
    c.AddSegment(kCoreHeap, 0x1000, PF_R | PF_W);
    c.AddFileNote(3, {{kCoreHeap, kCoreHeap + 0x1000, 0, "/x"}});  // page size not a power of two
    EXPECT_EQ(CoreKindOf(c.Build()), ErrorKind::kMalformed);
  }
  {
    SyntheticCore c;
    c.AddSegment(kCoreHeap, 0x2000, PF_R | PF_W);
    c.AddSegment(kCoreHeap + 0x1000, 0x1000, PF_R | PF_W);
    c.AddPrstatus(0);
    EXPECT_EQ(CoreKindOf(c.Build(), &message), ErrorKind::kMalformed);
    EXPECT_NE(message.find("overlap"), std::string::npos) << message;
  }
  {
    SyntheticCore c;
    c.AddSegment(~uint64_t{0} - 0x10, 0x1000, PF_R);
    c.AddPrstatus(0);
    EXPECT_EQ(CoreKindOf(c.Build()), ErrorKind::kMalformed);
  }
  {
    // A note whose size runs past the notes is ignored, not read past.
    SyntheticCore d;
    d.AddSegment(kCoreHeap, 0x1000, PF_R | PF_W);
    d.AddNote("CORE", NT_AUXV, std::vector<uint8_t>(64, 0xff));
    std::vector<uint8_t> b = d.Build();
    // Rewrite the note's descsz to a huge value.
    const size_t note_off = sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr);
    testing_core::PutAt(b, note_off + 4, uint32_t{0xffffff00});
    CoreFile core = CoreFile::FromBytes(b, "c");
    EXPECT_FALSE(core.auxv_entry());
  }
}

TEST(CoreFileTest, DumpedHeaderPage) {
  CoreFile core = CoreFile::FromBytes(KernelCore().Build(), "core");
  std::optional<DumpedElfHeader> h = core.DumpedHeaderAt(kCoreText);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->type, ET_EXEC);
  EXPECT_EQ(h->entry, kCoreText + 0x1000);
  EXPECT_TRUE(h->phdrs_complete);
  ASSERT_EQ(h->loads.size(), 3u);
  EXPECT_EQ(h->loads[2].vaddr, kData);
  EXPECT_EQ(h->loads[2].memsz, 0x1800u);
  EXPECT_EQ(h->go_build_id, kGoId);
  // Found without a program header, as in Go binaries.
  EXPECT_EQ(h->gnu_build_id, "deadbeef01020304");
  // Not dumped, or not ELF.
  EXPECT_FALSE(core.DumpedHeaderAt(kRodata));
  EXPECT_FALSE(core.DumpedHeaderAt(kCoreHeap));
  EXPECT_FALSE(core.DumpedHeaderAt(0x1000));
}

TEST(CoreFileTest, PartlyDumpedHeaderPage) {
  std::vector<uint8_t> page = HeaderPage(ET_DYN, 0x1000, ExeLoads(), kGoId, kCoreGnuId);
  // Only the ELF header and two program headers: IDs and the rest unknown.
  std::optional<DumpedElfHeader> h =
      ParseDumpedElfHeader(Bytes(page.data(), sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr)));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->type, ET_DYN);
  EXPECT_FALSE(h->phdrs_complete);
  EXPECT_EQ(h->loads.size(), 1u);
  EXPECT_TRUE(h->gnu_build_id.empty());
  EXPECT_TRUE(h->go_build_id.empty());
  // No build IDs at all (Go before 1.24 without -buildid has only Go's).
  h = ParseDumpedElfHeader(HeaderPage(ET_EXEC, 0, ExeLoads(), kGoId, {}));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->go_build_id, kGoId);
  EXPECT_TRUE(h->gnu_build_id.empty());
  EXPECT_FALSE(ParseDumpedElfHeader(Bytes(page.data(), 10)));
  // Program headers claimed far outside the page.
  testing_core::PutAt(page, offsetof(Elf64_Ehdr, e_phoff), ~uint64_t{0} - 8);
  h = ParseDumpedElfHeader(page);
  ASSERT_TRUE(h);
  EXPECT_FALSE(h->phdrs_complete);
  EXPECT_TRUE(h->loads.empty());
}

TEST(CoreMemoryReaderTest, ReadsDumpedMemoryAndViewsIt) {
  CoreFile core = CoreFile::FromBytes(KernelCore().Build(), "core");
  CoreMemoryReader mem(core, nullptr, "", 0);
  std::vector<uint8_t> buf(16);
  ASSERT_TRUE(mem.TryRead(kCoreHeap + 0x10, buf));
  for (size_t i = 0; i < buf.size(); ++i) EXPECT_EQ(buf[i], static_cast<uint8_t>((0x10 + i) * 7));
  const uint8_t* view = mem.View(kCoreHeap + 0x10, 16);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(std::vector<uint8_t>(view, view + 16), buf);
  EXPECT_EQ(mem.ReadU64(kData, "data"), 0x2222222222222222u);
  // The reservation is mapped but not dumped and writable: unreadable.
  EXPECT_FALSE(mem.TryRead(kCoreHeap + 0x2000, buf));
  EXPECT_EQ(mem.View(kCoreHeap + 0x2000, 16), nullptr);
  // A read that runs from the arena into the reservation fails as a whole.
  EXPECT_FALSE(mem.TryRead(kCoreHeap + 0xff8, buf));
  // Outside every segment.
  EXPECT_FALSE(mem.TryRead(0x1000, buf));
  EXPECT_FALSE(mem.TryRead(~uint64_t{0} - 4, buf));
  // Without the executable, undumped text and rodata are unreadable.
  EXPECT_FALSE(mem.TryRead(kRodata, buf));
  EXPECT_FALSE(mem.TryRead(kCoreText + 0x1000, buf));
  EXPECT_EQ(mem.stats().bytes_read, 24u);
}

TEST(CoreMemoryReaderTest, UndumpedReadOnlyMemoryComesFromTheExecutable) {
  CoreFile core = CoreFile::FromBytes(KernelCore().Build(), "core");
  ElfFile exe = ElfFile::FromBytes(ExeBytes(), "myservice");
  CoreMemoryReader mem(core, &exe, "/srv/myservice", 0);
  std::vector<uint8_t> buf(8);
  // Text beyond the dumped header page: from the file at NT_FILE's offset.
  ASSERT_TRUE(mem.TryRead(kCoreText + 0x1000, buf));
  EXPECT_EQ(buf, std::vector<uint8_t>(8, 0xcc));
  // A read across the dumped header page and the undumped text.
  std::vector<uint8_t> across(16);
  ASSERT_TRUE(mem.TryRead(kCoreText + 0xff8, across));
  EXPECT_EQ(across[15], 0xcc);
  ASSERT_TRUE(mem.TryRead(kRodata + 0x10, buf));
  EXPECT_EQ(buf[0], 0x10);
  EXPECT_EQ(buf[7], 0x17);
  EXPECT_EQ(mem.bytes_from_exe(), 8u + 8u + 8u);
  // Writable memory always comes from the core, never the file's initial
  // values (0x11), and undumped writable memory is unreadable.
  EXPECT_EQ(mem.ReadU64(kData, "data"), 0x2222222222222222u);
  EXPECT_FALSE(mem.TryRead(kCoreHeap + 0x2000, buf));
  // The same file under another name in NT_FILE: not the executable.
  CoreMemoryReader other(core, &exe, "/srv/other", 0);
  EXPECT_FALSE(other.TryRead(kRodata, buf));
  // (A core without NT_FILE reads the file by the bias: core_target_test.)
}

}  // namespace
}  // namespace goheap2pprof
