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
  std::string ldflags;  // extra go build flags
  bool dwarf;           // whether the binary keeps its DWARF
};

const std::vector<BuildMode>& BuildModes() {
  static const std::vector<BuildMode> kModes = {
      {"exe", "", true},
      {"pie", "-buildmode=pie", true},
      {"nodwarf", "-ldflags=-w", false},
  };
  return kModes;
}

struct Built {
  std::string path;
  std::string skip_reason;
  std::string error;
};

// testdata/errtargets/quiet, built once per toolchain and mode.
const Built& GetBinary(const Toolchain& tc, const BuildMode& mode) {
  static std::map<std::string, Built> cache;
  const std::string key = tc.label + "-" + mode.label;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Built& b = cache[key];
  b.path = (std::filesystem::path(GOHEAP2PPROF_BINARY_DIR) / "testdata_dwarf" / ("quiet-" + key))
               .string();
  testing_go::BuildResult r = testing_go::BuildGoProgram(tc, "errtargets/quiet", b.path, "amd64",
                                                         false, false, mode.ldflags);
  b.skip_reason = r.skip_reason;
  b.error = r.error;
  return b;
}

class DwarfLayoutTest : public ::testing::TestWithParam<testing_go::ToolchainCase> {};

TEST_P(DwarfLayoutTest, DwarfEqualsTheTable) {
  const Toolchain& tc = Toolchains()[GetParam().toolchain];
  const BuildMode& mode = BuildModes()[GetParam().mode];
  const Built& b = GetBinary(tc, mode);
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

INSTANTIATE_TEST_SUITE_P(GoBuilds, DwarfLayoutTest,
                         ::testing::ValuesIn(testing_go::AllToolchainCases(BuildModes().size())),
                         [](const auto& info) {
                           return testing_go::CaseName(info.param,
                                                       BuildModes()[info.param.mode].label);
                         });

}  // namespace
}  // namespace goheap2pprof
