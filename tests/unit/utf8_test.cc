#include "base/utf8.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
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

TEST(LogSafeUtf8, EscapesWhatATerminalActsOn) {
  EXPECT_EQ(LogSafeUtf8("plain\ttext, caf\xC3\xA9 \xE2\x82\xAC"),
            "plain\ttext, caf\xC3\xA9 \xE2\x82\xAC");
  EXPECT_EQ(LogSafeUtf8("\x1B[2J\x1B]0;title\x07red"), "\\x1b[2J\\x1b]0;title\\x07red");
  EXPECT_EQ(LogSafeUtf8("a\rb\nc\x7F"), "a\\x0db\\x0ac\\x7f");
  EXPECT_EQ(LogSafeUtf8(std::string("nul\0", 4)), "nul\\x00");
  // C1: U+009B (CSI) encoded, and as the bare byte an 8-bit terminal reads.
  EXPECT_EQ(LogSafeUtf8("\xC2\x9B"
                        "2J"),
            "\\xc2\\x9b2J");
  EXPECT_EQ(LogSafeUtf8("\x9B"
                        "2J"),
            "\\x9b2J");
  EXPECT_EQ(LogSafeUtf8("\xC2\xA0"), "\xC2\xA0");  // U+00A0 is no control
}

TEST(LogSafeUtf8, ReplacesInvalidBytesAsValidUtf8Does) {
  for (const std::string& s :
       std::vector<std::string>{"go\xFF\xFE", "\xE2\x82", "\xE0\xA0", "\xC0\xAF", "\xED\xA0\xBF",
                                "\xF4\xA0\xA0\xA0", "\xF5\xBF"}) {
    EXPECT_EQ(LogSafeUtf8(s), ValidUtf8(s)) << s;
  }
  // But a byte 0x80..0x9F that is no part of a sequence is escaped, as a C1 control.
  EXPECT_EQ(LogSafeUtf8("\xE0\x80"), kR + "\\x80");
}

TEST(JsonText, WritesStringsThatAreNotUtf8WithReplacementCharacters) {
  const std::vector<std::string> names{"main.gr\xFFwHeap", "\xE0\x80\xAF.go", "a\xF0\x9F\x98",
                                       "\xED\xA0\x80", "ok \xC3\xA9"};
  nlohmann::json j = nlohmann::json::array();
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const std::string& name : names) {
    j.push_back(name);
    o[name] = name;
  }
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what JsonText is for
  const nlohmann::json back = nlohmann::json::parse(JsonText(j));
  const nlohmann::ordered_json back_o = nlohmann::ordered_json::parse(JsonText(o, 2));
  for (size_t i = 0; i < names.size(); ++i) {
    // The same replacement as ValidUtf8's, for one rule in every writer.
    EXPECT_EQ(back[i], ValidUtf8(names[i])) << names[i];
    EXPECT_EQ(back_o[ValidUtf8(names[i])], ValidUtf8(names[i])) << names[i];
  }
}

// The rule that keeps it so: no JSON is written but through JsonText.
TEST(JsonText, IsTheOnlyWriterOfJson) {
  std::vector<std::string> found;
  for (const char* dir : {"/src", "/tools"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(GOHEAP2PPROF_SOURCE_DIR +
                                                                           std::string(dir))) {
      const std::string path = entry.path().string();
      if (!entry.is_regular_file() || path.ends_with("base/utf8.h")) continue;
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      if (text.str().find(".dump(") != std::string::npos) found.push_back(path);
    }
  }
  EXPECT_TRUE(found.empty()) << "nlohmann dump() outside JsonText in " << found.front();
}

}  // namespace
}  // namespace goheap2pprof
