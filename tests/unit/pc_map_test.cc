// PcMap against std::map on the same operations; SharedLeadingPcs and
// LeadingRepeats.
#include "base/pc_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace goheap2pprof {
namespace {

TEST(PcMap, AgreesWithStdMap) {
  PcMap<uint32_t> m;
  std::map<uint64_t, uint32_t> ref;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    // Clustered keys like PCs in one text segment, plus some far away.
    uint64_t key = (i % 7 == 0) ? rng() | 1 : 0x400000 + (rng() % 50000) * 4;
    uint32_t value = static_cast<uint32_t>(rng());
    m.Insert(key, value);
    ref[key] = value;
  }
  EXPECT_EQ(m.size(), ref.size());
  for (const auto& [k, v] : ref) {
    const uint32_t* got = m.Find(k);
    ASSERT_NE(got, nullptr) << k;
    EXPECT_EQ(*got, v);
  }
  EXPECT_EQ(m.Find(0), nullptr);
  EXPECT_EQ(m.Find(0x3fffff), nullptr);
}

// Up to the first word that differs, or the shorter stack's end.
TEST(SharedLeadingPcs, CountsUpToTheFirstDifferenceOrTheShorterEnd) {
  const std::vector<uint64_t> a = {1, 2, 3, 4};
  EXPECT_EQ(SharedLeadingPcs(a, std::vector<uint64_t>{1, 2, 9, 4}), 2u);
  EXPECT_EQ(SharedLeadingPcs(a, std::vector<uint64_t>{1, 2}), 2u);
  EXPECT_EQ(SharedLeadingPcs(std::vector<uint64_t>{1, 2}, a), 2u);
  EXPECT_EQ(SharedLeadingPcs(a, a), 4u);
  EXPECT_EQ(SharedLeadingPcs(a, std::vector<uint64_t>{}), 0u);
  EXPECT_EQ(SharedLeadingPcs(a, std::vector<uint64_t>{2, 2, 3, 4}), 0u);
}

TEST(SharedTrailingPcs, CountsTheWordsTwoStacksEndWithAlike) {
  const std::vector<uint64_t> a = {9, 1, 2, 3};
  EXPECT_EQ(SharedTrailingPcs(a, std::vector<uint64_t>{2, 3}), 2u);
  EXPECT_EQ(SharedTrailingPcs(a, std::vector<uint64_t>{8, 1, 2, 3}), 3u);
  EXPECT_EQ(SharedTrailingPcs(a, a), 4u);
  EXPECT_EQ(SharedTrailingPcs(a, std::vector<uint64_t>{7, 7, 9, 1, 2, 3}), 4u);
  EXPECT_EQ(SharedTrailingPcs(a, std::vector<uint64_t>{}), 0u);
  EXPECT_EQ(SharedTrailingPcs(a, std::vector<uint64_t>{1, 2, 3, 4}), 0u);
}

// Every length of run, from none to the whole, before and after the
// eight-word steps, against a count one word at a time.
TEST(LeadingRepeats, CountsTheRunOfOnePcAtTheStart) {
  for (size_t size = 0; size <= 40; ++size) {
    for (size_t run = 0; run <= size; ++run) {
      std::vector<uint64_t> words(size, 7);
      if (run < size) words[run] = 8;
      EXPECT_EQ(LeadingRepeats(words, 7), run) << size << " words, run " << run;
    }
  }
  EXPECT_EQ(LeadingRepeats(std::vector<uint64_t>(1000, 5), 5), 1000u);
  EXPECT_EQ(LeadingRepeats(std::vector<uint64_t>(1000, 5), 6), 0u);
}

}  // namespace
}  // namespace goheap2pprof
