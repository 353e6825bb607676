// Go-binary tier: the memory-statistics layout (runtime/memstats_layout.h)
// that the DWARF of real programs proves, built by every toolchain of the
// test matrix for amd64 and arm64, equals goheap2pprof's per-version table,
// which is what stripped binaries are read with; and the DWARF has every
// field the read needs. And the analysis judges that layout from the DWARF
// it reads for the heap-bucket layout, not from a second read.
#include "runtime/memstats_layout.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "app/executable_analysis.h"
#include "base/error.h"
#include "elf/dwarf_types.h"
#include "elf/elf_file.h"
#include "go_toolchains.h"
#include "gobin/go_binary.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {
namespace {

using testing_go::Toolchain;
using testing_go::Toolchains;

struct Build {
  std::string label;
  std::string program;  // the go_programs fixture's name for it
  bool arm64;
};

const std::vector<Build>& Builds() {
  static const std::vector<Build> kBuilds = {
      {"amd64", "memstats-amd64-exe", false},
      {"amd64cgo", "memstats-amd64-exe-cgo", false},
      {"arm64", "oracle-arm64-exe", true},  // built for the arm64-live toolchains
  };
  return kBuilds;
}

// The program of a case, or why the case is skipped or has failed.
testing_go::GoProgram ProgramOf(const testing_go::ToolchainCase& c) {
  const Toolchain& tc = Toolchains()[c.toolchain];
  if (Builds()[c.mode].arm64 && !tc.arm64_live) {
    testing_go::GoProgram none;
    none.skip_reason = tc.label + " has no arm64 build with DWARF";
    return none;
  }
  return testing_go::FindGoProgram(tc, Builds()[c.mode].program);
}

class MemstatsLayoutTest : public ::testing::TestWithParam<testing_go::ToolchainCase> {};

TEST_P(MemstatsLayoutTest, DwarfEqualsTheTable) {
  const Build& build = Builds()[GetParam().mode];
  const testing_go::GoProgram b = ProgramOf(GetParam());
  if (!b.skip_reason.empty()) GTEST_SKIP() << b.skip_reason;
  ASSERT_TRUE(b.error.empty()) << b.error;

  ElfFile elf = ElfFile::Open(b.path);
  ASSERT_EQ(elf.machine(), build.arm64 ? EM_AARCH64 : EM_X86_64);
  GoBinary bin(elf);
  ASSERT_TRUE(bin.version());
  const RuntimeTraits traits = TraitsForVersion(*bin.version());
  const MemstatsLayoutVerdict v = CheckMemstatsLayout(elf, traits);
  EXPECT_TRUE(v.from_dwarf);
  for (const std::string& d : v.table_differences) ADD_FAILURE() << d;
  EXPECT_TRUE(MissingMemstatsFields(v.layout, traits).empty());
  // Without DWARF the table is taken, and has every field the read needs.
  const MemstatsLayoutVerdict table = JudgeMemstatsLayout("x", traits, elf.machine(), nullptr);
  EXPECT_FALSE(table.from_dwarf);
  EXPECT_TRUE(CompareMemstatsLayouts(v.layout, table.layout, traits).empty());
}

INSTANTIATE_TEST_SUITE_P(GoBuilds, MemstatsLayoutTest, testing_go::ToolchainCases(Builds),
                         testing_go::CaseNamer(Builds));

// The analysis judges the memory-statistics layout from the DWARF it read
// for the heap-bucket layout, in Create or in its background check: the
// first read of a process's statistics does not inflate and index the DWARF
// a second time (5-6 ms for a small program). Proven by spoiling every
// debug section of the file after Create: memstats() still gives the
// DWARF's layout, which it could not if it read the file again.
class OneDwarfReadTest : public ::testing::TestWithParam<testing_go::ToolchainCase> {};

void SpoilDebugSections(const std::string& path, const ElfFile& elf) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  int spoiled = 0;
  for (const ElfSection& s : elf.sections()) {
    if (s.type == SHT_NOBITS || !(s.name.starts_with(".debug_") || s.name.starts_with(".zdebug_")))
      continue;
    const std::string junk(s.size, '\xff');
    f.seekp(static_cast<std::streamoff>(s.offset));
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    ++spoiled;
  }
  f.flush();
  ASSERT_TRUE(f) << path;
  ASSERT_GT(spoiled, 0) << path << " has no debug sections";
}

TEST_P(OneDwarfReadTest, TheHeapLayoutsDwarfReadJudgesTheMemstatsLayout) {
  const Toolchain& tc = Toolchains()[GetParam().toolchain];
  const testing_go::GoProgram b = ProgramOf(GetParam());
  if (!b.skip_reason.empty()) GTEST_SKIP() << b.skip_reason;
  ASSERT_TRUE(b.error.empty()) << b.error;
  const MemstatsLayoutVerdict expected = [&] {
    ElfFile elf = ElfFile::Open(b.path);
    GoBinary bin(elf);
    return CheckMemstatsLayout(elf, TraitsForVersion(bin.version().value()));
  }();
  ASSERT_TRUE(expected.from_dwarf);

  for (LayoutCheck check : {LayoutCheck::kInCreate, LayoutCheck::kInBackground}) {
    SCOPED_TRACE(check == LayoutCheck::kInCreate ? "in Create" : "in the background");
    const std::filesystem::path copy =
        std::filesystem::temp_directory_path() /
        ("goheap2pprof-one-dwarf-read-" + std::to_string(getpid()) + "-" + tc.label);
    std::filesystem::copy_file(b.path, copy, std::filesystem::copy_options::overwrite_existing);
    auto elf = std::make_shared<const ElfFile>(ElfFile::Open(copy.string()));
    const auto analysis = ExecutableAnalysis::Create(elf, std::nullopt, check);
    analysis->AwaitLayoutCheck();  // the background check has read the DWARF
    SpoilDebugSections(copy.string(), *elf);
    // The spoiling is seen through the open file: a second read of the DWARF fails.
    EXPECT_THROW(CheckMemstatsLayout(*elf, analysis->traits()), Error);
    const MemstatsAnalysis& m = analysis->memstats();
    EXPECT_TRUE(m.layout.from_dwarf);
    EXPECT_TRUE(
        CompareMemstatsLayouts(m.layout.layout, expected.layout, analysis->traits()).empty());
    EXPECT_EQ(m.layout.notes, expected.notes);
    std::filesystem::remove(copy);
  }
}

INSTANTIATE_TEST_SUITE_P(GoBuilds, OneDwarfReadTest, testing_go::ToolchainCases(Builds),
                         testing_go::CaseNamer(Builds));

}  // namespace
}  // namespace goheap2pprof
