// The hash index (base/hash_index.h): a key found again is its first entry
// and different keys are different entries, also when every hash collides
// (a constant hash: only the comparison of the keys tells them apart) and
// across the table's growth from its first 64 slots; Find enters nothing.
#include "base/hash_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace goheap2pprof {
namespace {

// Keys that differ in length, order and one byte, the empty key among them.
std::vector<std::string> Keys(uint32_t n) {
  std::vector<std::string> out{""};
  for (uint32_t i = 0; i < n; ++i) {
    const std::string number = std::to_string(i);
    switch (i % 3) {
      case 0:
        out.push_back(number + "/" + number + std::string(i % 17, '\0'));
        break;
      case 1:
        out.push_back(std::string(i % 17, '\0') + number + "/" + number);
        break;
      default:
        out.push_back(number);
        break;
    }
  }
  return out;
}

// Enters every key in two rounds and checks the numbering.
void ExpectOneEntryPerKey(HashIndex& index, uint32_t n) {
  const std::vector<std::string> keys = Keys(n);
  std::vector<std::string> entries;
  const auto key_of = [&](uint32_t entry) { return std::string_view(entries[entry]); };
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < keys.size(); ++i) {
      const auto next = static_cast<uint32_t>(entries.size());
      const uint32_t at = index.FindOrInsert(keys[i], next, key_of);
      if (at == next) entries.push_back(keys[i]);
      ASSERT_EQ(at, i) << "round " << round << " key " << i;
    }
  }
  EXPECT_EQ(entries.size(), keys.size());
  EXPECT_EQ(index.size(), keys.size());
}

TEST(HashIndexTest, FindsEachKeyAgainAcrossGrowth) {
  HashIndex index;
  ExpectOneEntryPerKey(index, 5000);
}

TEST(HashIndexTest, KeysWhoseHashesCollideStayApart) {
  HashIndex index([](std::string_view, uint64_t) -> uint64_t { return 42; });
  ExpectOneEntryPerKey(index, 300);
}

// Find gives each entered key's entry and kNone for the others, before and
// after a Reserve (which rehashes) and with colliding hashes, and enters
// nothing.
TEST(HashIndexTest, FindsEnteredKeysOnly) {
  for (const bool collide : {false, true}) {
    HashIndex index =
        collide ? HashIndex([](std::string_view, uint64_t) -> uint64_t { return 9; }) : HashIndex();
    const std::vector<std::string> keys = Keys(collide ? 200 : 3000);
    std::vector<std::string> entries;
    const auto key_of = [&](uint32_t entry) { return std::string_view(entries[entry]); };
    for (size_t i = 0; i < keys.size(); i += 2) {
      const auto next = static_cast<uint32_t>(entries.size());
      ASSERT_EQ(index.FindOrInsert(keys[i], next, key_of), next);
      entries.push_back(keys[i]);
      if (i == keys.size() / 2) index.Reserve(keys.size() * 4);
    }
    const size_t entered = index.size();
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint32_t found = index.Find(keys[i], key_of);
      if (i % 2 == 0) {
        ASSERT_EQ(found, i / 2) << keys[i];
      } else {
        ASSERT_EQ(found, HashIndex::kNone) << i;
      }
    }
    EXPECT_EQ(index.size(), entered);
  }
}

TEST(HashIndexTest, HashSeesEveryByteAndTheLength) {
  const std::string a = "0123456789abcdef!";
  for (size_t i = 0; i < a.size(); ++i) {
    std::string b = a;
    b[i] ^= 1;
    EXPECT_NE(HashBytes(a, 7), HashBytes(b, 7)) << i;
  }
  EXPECT_NE(HashBytes(std::string(3, '\0'), 7), HashBytes(std::string(4, '\0'), 7));
  EXPECT_NE(HashBytes(a, 7), HashBytes(a, 8));
}

}  // namespace
}  // namespace goheap2pprof
