// The per-version table: what changes at which Go release (checked against
// each toolchain's runtime sources, see the README's support table).
#include "runtime/runtime_traits.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "go_toolchains.h"

namespace goheap2pprof {
namespace {

TEST(RuntimeTraits, RefusesGoOlderThan118) {
  try {
    TraitsForVersion({1, 17, 13});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("go1.17.13"), std::string::npos) << e.what();
  }
}

TEST(RuntimeTraits, VersionBoundaries) {
  RuntimeTraits t118 = TraitsForVersion({1, 18, 0});
  EXPECT_EQ(t118.variables.cycle_symbol, "runtime.mProf");
  EXPECT_EQ(t118.variables.mbuckets, DataSection::kNoptrbss);
  EXPECT_EQ(t118.variables.mem_profile_rate, DataSection::kNoptrbss);
  EXPECT_FALSE(t118.frame_function_elides_shapes);
  EXPECT_EQ(t118.cycle_encoding, CycleEncoding::kMProfStruct);
  EXPECT_FALSE(t118.cached_location_deck_retry);

  RuntimeTraits t119 = TraitsForVersion({1, 19, 8});
  EXPECT_TRUE(t119.verified);
  EXPECT_EQ(t119.variables.cycle_symbol, "runtime.mProfCycle");
  EXPECT_EQ(t119.variables.mbuckets, DataSection::kBss);
  EXPECT_EQ(t119.variables.cycle, DataSection::kNoptrbss);
  EXPECT_EQ(t119.variables.mem_profile_rate, DataSection::kNoptrbss);
  EXPECT_EQ(TraitsForVersion({1, 20, 0}).variables.mem_profile_rate, DataSection::kNoptrdata);
  EXPECT_EQ(t119.max_stack_words, 32u);
  EXPECT_FALSE(t119.writes_start_line);

  RuntimeTraits t121 = TraitsForVersion({1, 21, 0});
  EXPECT_TRUE(t121.frame_function_elides_shapes);
  EXPECT_TRUE(t121.dedup_by_printed_name);
  EXPECT_TRUE(t121.deck_compares_printed_name);
  EXPECT_TRUE(t121.verified);
  EXPECT_FALSE(t121.newer_than_verified);

  // runtime/pprof keyed Functions by the printed name in go1.21.0-go1.21.5
  // only; go1.21.6 fixed it (and so every later 1.21), the deck kept
  // comparing printed names through 1.21.
  EXPECT_TRUE(TraitsForVersion({1, 21, 5}).dedup_by_printed_name);
  for (int patch : {6, 13, 99}) {
    RuntimeTraits t = TraitsForVersion({1, 21, patch});
    EXPECT_FALSE(t.dedup_by_printed_name) << patch;
    EXPECT_TRUE(t.deck_compares_printed_name) << patch;
  }
  EXPECT_FALSE(TraitsForVersion({1, 20, 14}).dedup_by_printed_name);

  RuntimeTraits t122 = TraitsForVersion({1, 22, 0});
  EXPECT_FALSE(t122.dedup_by_printed_name);
  EXPECT_FALSE(t122.deck_compares_printed_name);

  EXPECT_EQ(TraitsForVersion({1, 23, 0}).max_stack_words, 1024u);
  EXPECT_EQ(TraitsForVersion({1, 24, 0}).hidden_prefixes.size(), 2u);
  EXPECT_EQ(TraitsForVersion({1, 23, 0}).hidden_prefixes.size(), 1u);

  RuntimeTraits t126 = TraitsForVersion({1, 26, 8});
  EXPECT_EQ(t126.max_stack_words, 1026u);
  EXPECT_EQ(t126.record_layout, MemRecordLayout::kCountsAndBytes);
  EXPECT_FALSE(t126.bytes_label_is_object_size);

  RuntimeTraits t127 = TraitsForVersion({1, 27, 3});
  EXPECT_TRUE(t127.verified);
  EXPECT_EQ(t127.record_layout, MemRecordLayout::kCountsOnly);
  EXPECT_TRUE(t127.bytes_label_is_object_size);

  RuntimeTraits t129 = TraitsForVersion({1, 29, 0});
  EXPECT_FALSE(t129.verified);
  EXPECT_TRUE(t129.newer_than_verified);
  EXPECT_EQ(t129.record_layout, MemRecordLayout::kCountsOnly);
}

// Every minor version from 1.18 to 1.27 is tested (tests/go_toolchains.txt),
// so only newer ones get the warning, and it names what was tested.
TEST(RuntimeTraits, WarnsOnlyForUntestedVersions) {
  for (int minor = 18; minor <= 27; ++minor) {
    for (int patch : {0, 3, 20}) {
      EXPECT_EQ(UnverifiedVersionWarning(TraitsForVersion({1, minor, patch})), std::nullopt)
          << minor << "." << patch;
    }
  }
  std::optional<std::string> w = UnverifiedVersionWarning(TraitsForVersion({1, 28, 1}));
  ASSERT_TRUE(w);
  EXPECT_NE(w->find("go1.28.1 is newer than the Go versions goheap2pprof is tested with"),
            std::string::npos)
      << *w;
}

// The verified releases are exactly the toolchains the Go tier tests with
// (tests/go_toolchains.txt).
TEST(RuntimeTraits, VerifiedVersionsAreTheTestedToolchains) {
  std::string want = "Go ";
  const auto& toolchains = testing_go::Toolchains();
  for (size_t i = 0; i < toolchains.size(); ++i) {
    if (i > 0) want += i + 1 == toolchains.size() ? " and " : ", ";
    want += toolchains[i].label.substr(2);
  }
  EXPECT_EQ(VerifiedVersionsText(), want);
  EXPECT_EQ(want,
            "Go 1.18.10, 1.19.8, 1.20.14, 1.21.5, 1.21.13, 1.22.10, 1.23.4, 1.24.3, 1.25.3, "
            "1.26.8 and 1.27.3");
}

}  // namespace
}  // namespace goheap2pprof
