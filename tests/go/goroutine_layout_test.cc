// Go-binary tier: runtime.g and runtime.gobuf as the DWARF of real programs
// lays them out, built by every toolchain of the test matrix for amd64 and
// (where arm64 runs live) arm64, are goheap2pprof's per-version table
// (runtime/goroutine_layout.h): the goroutine reader's check proves them,
// without a warning. One table serves both architectures: every field read
// is a word or smaller, at the same offset on both.
#include "runtime/goroutine_layout.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "elf/dwarf_types.h"
#include "elf/elf_file.h"
#include "go_toolchains.h"
#include "gobin/go_binary.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {
namespace {

struct Build {
  std::string label;
  std::string program;  // the go_programs fixture's name for it
  bool arm64;
};

const std::vector<Build>& Builds() {
  static const std::vector<Build> kBuilds = {
      {"amd64", "oracle-amd64-exe", false},
      {"arm64", "oracle-arm64-exe", true},  // built for the arm64-live toolchains
  };
  return kBuilds;
}

class GoroutineLayoutDwarfTest : public testing_go::ToolchainTest<Build, Builds> {};

TEST_P(GoroutineLayoutDwarfTest, DwarfProvesTheTable) {
  if (mode_->arm64 && !tc_->arm64_live) GTEST_SKIP() << tc_->label << " has no arm64 oracle build";
  const testing_go::GoProgram b = testing_go::FindGoProgram(*tc_, mode_->program);
  if (!b.skip_reason.empty()) GTEST_SKIP() << b.skip_reason;
  ASSERT_TRUE(b.error.empty()) << b.error;
  ElfFile elf = ElfFile::Open(b.path);
  ASSERT_EQ(elf.machine(), mode_->arm64 ? EM_AARCH64 : EM_X86_64);
  GoBinary bin(elf);
  ASSERT_TRUE(bin.version());
  const RuntimeTraits traits = TraitsForVersion(*bin.version());
  const std::optional<DwarfTypes> dwarf = DwarfTypes::Open(elf, {"runtime"});
  ASSERT_TRUE(dwarf) << b.path << " has no DWARF";
  // Throws, naming each field, if the DWARF puts one elsewhere.
  const GoroutineLayoutVerdict v = CheckGoroutineLayout(b.path, &*dwarf, traits);
  EXPECT_EQ(v.proof, LayoutProof::kDwarf);
  EXPECT_TRUE(v.warnings.empty());
}

INSTANTIATE_TEST_SUITE_P(GoBuilds, GoroutineLayoutDwarfTest, testing_go::ToolchainCases(Builds),
                         testing_go::CaseNamer(Builds));

}  // namespace
}  // namespace goheap2pprof
