// Go-binary tier: the heap-bucket layout in the DWARF of real programs built
// by every toolchain of the test matrix equals goheap2pprof's table for
// their version, so the capture's check accepts them; and -ldflags=-w
// leaves no DWARF to check.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "elf/dwarf_types.h"
#include "elf/elf_file.h"
#include "go_toolchains.h"
#include "gobin/go_binary.h"
#include "runtime/bucket_layout.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {
namespace {

using testing_go::Toolchain;
using testing_go::Toolchains;

struct BuildMode {
  std::string label;
  std::string program;  // the go_programs fixture's name for it
  bool dwarf;           // whether the binary keeps its DWARF
};

const std::vector<BuildMode>& BuildModes() {
  // Programs of the go_programs fixture: the oracle target as built (DWARF,
  // compressed), and a twin linked with -w (no DWARF).
  static const std::vector<BuildMode> kModes = {
      {"exe", "oracle-amd64-exe", true},
      {"pie", "oracle-amd64-pie", true},
      {"nodwarf", "heapvars-amd64-exe-twin", false},
  };
  return kModes;
}

class DwarfLayoutTest : public ::testing::TestWithParam<testing_go::ToolchainCase> {};

TEST_P(DwarfLayoutTest, DwarfEqualsTheTable) {
  const Toolchain& tc = Toolchains()[GetParam().toolchain];
  const BuildMode& mode = BuildModes()[GetParam().mode];
  const testing_go::GoProgram b = testing_go::FindGoProgram(tc, mode.program);
  if (!b.skip_reason.empty()) GTEST_SKIP() << b.skip_reason;
  ASSERT_TRUE(b.error.empty()) << b.error;

  ElfFile elf = ElfFile::Open(b.path);
  GoBinary bin(elf);
  ASSERT_TRUE(bin.version());
  ASSERT_EQ(bin.version()->minor, tc.minor);
  const RuntimeTraits traits = TraitsForVersion(*bin.version());
  std::optional<DwarfTypes> dwarf = DwarfTypes::Open(elf);
  if (!mode.dwarf) {
    EXPECT_FALSE(dwarf) << "-ldflags=-w left DWARF in " << b.path;
    EXPECT_EQ(CheckBucketLayout(elf, traits, std::nullopt).proof, LayoutProof::kTable);
    return;
  }
  ASSERT_TRUE(dwarf) << b.path << " has no DWARF";
  // Every struct is described, and exactly as the table says.
  const std::vector<StructLayout> expected = ExpectedBucketLayout(traits);
  std::vector<std::optional<DwarfStruct>> observed;
  for (const StructLayout& s : expected) {
    observed.push_back(s.variable ? dwarf->FindVariableStruct(s.name) : dwarf->FindStruct(s.name));
    ASSERT_TRUE(observed.back()) << s.name << " is not in the DWARF of " << b.path;
    std::cout << "  [" << tc.label << " " << mode.label << "] " << s.name << ": "
              << observed.back()->size << " bytes, " << observed.back()->members.size()
              << " members\n";
  }
  const LayoutComparison cmp = CompareLayout(expected, observed);
  EXPECT_TRUE(cmp.missing.empty());
  for (const std::string& d : cmp.disagreements) ADD_FAILURE() << d;
  // And so the capture's check proves it, without a warning for these
  // tested versions.
  LayoutVerdict v = CheckBucketLayout(elf, traits, std::nullopt);
  EXPECT_EQ(v.proof, LayoutProof::kDwarf);
  EXPECT_TRUE(v.warnings.empty());
}

INSTANTIATE_TEST_SUITE_P(GoBuilds, DwarfLayoutTest, testing_go::ToolchainCases(BuildModes),
                         testing_go::CaseNamer(BuildModes));

}  // namespace
}  // namespace goheap2pprof
