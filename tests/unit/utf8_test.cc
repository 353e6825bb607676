#include "base/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace goheap2pprof {
namespace {

const std::string kR(kReplacementCharacter);

TEST(ValidUtf8, KeepsValidText) {
  for (const std::string& s :
       std::vector<std::string>{"", "server", "/usr/bin/caf\xC3\xA9", "\xE2\x82\xAC 100",
                                "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF", std::string("a\0b", 3)}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
    EXPECT_EQ(ValidUtf8(s), s);
  }
}

TEST(ValidUtf8, ReplacesInvalidBytes) {
  EXPECT_FALSE(IsValidUtf8("\xFF\xFE"));
  EXPECT_EQ(ValidUtf8("go\xFF\xFE"), "go" + kR + kR);
  EXPECT_EQ(ValidUtf8("\x80x"), kR + "x");  // a lone continuation byte
}

TEST(ValidUtf8, RejectsOverlongEncodings) {
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), kR + kR);  // '/' in two bytes
  EXPECT_EQ(ValidUtf8("\xC1\xBF"), kR + kR);
  EXPECT_EQ(ValidUtf8("\xE0\x80\xAF"), kR + kR + kR);  // '/' in three bytes
  EXPECT_EQ(ValidUtf8("\xF0\x80\x80\xAF"), kR + kR + kR + kR);
}

TEST(ValidUtf8, RejectsSurrogates) {
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), kR + kR + kR);  // U+D800
  EXPECT_EQ(ValidUtf8("\xED\xBF\xBF"), kR + kR + kR);  // U+DFFF
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));            // U+D7FF
}

TEST(ValidUtf8, RejectsAboveTheLastCodePoint) {
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80"), kR + kR + kR + kR);  // U+110000
  EXPECT_EQ(ValidUtf8("\xF5\x80\x80\x80"), kR + kR + kR + kR);
  EXPECT_EQ(ValidUtf8("\xF8\x88\x80\x80\x80"), kR + kR + kR + kR + kR);  // old 5-byte form
}

TEST(ValidUtf8, OneReplacementPerTruncatedSequence) {
  // The maximal subpart of an ill-formed sequence becomes one U+FFFD.
  EXPECT_EQ(ValidUtf8("\xE2\x82"), kR);
  EXPECT_EQ(ValidUtf8("\xE2\x82x"), kR + "x");
  EXPECT_EQ(ValidUtf8("\xF0\x9F\x98"), kR);
  EXPECT_EQ(ValidUtf8("a\xF0\x9F\x98\xC3\xA9"), "a" + kR + "\xC3\xA9");
}

}  // namespace
}  // namespace goheap2pprof
