// The agent's one duration syntax (base/duration.h): Go's
// time.ParseDuration form, bounded.
#include "base/duration.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace goheap2pprof {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(Duration, ParsesGoForms) {
  EXPECT_EQ(ParseDuration("10s"), seconds(10));
  EXPECT_EQ(ParseDuration("5m"), minutes(5));
  EXPECT_EQ(ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(ParseDuration("500us"), microseconds(500));
  EXPECT_EQ(ParseDuration("500\xC2\xB5s"), microseconds(500));
  EXPECT_EQ(ParseDuration("2h"), hours(2));
  EXPECT_EQ(ParseDuration("1m30s"), seconds(90));
  EXPECT_EQ(ParseDuration("1.5h"), minutes(90));
  EXPECT_EQ(ParseDuration(".5s"), milliseconds(500));
  EXPECT_EQ(ParseDuration("1.s"), seconds(1));
  EXPECT_EQ(ParseDuration("1500ns"), microseconds(1));  // truncated to microseconds
  EXPECT_EQ(ParseDuration("0"), microseconds(0));
  EXPECT_EQ(ParseDuration("0s"), microseconds(0));
}

TEST(Duration, RefusesWhatGoRefusesAndWhatIsTooLong) {
  for (const char* bad : {"", "10", "1.5", "s", ".s", "-1s", "+1s", "1 s", "1S", "1d", "1sec",
                          "1s ", "1..5s", "1.5.s", "1m30", "0.0"}) {
    EXPECT_EQ(ParseDuration(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseDuration("305h"), hours(305));  // 12.7 days is the bound
  EXPECT_EQ(ParseDuration("306h"), std::nullopt);
  EXPECT_EQ(ParseDuration("300h300h"), std::nullopt);
  EXPECT_EQ(ParseDuration("99999999999999999999999s"), std::nullopt);
}

TEST(Duration, OptionsNameThemselvesAndTheirMinimum) {
  EXPECT_EQ(DurationOption("--poll", "2m"), minutes(2));
  EXPECT_EQ(DurationOption("--interval", "1.5s"), milliseconds(1500));
  try {
    DurationOption("--poll", "10us", milliseconds(1));
    FAIL() << "10us was accepted below a 1ms minimum";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_STREQ(e.what(),
                 "--poll \"10us\": expected a duration such as 500ms, 10s or 5m (or seconds), at "
                 "least 1ms");
  }
  EXPECT_THROW(DurationOption("--interval", "0s"), Error);  // the default minimum is 1us
}

// A bare number is seconds, as the options took before they took units; a
// number with a unit Go does not know, a sign or junk is not.
TEST(Duration, BareNumbersAreSeconds) {
  EXPECT_EQ(DurationOrSeconds("15"), seconds(15));
  EXPECT_EQ(DurationOrSeconds("0.25"), milliseconds(250));
  EXPECT_EQ(DurationOption("--poll", "2"), seconds(2));
  EXPECT_EQ(DurationOrSeconds("-1"), std::nullopt);
  EXPECT_EQ(DurationOrSeconds("15x"), std::nullopt);
  EXPECT_EQ(DurationOrSeconds("1e3"), std::nullopt);
  EXPECT_EQ(DurationOrSeconds(""), std::nullopt);
  EXPECT_EQ(DurationOrSeconds("9999999999"), std::nullopt);  // over kMaxDuration
}

// The settings hold milliseconds: what the options wrote, to the nearest
// one, and back in seconds for messages.
TEST(Duration, SettingsHoldMillisecondsAndPrintSeconds) {
  EXPECT_EQ(MillisOrSeconds("1.5"), milliseconds(1500));
  EXPECT_EQ(MillisOrSeconds("250ms"), milliseconds(250));
  EXPECT_EQ(MillisOrSeconds("1m30s"), milliseconds(90000));
  EXPECT_EQ(MillisOrSeconds("1600us"), milliseconds(2));
  EXPECT_EQ(MillisOrSeconds("0"), milliseconds(0));
  EXPECT_FALSE(MillisOrSeconds("10parsecs").has_value());
  EXPECT_FALSE(MillisOrSeconds("-1").has_value());
  EXPECT_EQ(Seconds(milliseconds(10000)), 10.0);
  EXPECT_EQ(Seconds(milliseconds(250)), 0.25);
}

}  // namespace
}  // namespace goheap2pprof
