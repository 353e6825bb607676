// The goroutine reader's variables recovered from machine code
// (gobin/goroutine_variables.h) on every toolchain, non-PIE and PIE,
// internally and externally linked, amd64 and arm64: the same file's symbol
// table, hidden from the recovery (stripped_view.h), is the answer.
#include "gobin/goroutine_variables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "go_toolchains.h"
#include "gobin/go_binary.h"
#include "runtime/goroutine_layout.h"
#include "stripped_view.h"

namespace goheap2pprof {
namespace {

struct Mode {
  std::string label;
  std::string program;  // the go_programs fixture's name for it
};

const std::vector<Mode>& Modes() {
  // arm64: the heap variables' twins (-ldflags=-w: a symbol table, no
  // DWARF), built on every toolchain.
  static const std::vector<Mode> kModes = {{"exe", "frames-amd64-exe"},
                                           {"pie", "frames-amd64-pie"},
                                           {"exe-cgo", "frames-amd64-exe-cgo"},
                                           {"pie-cgo", "frames-amd64-pie-cgo"},
                                           {"arm64-exe", "heapvars-arm64-exe-twin"},
                                           {"arm64-pie", "heapvars-arm64-pie-twin"}};
  return kModes;
}

class GoroutineVariablesTest : public testing_go::ToolchainTest<Mode, Modes> {};

TEST_P(GoroutineVariablesTest, RecoveredFromCodeEqualSymbols) {
  testing_go::GoProgram p = testing_go::FindGoProgram(*tc_, mode_->program);
  if (!p.skip_reason.empty()) GTEST_SKIP() << p.skip_reason;
  ASSERT_TRUE(p.error.empty()) << p.error;
  testing_go::OpenedGoBinary bin = testing_go::OpenGoBinary(p.path);
  const GoVersion version{1, tc_->minor, tc_->patch};
  const GoroutineVariableLayout layout{
      .fing_is_bool = tc_->minor <= 19,
      .finalizer_function = GoroutineLayoutForVersion(version).finalizer_function};
  size_t retyped = 0;
  ElfFile view_elf = ElfFile::FromBytes(testing_go::WithoutSymtab(*bin.elf, &retyped), p.path);
  ASSERT_EQ(retyped, 1u);
  GoBinary view(view_elf);
  ASSERT_FALSE(view_elf.HasSymtab());
  const GoroutineVariables got = LocateGoroutineVariables(view, layout);
  const GoroutineVariables want = LocateGoroutineVariables(*bin.go, layout);
  EXPECT_EQ(got.allglen.addr, want.allglen.addr) << got.allglen.source;
  EXPECT_EQ(got.allgptr.addr, want.allgptr.addr) << got.allgptr.source;
  ASSERT_TRUE(want.fing);
  ASSERT_TRUE(got.fing);
  EXPECT_EQ(got.fing->addr, want.fing->addr) << got.fing->source;
  ASSERT_TRUE(want.wait_reasons);
  ASSERT_TRUE(got.wait_reasons);
  EXPECT_EQ(got.wait_reasons->addr, want.wait_reasons->addr) << got.wait_reasons->source;
  // Counted from the strings in the file: at least the array, perhaps a
  // neighbour's strings after it (never read: no wait reason is that large).
  EXPECT_GE(got.wait_reason_count, want.wait_reason_count);
  EXPECT_GT(want.wait_reason_count, 20u);
}

// The wait-reason table is accepted only when its strings are the first wait
// reasons: with "GC assist marking" changed in the file, the one array
// waitReason.String indexes is refused, not taken.
TEST_P(GoroutineVariablesTest, WaitReasonTableCheckedByItsStrings) {
  testing_go::GoProgram p = testing_go::FindGoProgram(*tc_, mode_->program);
  if (!p.skip_reason.empty()) GTEST_SKIP() << p.skip_reason;
  ASSERT_TRUE(p.error.empty()) << p.error;
  testing_go::OpenedGoBinary bin = testing_go::OpenGoBinary(p.path);
  size_t retyped = 0;
  std::vector<uint8_t> bytes = testing_go::WithoutSymtab(*bin.elf, &retyped);
  ASSERT_EQ(retyped, 1u);
  const std::string_view text = "GC assist marking";
  size_t changed = 0;
  for (auto it = std::search(bytes.begin(), bytes.end(), text.begin(), text.end());
       it != bytes.end(); it = std::search(it, bytes.end(), text.begin(), text.end())) {
    it[text.size() - 1] = 'G';
    ++changed;
  }
  ASSERT_GE(changed, 1u);
  ElfFile view_elf = ElfFile::FromBytes(std::move(bytes), p.path);
  GoBinary view(view_elf);
  const GoroutineVariableLayout layout{
      .fing_is_bool = tc_->minor <= 19,
      .finalizer_function =
          GoroutineLayoutForVersion({1, tc_->minor, tc_->patch}).finalizer_function};
  try {
    LocateGoroutineVariables(view, layout);
    ADD_FAILURE() << "a wait-reason table without \"GC assist marking\" was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("runtime.waitReasonStrings"), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, GoroutineVariablesTest,
                         testing_go::ToolchainCases(testing_go::FramesBuilds),
                         testing_go::CaseNamer(testing_go::FramesBuilds));

}  // namespace
}  // namespace goheap2pprof
