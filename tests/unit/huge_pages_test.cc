// GrowWithHugePages keeps a vector's elements and grows it as push_back
// would; a buffer it advised is backed by huge pages once filled (where the
// kernel has transparent huge pages at all).
#include "base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace goheap2pprof {
namespace {

TEST(HugePagesTest, GrowKeepsElementsAndDoubles) {
  std::vector<uint64_t> v;
  for (uint64_t i = 0; i < 1'000'000; ++i) {
    const size_t capacity = v.capacity();
    GrowWithHugePages(v, 1);
    ASSERT_GE(v.capacity(), v.size() + 1);
    if (capacity == v.size()) {
      ASSERT_GE(v.capacity(), 2 * capacity);  // amortized: no growth by one
    } else {
      ASSERT_EQ(v.capacity(), capacity);  // room left: nothing moves
    }
    v.push_back(i * 3);
  }
  for (uint64_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], i * 3) << i;
}

TEST(HugePagesTest, GrowMakesRoomForMoreThanDouble) {
  std::vector<uint8_t> v(10, 7);
  GrowWithHugePages(v, 5 << 20);
  EXPECT_GE(v.capacity(), 10u + (5u << 20));
  EXPECT_EQ(v, std::vector<uint8_t>(10, 7));
  GrowWithHugePages(v, 0);  // no room needed: nothing changes
  EXPECT_EQ(v, std::vector<uint8_t>(10, 7));
}

TEST(HugePagesTest, AdviceOfOddRangesIsHarmless) {
  std::vector<uint8_t> small(100, 1);
  AdviseHugePages(small.data(), small.size());
  AdviseHugePages(nullptr, 8 << 20);
  AdviseHugePages(small.data() + 3, 0);
  EXPECT_EQ(small, std::vector<uint8_t>(100, 1));
}

// A field of the mapping that holds `p` in /proc/self/smaps ("AnonHugePages",
// "VmFlags"), the text after its colon; nullopt if no mapping holds it.
std::optional<std::string> SmapsField(const void* p, const std::string& field) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  }
  return std::nullopt;
}

TEST(HugePagesTest, AdvisedVectorIsBackedByHugePages) {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  if (mode.empty() || mode.find("[never]") != std::string::npos) {
    GTEST_SKIP() << "transparent huge pages are off on this kernel (" << mode << ")";
  }
  std::vector<uint64_t> v;
  GrowWithHugePages(v, 4 << 20);  // 32 MiB
  for (uint64_t i = 0; i < (4u << 20); ++i) v.push_back(i);
  // What is ours to do: the mapping carries MADV_HUGEPAGE ("hg"). Whether the
  // kernel then backs it with huge pages depends on how fragmented free
  // memory is at that moment (a loaded machine may give none), so that is
  // printed, not asserted.
  const std::optional<std::string> flags = SmapsField(v.data() + v.size() / 2, "VmFlags");
  ASSERT_TRUE(flags.has_value()) << "no mapping holds the vector";
  EXPECT_NE((" " + *flags + " ").find(" hg "), std::string::npos) << "VmFlags:" << *flags;
  std::cout << "AnonHugePages:"
            << SmapsField(v.data() + v.size() / 2, "AnonHugePages").value_or("?")
            << " (THP mode: " << mode << ")\n";
}

TEST(HugePagesTest, WorkerTunablesAddMallocHugePagesOnce) {
  EXPECT_EQ(TunablesWithMallocHugePages(nullptr), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(TunablesWithMallocHugePages(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(TunablesWithMallocHugePages("glibc.malloc.arena_max=2"),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  // The user's own setting wins, 0 included.
  EXPECT_EQ(TunablesWithMallocHugePages("glibc.malloc.hugetlb=0"), "glibc.malloc.hugetlb=0");
}

}  // namespace
}  // namespace goheap2pprof
