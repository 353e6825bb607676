// The `# runtime.MemStats` block of ?debug=1: GCCPUFraction's %v against
// strings that Go 1.26.8's fmt.Printf("%v\n", x) printed for the same
// float64 values, and the block's layout against writeHeapInternal's.
#include "pprof/memstats_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

namespace goheap2pprof {
namespace {

TEST(GoFormatFloat, MatchesGoPercentV) {
  const std::vector<std::pair<double, std::string>> cases = {
      {0, "0"},
      {0.5, "0.5"},
      {0.0001, "0.0001"},
      {0.00012345, "0.00012345"},
      {5.3e-05, "5.3e-05"},
      {1.0 / 3, "0.3333333333333333"},
      {2.0 / 3, "0.6666666666666666"},
      {0.30000000000000004, "0.30000000000000004"},
      {1e-10, "1e-10"},
      {0.000999, "0.000999"},
      {1, "1"},
      {123456, "123456"},
      {1234567, "1.234567e+06"},
      {1e21, "1e+21"},
      {1e20, "1e+20"},
      {100000, "100000"},
      {999999.5, "999999.5"},
      {0.0036520891690489357, "0.0036520891690489357"},
      {1.5e-7, "1.5e-07"},
      {4.9406564584124654e-324, "5e-324"},
      {std::numeric_limits<double>::max(), "1.7976931348623157e+308"},
      {-0.25, "-0.25"},
      {-0.0, "-0"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "NaN"},
      {0.00001, "1e-05"},
      {2.5e-05, "2.5e-05"},
      {0.012, "0.012"},
  };
  for (const auto& [x, want] : cases) EXPECT_EQ(GoFormatFloat(x), want) << want;
}

MemStats SampleStats() {
  MemStats m;
  m.alloc = m.heap_alloc = 1000;
  m.total_alloc = 2000;
  m.sys = 3000;
  m.mallocs = 40;
  m.frees = 30;
  m.heap_sys = 800;
  m.heap_idle = 300;
  m.heap_inuse = 500;
  m.heap_released = 100;
  m.heap_objects = 10;
  m.stack_inuse = 11;
  m.stack_sys = 12;
  m.mspan_inuse = 13;
  m.mspan_sys = 14;
  m.mcache_inuse = 15;
  m.mcache_sys = 16;
  m.buck_hash_sys = 17;
  m.gc_sys = 18;
  m.other_sys = 19;
  m.next_gc = 4194304;
  m.last_gc = 1764620000123456789;
  m.pause_ns[0] = 5000;
  m.pause_ns[1] = 6000;
  m.pause_end[0] = 1764620000000000000;
  m.pause_end[1] = 1764620000123456789;
  m.num_gc = 2;
  m.num_forced_gc = 1;
  m.gc_cpu_fraction = 5.3e-05;
  m.pause_total_ns = 11000;  // not printed
  return m;
}

std::string RingText(uint64_t a, uint64_t b) {
  std::string s = "[" + std::to_string(a) + " " + std::to_string(b);
  for (int i = 2; i < 256; ++i) s += " 0";
  return s + "]";
}

TEST(MemStatsBlock, LaysOutEveryLineAsWriteHeapInternal) {
  const std::string want =
      "\n# runtime.MemStats\n# Alloc = 1000\n# TotalAlloc = 2000\n# Sys = 3000\n"
      "# Lookups = 0\n# Mallocs = 40\n# Frees = 30\n# HeapAlloc = 1000\n# HeapSys = 800\n"
      "# HeapIdle = 300\n# HeapInuse = 500\n# HeapReleased = 100\n# HeapObjects = 10\n"
      "# Stack = 11 / 12\n# MSpan = 13 / 14\n# MCache = 15 / 16\n# BuckHashSys = 17\n"
      "# GCSys = 18\n# OtherSys = 19\n# NextGC = 4194304\n# LastGC = 1764620000123456789\n"
      "# PauseNs = " +
      RingText(5000, 6000) +
      "\n# PauseEnd = " + RingText(1764620000000000000, 1764620000123456789) +
      "\n# NumGC = 2\n# NumForcedGC = 1\n# GCCPUFraction = 5.3e-05\n# DebugGC = false\n"
      "# MaxRSS = 12582912\n";
  EXPECT_EQ(MemStatsBlock(SampleStats(), 12582912), want);
}

TEST(MemStatsBlock, UnknownMaxRssLeavesTheLineOut) {
  const std::string text = MemStatsBlock(SampleStats(), std::nullopt);
  EXPECT_EQ(text.find("MaxRSS"), std::string::npos);
  EXPECT_TRUE(text.ends_with("# DebugGC = false\n"));
}

TEST(MemStatsBlock, RingsHave256EntriesInRingOrder) {
  MemStats m;
  for (int i = 0; i < 256; ++i) m.pause_ns[i] = 1000 + i;
  std::istringstream in(MemStatsBlock(m, 0));
  std::string line;
  while (std::getline(in, line) && !line.starts_with("# PauseNs = [")) {
  }
  ASSERT_TRUE(line.starts_with("# PauseNs = [1000 1001 ")) << line;
  EXPECT_TRUE(line.ends_with(" 1254 1255]")) << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 3 + 255);
}

}  // namespace
}  // namespace goheap2pprof
