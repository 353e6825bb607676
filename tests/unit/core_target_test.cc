// The dead process of a core as the capture sees it, on synthetic cores and
// executables written to a temporary directory: the rebuilt maps, the choice
// and check of the executable, the profile's mappings and the -v lines.
#include "app/core_target.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
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

constexpr uint64_t kTargetBias = 0x555555554000;  // a PIE's load address
constexpr uint64_t kEntry = 0x1100;               // link-time entry point
constexpr uint64_t kVdso = 0x7ffff7fc1000;
constexpr uint64_t kTargetHeap = 0xc000000000;
const std::vector<uint8_t> kTargetGnuId = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

std::vector<Elf64_Phdr> PieLoads() {
  return {Load(0, 0, 0x2000, 0x2000, PF_R | PF_X),
          Load(0x2000, 0x3000, 0x1000, 0x1800, PF_R | PF_W)};
}

std::vector<uint8_t> PieBytes(const std::vector<uint8_t>& gnu_id,
                              const std::string& go_id = "go/id") {
  std::vector<uint8_t> b = HeaderPage(ET_DYN, kEntry, PieLoads(), go_id, gnu_id);
  b.resize(0x3000, 0x90);
  return b;
}

class CoreTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("goheap2pprof-core-target-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    exe_path_ = (dir_ / "server").string();
    Write(exe_path_, PieBytes(kTargetGnuId));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static void Write(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }

  // A kernel core of the PIE at kTargetBias. `data_at` moves the data mapping, to
  // make it disagree with the bias AT_ENTRY gives.
  SyntheticCore Core(bool with_file_note = true, uint64_t data_at = kTargetBias + 0x3000) const {
    std::vector<uint8_t> header = PieBytes(kTargetGnuId);
    header.resize(0x1000);
    SyntheticCore c;
    c.AddSegment(kTargetBias, 0x2000, PF_R | PF_X, header);
    c.AddSegment(data_at, 0x1000, PF_R | PF_W, std::vector<uint8_t>(0x1000, 0x44));
    c.AddSegment(kTargetHeap, 0x1000, PF_R | PF_W, std::vector<uint8_t>(0x1000, 0x55));
    c.AddSegment(kVdso, 0x2000, PF_R | PF_X, std::vector<uint8_t>(0x2000, 0));
    c.AddSegment(0xffffffffff600000, 0x1000, PF_X);
    c.AddPrstatus(SIGABRT);
    c.AddPrpsinfo(321, 1, 0, "server", "./server -port 80");
    c.AddSiginfo(SIGABRT, -6);
    c.AddAuxv({{AT_SYSINFO_EHDR, kVdso}, {AT_PAGESZ, 4096}, {AT_ENTRY, kTargetBias + kEntry}});
    if (with_file_note) {
      c.AddFileNote(4096, {{kTargetBias, kTargetBias + 0x2000, 0, exe_path_},
                           {data_at, data_at + 0x1000, 2, exe_path_}});
    }
    return c;
  }

  std::filesystem::path dir_;
  std::string exe_path_;
};

ErrorKind TargetKindOf(const std::function<void()>& fn, std::string* message) {
  try {
    fn();
  } catch (const Error& e) {
    *message = e.what();
    return e.kind();
  }
  return ErrorKind::kInternal;
}

TEST_F(CoreTargetTest, MapsFromSegmentsAndNtFile) {
  CoreFile core = CoreFile::FromBytes(Core().Build(), "core");
  std::vector<MapsEntry> maps = CoreMaps(core);
  // Sorted by address: heap, text, data, [vdso], [vsyscall].
  ASSERT_EQ(maps.size(), 5u);
  const MapsEntry& heap = maps[0];
  const MapsEntry& text = maps[1];
  const MapsEntry& data = maps[2];
  EXPECT_EQ(heap.start, kTargetHeap);
  EXPECT_EQ(heap.path, "");
  EXPECT_EQ(heap.inode, 0u);
  EXPECT_EQ(text.start, kTargetBias);
  EXPECT_EQ(text.end, kTargetBias + 0x2000);
  EXPECT_EQ(text.perms, "r-xp");
  EXPECT_EQ(text.path, exe_path_);
  EXPECT_EQ(data.perms, "rw-p");
  EXPECT_EQ(data.offset, 0x2000u);
  EXPECT_NE(text.inode, 0u);
  EXPECT_EQ(text.inode, data.inode);
  EXPECT_EQ(maps[3].path, "[vdso]");
  EXPECT_EQ(maps[4].path, "[vsyscall]");
  EXPECT_EQ(maps[4].perms, "--xp");
}

TEST_F(CoreTargetTest, ChoosesTheFileTheCoreNamesAndProvesIt) {
  CoreFile core = CoreFile::FromBytes(Core().Build(), "core");
  std::vector<MapsEntry> maps = CoreMaps(core);
  CoreExecutable exe = ChooseCoreExecutable(core, maps, {});
  EXPECT_EQ(exe.mapped_path, exe_path_);
  EXPECT_EQ(exe.bias, kTargetBias);
  EXPECT_EQ(exe.gnu_build_id, "0102030405060708090a");
  EXPECT_TRUE(exe.warnings.empty());
  ASSERT_TRUE(exe.elf);
  EXPECT_EQ(exe.elf->entry(), kEntry);

  std::vector<ProfileMapping> mappings = CoreProfileMappings(core, maps, exe);
  ASSERT_EQ(mappings.size(), 3u);  // text, [vdso], [vsyscall]: executable ones only
  EXPECT_EQ(mappings[0].file, exe_path_);
  EXPECT_EQ(mappings[0].build_id, "0102030405060708090a");
  EXPECT_EQ(mappings[1].file, "[vdso]");
  EXPECT_EQ(mappings[1].build_id, "");
  EXPECT_EQ(mappings[2].file, "[vsyscall]");
}

TEST_F(CoreTargetTest, RefusesAnotherBuildUnlessForced) {
  const std::string other = (dir_ / "other").string();
  std::vector<uint8_t> other_id = kTargetGnuId;
  other_id[9] ^= 0xff;
  Write(other, PieBytes(other_id));
  CoreFile core = CoreFile::FromBytes(Core().Build(), "core");
  std::vector<MapsEntry> maps = CoreMaps(core);
  std::string message;
  EXPECT_EQ(TargetKindOf(
                [&] {
                  ChooseCoreExecutable(core, maps, {other, false});
                },
                &message),
            ErrorKind::kUsage);
  EXPECT_NE(message.find("is not the executable of core"), std::string::npos) << message;
  EXPECT_NE(message.find("GNU build ID"), std::string::npos) << message;
  CoreExecutable forced = ChooseCoreExecutable(core, maps, {other, true});
  ASSERT_EQ(forced.warnings.size(), 1u);
  EXPECT_NE(forced.warnings[0].find("--force"), std::string::npos);
  // Another Go build ID is refused the same way.
  Write(other, PieBytes(kTargetGnuId, "another/go/id"));
  EXPECT_EQ(TargetKindOf(
                [&] {
                  ChooseCoreExecutable(core, maps, {other, false});
                },
                &message),
            ErrorKind::kUsage);
  EXPECT_NE(message.find("Go build ID"), std::string::npos) << message;
  // A copy of the right file under another name is accepted.
  Write(other, PieBytes(kTargetGnuId));
  EXPECT_EQ(ChooseCoreExecutable(core, maps, {other, false}).bias, kTargetBias);
}

TEST_F(CoreTargetTest, RefusesMappingsThatDisagreeWithTheEntryPoint) {
  // The data is mapped 16 MiB off from where AT_ENTRY puts the file.
  CoreFile core = CoreFile::FromBytes(Core(true, kTargetBias + 0x1003000).Build(), "core");
  std::vector<MapsEntry> maps = CoreMaps(core);
  std::string message;
  EXPECT_EQ(TargetKindOf([&] { ChooseCoreExecutable(core, maps, {}); }, &message),
            ErrorKind::kUsage);
  EXPECT_NE(message.find("none of its PT_LOAD segments"), std::string::npos) << message;
}

TEST_F(CoreTargetTest, WithoutNtFileOnlyExeWorks) {
  CoreFile core = CoreFile::FromBytes(Core(false).Build(), "core");
  std::vector<MapsEntry> maps = CoreMaps(core);
  std::string message;
  EXPECT_EQ(TargetKindOf([&] { ChooseCoreExecutable(core, maps, {}); }, &message),
            ErrorKind::kUsage);
  EXPECT_NE(message.find("has no NT_FILE note"), std::string::npos) << message;
  CoreExecutable exe = ChooseCoreExecutable(core, maps, {exe_path_, false});
  EXPECT_EQ(exe.bias, kTargetBias);
  // The mappings where its PT_LOADs land are named after the --exe file.
  EXPECT_EQ(exe.mapped_path, exe_path_);
  EXPECT_EQ(maps[1].path, exe_path_);
  EXPECT_EQ(maps[1].inode, exe.inode);
  EXPECT_EQ(maps[2].path, exe_path_);
  EXPECT_EQ(maps[2].offset, 0x2000u);
  EXPECT_EQ(maps[0].path, "");  // the heap
  // The header page of the first mapping is checked as with NT_FILE.
  EXPECT_TRUE(exe.warnings.empty());
  EXPECT_EQ(exe.gnu_build_id, "0102030405060708090a");
  // Undumped read-only memory then comes from the file by the bias.
  CoreMemoryReader mem(core, exe.elf.get(), exe.mapped_path, exe.bias);
  std::vector<uint8_t> buf(4);
  ASSERT_TRUE(mem.TryRead(kTargetBias + 0x1800, buf));
  EXPECT_EQ(buf[0], 0x90);
}

TEST_F(CoreTargetTest, MissingFileAndMissingEntry) {
  CoreFile core = CoreFile::FromBytes(Core().Build(), "core");
  std::filesystem::remove(exe_path_);
  std::vector<MapsEntry> maps = CoreMaps(core);
  std::string message;
  EXPECT_EQ(TargetKindOf([&] { ChooseCoreExecutable(core, maps, {}); }, &message),
            ErrorKind::kUsage);
  EXPECT_NE(message.find("does not exist here"), std::string::npos) << message;
  SyntheticCore c;
  c.AddSegment(kTargetHeap, 0x1000, PF_R | PF_W);
  c.AddFileNote(4096, {});
  CoreFile no_auxv = CoreFile::FromBytes(c.Build(), "core");
  std::vector<MapsEntry> no_auxv_maps = CoreMaps(no_auxv);
  EXPECT_EQ(TargetKindOf([&] { ChooseCoreExecutable(no_auxv, no_auxv_maps, {}); }, &message),
            ErrorKind::kMalformed);
  EXPECT_NE(message.find("AT_ENTRY"), std::string::npos) << message;
}

TEST_F(CoreTargetTest, DumpedHeaderMismatchReasons) {
  ElfFile file = ElfFile::FromBytes(PieBytes(kTargetGnuId), "server");
  std::optional<DumpedElfHeader> same = ParseDumpedElfHeader(PieBytes(kTargetGnuId));
  ASSERT_TRUE(same);
  EXPECT_FALSE(DumpedHeaderMismatch(*same, file));
  DumpedElfHeader moved = *same;
  moved.loads[1].vaddr += 0x1000;
  EXPECT_EQ(DumpedHeaderMismatch(moved, file), "different PT_LOAD segments");
  DumpedElfHeader entry = *same;
  entry.entry += 4;
  EXPECT_NE(DumpedHeaderMismatch(entry, file)->find("entry point"), std::string::npos);
  // Only p_filesz differs (strip trims the last data segment): the same build.
  DumpedElfHeader trimmed = *same;
  trimmed.loads[1].filesz -= 0x10;
  EXPECT_FALSE(DumpedHeaderMismatch(trimmed, file));
}

TEST_F(CoreTargetTest, DescribesTheCore) {
  CoreFile core = CoreFile::FromBytes(Core().Build(), "core.321");
  std::vector<std::string> lines = DescribeCore(core);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("written by the Linux kernel (NT_FILE page size 4096)"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("process 321 (server)"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("./server -port 80"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("SIGABRT"), std::string::npos) << lines[2];
}

}  // namespace
}  // namespace goheap2pprof
