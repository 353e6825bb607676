// The growth collector's site table (pprof/site_table.h): a stack found
// again is its first site, different stacks are different sites, also when
// every hash collides (a constant hash: only the full comparison tells them
// apart) and across the table's growth from its first 64 slots.
#include "pprof/site_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

namespace goheap2pprof {
namespace {

// Stacks that differ in length, order and one id: all distinct.
std::vector<std::vector<uint32_t>> Stacks(uint32_t n) {
  std::vector<std::vector<uint32_t>> out;
  for (uint32_t i = 0; i < n; ++i) {
    switch (i % 3) {
      case 0:
        out.push_back({i, i + 1, 7});
        break;
      case 1:
        out.push_back({7, i + 1, i});
        break;
      default:
        out.push_back({i});
        break;
    }
  }
  out.push_back({});  // the empty stack is a stack too
  return out;
}

// Enters every stack twice in two rounds and checks the numbering.
void ExpectOneSitePerStack(SiteTable& table, uint32_t n) {
  const std::vector<std::vector<uint32_t>> stacks = Stacks(n);
  std::vector<std::vector<uint32_t>> sites;
  const auto stack_of = [&](uint32_t site) { return std::span<const uint32_t>(sites[site]); };
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < stacks.size(); ++i) {
      const auto next = static_cast<uint32_t>(sites.size());
      const uint32_t site = table.FindOrInsert(stacks[i], next, stack_of);
      if (site == next) sites.push_back(stacks[i]);
      ASSERT_EQ(site, i) << "round " << round;
    }
  }
  EXPECT_EQ(sites.size(), stacks.size());
  EXPECT_EQ(table.size(), stacks.size());
}

TEST(SiteTableTest, FindsEachStackAgainAcrossGrowth) {
  SiteTable table;
  ExpectOneSitePerStack(table, 5000);
}

TEST(SiteTableTest, StacksWhoseHashesCollideStayApart) {
  SiteTable table([](std::span<const uint32_t>) -> uint64_t { return 42; });
  ExpectOneSitePerStack(table, 300);
}

TEST(SiteTableTest, HashSeesOrderAndLength) {
  const std::vector<uint32_t> a{1, 2}, b{2, 1}, c{1, 2, 0}, d{};
  EXPECT_NE(HashStack(a), HashStack(b));
  EXPECT_NE(HashStack(a), HashStack(c));
  EXPECT_NE(HashStack(d), HashStack(std::vector<uint32_t>{0}));
}

}  // namespace
}  // namespace goheap2pprof
