// The per-version table: what changes at which Go release.
#include "runtime/runtime_traits.h"

#include <gtest/gtest.h>

#include "base/error.h"

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
  EXPECT_EQ(t118.cycle_symbol, "runtime.mProf");
  EXPECT_EQ(t118.cycle_encoding, CycleEncoding::kMProfStruct);
  EXPECT_FALSE(t118.cached_location_deck_retry);

  RuntimeTraits t119 = TraitsForVersion({1, 19, 8});
  EXPECT_TRUE(t119.verified);
  EXPECT_EQ(t119.cycle_symbol, "runtime.mProfCycle");
  EXPECT_EQ(t119.max_stack_words, 32u);
  EXPECT_FALSE(t119.writes_start_line);

  RuntimeTraits t121 = TraitsForVersion({1, 21, 0});
  EXPECT_TRUE(t121.dedup_by_printed_name);
  EXPECT_TRUE(t121.deck_compares_printed_name);
  EXPECT_FALSE(t121.verified);
  EXPECT_FALSE(t121.newer_than_verified);

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

TEST(RuntimeTraits, OnlyUntestedVersionsCarryAWarning) {
  EXPECT_EQ(VerifiedVersionsText(), "Go 1.19, 1.26 and 1.27");
  EXPECT_EQ(UntestedVersionWarning(TraitsForVersion({1, 26, 8})), std::nullopt);
  std::optional<std::string> newer = UntestedVersionWarning(TraitsForVersion({1, 29, 0}));
  ASSERT_TRUE(newer.has_value());
  EXPECT_EQ(newer->find("go1.29.0 is newer than the Go versions goheap2pprof is tested with (Go "
                        "1.19, 1.26 and 1.27)"),
            0u)
      << *newer;
  std::optional<std::string> between = UntestedVersionWarning(TraitsForVersion({1, 22, 1}));
  ASSERT_TRUE(between.has_value());
  EXPECT_EQ(between->find("go1.22.1 is not one of the Go versions"), 0u) << *between;
}

}  // namespace
}  // namespace goheap2pprof
