// The memory statistics' variables recovered from machine code in an
// ordinary program: testdata/gobin/frames links neither runtime.ReadMemStats
// nor runtime/metrics nor runtime/pprof, so the recovery must rest on the
// scheduler, allocator and GC functions every Go program links. Its symbol
// table is the answer, read from the same file whose symbol table the test
// hides (stripped_view.h). (Stripped twins of a program that does link them:
// stripped_binaries_test.cc.)
#include "gobin/memstats_variables.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "go_toolchains.h"
#include "gobin/go_binary.h"
#include "runtime/runtime_traits.h"
#include "stripped_view.h"

namespace goheap2pprof {
namespace {

class MemstatsVariablesTest
    : public testing_go::ToolchainTest<testing_go::FramesBuild, testing_go::FramesBuilds> {};

TEST_P(MemstatsVariablesTest, RecoveredFromCodeEqualSymbols) {
  testing_go::GoProgram p = testing_go::FindGoProgram(*tc_, "frames-amd64-" + mode_->label);
  if (!p.skip_reason.empty()) GTEST_SKIP() << p.skip_reason;
  ASSERT_TRUE(p.error.empty()) << p.error;
  testing_go::OpenedGoBinary bin = testing_go::OpenGoBinary(p.path);
  // The premise: the functions that only some programs link are absent.
  EXPECT_FALSE(bin.go->SymbolAddress("runtime.readmemstats_m"));
  EXPECT_FALSE(bin.go->SymbolAddress("runtime/metrics.runtime_readMetrics"));
  const MemstatsVariableLayout layout =
      TraitsForVersion({1, tc_->minor, tc_->patch}).memstats.variables;
  size_t retyped = 0;
  ElfFile view_elf = ElfFile::FromBytes(testing_go::WithoutSymtab(*bin.elf, &retyped), p.path);
  ASSERT_EQ(retyped, 1u);
  GoBinary view(view_elf);
  ASSERT_FALSE(view_elf.HasSymtab());
  const MemstatsVariables got = LocateMemstatsVariables(view, layout);
  const std::pair<std::string_view, std::optional<RuntimeVariable>> fields[] = {
      {"runtime.memstats", got.memstats},
      {"runtime.gcController", got.gc_controller},
      {"runtime.mheap_", got.mheap},
      {"runtime.allp", got.allp},
      {"runtime.allglen", got.allglen},
      {"runtime.allm", got.allm},
      {"runtime.sched", got.sched},
      {"runtime.gomaxprocs", got.gomaxprocs},
      {"runtime.emptymspan", got.emptymspan},
      {"runtime.startingStackSize", got.starting_stack_size},
      {"runtime.gcCPULimiter", got.gc_cpu_limiter},
  };
  for (const auto& [symbol, var] : fields) {
    std::optional<uint64_t> want = bin.go->SymbolAddress(symbol);
    if (tc_->minor < 19 && !want) {
      EXPECT_FALSE(var) << symbol;
      continue;
    }
    ASSERT_TRUE(want) << symbol;
    ASSERT_TRUE(var) << symbol;
    EXPECT_EQ(var->addr, *want) << symbol << ": " << var->source;
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, MemstatsVariablesTest,
                         testing_go::ToolchainCases(testing_go::FramesBuilds),
                         testing_go::CaseNamer(testing_go::FramesBuilds));

}  // namespace
}  // namespace goheap2pprof
