// The one size syntax of the options (base/byte_size.h): bare bytes exactly
// as before, and units that are powers of 1024 however they are spelled.
#include "base/byte_size.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "agent/watch/watch.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

TEST(ByteSize, BareBytesAreReadExactly) {
  EXPECT_EQ(ParseByteSize("0"), 0u);
  EXPECT_EQ(ParseByteSize("1048576"), 1048576u);
  // Above 2^53 a double would round it: read as an integer.
  EXPECT_EQ(ParseByteSize("9007199254740993"), uint64_t{9007199254740993});
  EXPECT_EQ(ParseByteSize("9223372036854775807"), uint64_t{9223372036854775807});
}

TEST(ByteSize, UnitsArePowersOf1024HoweverSpelled) {
  for (const char* text : {"64M", "64MB", "64MiB", "65536K", "65536k", "65536KiB", "65536KB"}) {
    EXPECT_EQ(ParseByteSize(text), uint64_t{64} << 20) << text;
  }
  EXPECT_EQ(ParseByteSize("2GiB"), uint64_t{2} << 30);
  EXPECT_EQ(ParseByteSize("1.5G"), uint64_t{3} << 29);
  EXPECT_EQ(ParseByteSize("1T"), uint64_t{1} << 40);
  EXPECT_EQ(ParseByteSize("100B"), 100u);
  EXPECT_EQ(ParseByteSize("0.5KiB"), 512u);
  EXPECT_EQ(ParseByteSize("1.5B"), 1u);  // no fraction of a byte
}

TEST(ByteSize, RefusesWhatIsNotASize) {
  for (const char* text : {"", "-1", "+1", "1e6", "0x10", "64 MiB", " 64", "64MiBs", "64mb", "64X",
                           "M", "1.2.3", ".", "9223372036854775808", "8388608TiB", "inf"}) {
    EXPECT_FALSE(ParseByteSize(text).has_value()) << text;
  }
}

// --rss-above parses through the same function and keeps its own rule: a
// size of zero means nothing.
TEST(ByteSize, RssAboveListsUseIt) {
  EXPECT_EQ(ParseSizeList("1.5G,512MiB"),
            (std::vector<uint64_t>{uint64_t{512} << 20, uint64_t{3} << 29}));
  EXPECT_THROW(ParseSizeList("0"), Error);
  EXPECT_THROW(ParseSizeList("512Q"), Error);
}

}  // namespace
}  // namespace goheap2pprof
