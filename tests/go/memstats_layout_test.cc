// Go-binary tier: the memory-statistics layout (runtime/memstats_layout.h)
// that the DWARF of real programs proves, built by every toolchain of the
// test matrix for amd64 and arm64, equals goheap2pprof's per-version table,
// which is what stripped binaries are read with; and the DWARF has every
// field the read needs.
#include "runtime/memstats_layout.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

class MemstatsLayoutTest : public ::testing::TestWithParam<testing_go::ToolchainCase> {};

TEST_P(MemstatsLayoutTest, DwarfEqualsTheTable) {
  const Toolchain& tc = Toolchains()[GetParam().toolchain];
  const Build& build = Builds()[GetParam().mode];
  if (build.arm64 && !tc.arm64_live) GTEST_SKIP() << tc.label << " has no arm64 build with DWARF";
  const testing_go::GoProgram b = testing_go::FindGoProgram(tc, build.program);
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

}  // namespace
}  // namespace goheap2pprof
