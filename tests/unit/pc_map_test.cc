// PcMap against std::map on the same operations.
#include "base/pc_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

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

}  // namespace
}  // namespace goheap2pprof
