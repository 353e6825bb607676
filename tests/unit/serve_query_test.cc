// The request parser of `goheap2pprof serve`: routes, and net/http/pprof's
// checks and words, with Go's url.ParseQuery and strconv rules.
#include <gtest/gtest.h>

#include <limits>

#include "agent/serve/query.h"

namespace goheap2pprof {
namespace {

TEST(GoQuery, SplitsDecodesAndSkipsBadPairsAsGoDoes) {
  auto q = ParseGoQuery("a=1&b=x+y%21&bad=%zz&semi=1;2&&c&a=2");
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[0], (std::pair<std::string, std::string>("a", "1")));
  EXPECT_EQ(q[1], (std::pair<std::string, std::string>("b", "x y!")));
  EXPECT_EQ(q[2], (std::pair<std::string, std::string>("c", "")));
  EXPECT_EQ(FormValue(q, "a"), "1");  // the first value, as FormValue
  EXPECT_EQ(FormValue(q, "bad"), "");
  EXPECT_EQ(FormValue(q, "semi"), "");
  EXPECT_TRUE(ParseGoQuery("%").empty());
  EXPECT_TRUE(ParseGoQuery("x=%4").empty());
}

TEST(GoQuery, ParseIntAndAtoiFollowStrconv) {
  EXPECT_EQ(GoParseInt("+5"), 5);
  EXPECT_EQ(GoParseInt("-0"), 0);
  EXPECT_EQ(GoParseInt("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(GoParseInt("-9223372036854775808"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(GoParseInt("9223372036854775808"), std::nullopt);
  EXPECT_EQ(GoParseInt(""), std::nullopt);
  EXPECT_EQ(GoParseInt("1.5"), std::nullopt);
  EXPECT_EQ(GoParseInt(" 1"), std::nullopt);
  EXPECT_EQ(GoParseInt("0x10"), std::nullopt);
  EXPECT_EQ(GoAtoiIgnoringError("abc"), 0);
  EXPECT_EQ(GoAtoiIgnoringError("99999999999999999999"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(GoAtoiIgnoringError("-99999999999999999999"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(GoAtoiIgnoringError("-1"), -1);
}

TEST(ServeRoute, RoutesFixedPages) {
  EXPECT_EQ(ParseServeTarget("/").endpoint, Endpoint::kIndex);
  EXPECT_EQ(ParseServeTarget("/targets").endpoint, Endpoint::kTargets);
  EXPECT_EQ(ParseServeTarget("/metrics?x=1").endpoint, Endpoint::kMetrics);
  ServeRoute r = ParseServeTarget("/other");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->status, 404);
  EXPECT_EQ(ParseServeTarget("/bad%zz").error->status, 400);
  EXPECT_EQ(ParseServeTarget("").error->status, 400);
  EXPECT_EQ(ParseServeTarget("*").error->status, 400);
}

TEST(ServeRoute, ProfileByQueryAndByPathPrefix) {
  ServeRoute r = ParseServeTarget("/debug/pprof/heap?pid=42");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.endpoint, Endpoint::kProfile);
  EXPECT_EQ(r.profile.name, ProfileName::kHeap);
  EXPECT_EQ(r.profile.pid, 42);
  EXPECT_EQ(r.profile.seconds, 0);
  EXPECT_EQ(r.profile.debug, 0);

  r = ParseServeTarget("/pid/7/debug/pprof/allocs?pid=9");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.profile.name, ProfileName::kAllocs);
  EXPECT_EQ(r.profile.pid, 7);  // the path wins

  r = ParseServeTarget("/debug/pprof/%68eap?pid=4%32");  // escapes, as Go decodes them
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.profile.pid, 42);
}

TEST(ServeRoute, BadPidsAndUnknownProfiles) {
  EXPECT_EQ(ParseServeTarget("/debug/pprof/heap").error->status, 400);
  EXPECT_EQ(ParseServeTarget("/debug/pprof/heap?pid=").error->status, 400);
  EXPECT_EQ(ParseServeTarget("/debug/pprof/heap?pid=0").error->status, 400);
  EXPECT_EQ(ParseServeTarget("/debug/pprof/heap?pid=-3").error->status, 400);
  EXPECT_EQ(ParseServeTarget("/debug/pprof/heap?pid=99999999999").error->status, 400);
  EXPECT_EQ(ParseServeTarget("/pid/x/debug/pprof/heap").error->status, 400);
  EXPECT_EQ(ParseServeTarget("/pid/5").error->status, 404);
  for (const char* other : {"block", "mutex", "threadcreate", "goroutines", "profile"}) {
    ServeRoute r = ParseServeTarget(std::string("/debug/pprof/") + other + "?pid=5");
    ASSERT_TRUE(r.error) << other;
    EXPECT_EQ(r.error->status, 404);
    EXPECT_EQ(r.error->text, "Unknown profile");
  }
}

TEST(ServeRoute, GoroutineAsNetHttpPprofServesIt) {
  ServeRoute r = ParseServeTarget("/debug/pprof/goroutine?pid=5&debug=2");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.endpoint, Endpoint::kProfile);
  EXPECT_EQ(r.profile.name, ProfileName::kGoroutine);
  EXPECT_EQ(r.profile.pid, 5);
  EXPECT_EQ(r.profile.debug, 2);
  r = ParseServeTarget("/pid/6/debug/pprof/goroutine?debug=1");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.profile.name, ProfileName::kGoroutine);
  EXPECT_EQ(r.profile.pid, 6);
  EXPECT_EQ(r.profile.debug, 1);
  EXPECT_EQ(ParseServeTarget("/debug/pprof/goroutine").error->status, 400);
  // gc is the heap's alone; Go ignores it for goroutine.
  r = ParseServeTarget("/debug/pprof/goroutine?pid=5&gc=1");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.profile.debug, 0);
  // goroutine is in net/http/pprof's profileSupportsDelta: seconds=N is a
  // delta, with the same checks as heap's.
  r = ParseServeTarget("/debug/pprof/goroutine?pid=5&seconds=3");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.profile.seconds, 3);
  EXPECT_EQ(ParseServeTarget("/debug/pprof/goroutine?pid=5&seconds=3&debug=2").error->text,
            "seconds and debug params are incompatible");
  EXPECT_EQ(ParseServeTarget("/debug/pprof/goroutine?pid=5&seconds=0").error->status, 400);
}

TEST(ServeRoute, FlamegraphByPathOrQueryWithAKnownSampleType) {
  ServeRoute r = ParseServeTarget("/pid/42/flamegraph");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.endpoint, Endpoint::kFlamegraph);
  EXPECT_EQ(r.flamegraph.pid, 42);
  EXPECT_EQ(r.flamegraph.sample_index, "inuse_space");
  r = ParseServeTarget("/flamegraph?pid=7&sample_index=alloc_objects");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.flamegraph.pid, 7);
  EXPECT_EQ(r.flamegraph.sample_index, "alloc_objects");
  r = ParseServeTarget("/pid/7/flamegraph?pid=9&sample_index=%69nuse_objects");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.flamegraph.pid, 7);  // the path wins
  EXPECT_EQ(r.flamegraph.sample_index, "inuse_objects");
  // The sample type goes to the worker: only the profile's four names pass.
  for (const char* bad : {"cpu", "inuse_space%00", "%3Cscript%3E", "0"}) {
    r = ParseServeTarget(std::string("/pid/7/flamegraph?sample_index=") + bad);
    ASSERT_TRUE(r.error) << bad;
    EXPECT_EQ(r.error->status, 400);
  }
  EXPECT_EQ(ParseServeTarget("/flamegraph").error->status, 400);
  EXPECT_EQ(ParseServeTarget("/pid/0/flamegraph").error->status, 400);
  EXPECT_EQ(ParseServeTarget("/pid/7/flamegraph/x").error->status, 404);
}

TEST(ServeRoute, SecondsWithNetHttpPprofWords) {
  // %2B is a '+' sign, which ParseInt accepts; a bare '+' is a space.
  ServeRoute r = ParseServeTarget("/debug/pprof/heap?pid=1&seconds=%2B10");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.profile.seconds, 10);
  for (const char* bad : {"0", "-1", "x", "1.5", "99999999999999999999", "+10"}) {
    r = ParseServeTarget(std::string("/debug/pprof/heap?pid=1&seconds=") + bad);
    ASSERT_TRUE(r.error) << bad;
    EXPECT_EQ(r.error->status, 400);
    EXPECT_EQ(r.error->text, R"(invalid value for "seconds" - must be a positive integer)");
  }
  // An empty seconds is no delta, as in Go.
  r = ParseServeTarget("/debug/pprof/heap?pid=1&seconds=");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.profile.seconds, 0);
  r = ParseServeTarget("/debug/pprof/heap?pid=1&seconds=5&debug=1");
  EXPECT_EQ(r.error->text, "seconds and debug params are incompatible");
  // debug that does not parse is 0 for Go: no conflict.
  EXPECT_FALSE(ParseServeTarget("/debug/pprof/heap?pid=1&seconds=5&debug=x").error);
  // The delta path never reads gc.
  EXPECT_FALSE(ParseServeTarget("/debug/pprof/heap?pid=1&seconds=5&gc=1").error);
  ServeQueryLimits limits;
  limits.max_seconds = 30;
  EXPECT_EQ(ParseServeTarget("/debug/pprof/heap?pid=1&seconds=31", limits).error->status, 400);
  EXPECT_FALSE(ParseServeTarget("/debug/pprof/heap?pid=1&seconds=30", limits).error);
}

TEST(ServeRoute, GcIsRefusedForHeapAndIgnoredForAllocs) {
  ServeRoute r = ParseServeTarget("/debug/pprof/heap?pid=1&gc=1");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->status, 400);
  EXPECT_NE(r.error->text.find("cannot be honoured"), std::string::npos);
  EXPECT_FALSE(ParseServeTarget("/debug/pprof/heap?pid=1&gc=0").error);
  EXPECT_FALSE(ParseServeTarget("/debug/pprof/heap?pid=1&gc=x").error);
  EXPECT_FALSE(ParseServeTarget("/debug/pprof/allocs?pid=1&gc=1").error);
}

TEST(ServeRoute, DebugIsAnyNonZeroInteger) {
  EXPECT_EQ(ParseServeTarget("/debug/pprof/heap?pid=1&debug=1").profile.debug, 1);
  EXPECT_EQ(ParseServeTarget("/debug/pprof/heap?pid=1&debug=-2").profile.debug, -2);
  EXPECT_EQ(ParseServeTarget("/debug/pprof/heap?pid=1&debug=yes").profile.debug, 0);
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

TEST(ServeRoute, ProcessMetricsByPathAndByQuery) {
  ServeRoute r = ParseServeTarget("/pid/42/metrics");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.endpoint, Endpoint::kProcessMetrics);
  EXPECT_EQ(r.profile.pid, 42);
  r = ParseServeTarget("/metrics?pid=43");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.endpoint, Endpoint::kProcessMetrics);
  EXPECT_EQ(r.profile.pid, 43);
  // Without a pid key: the server's own metrics, as before.
  EXPECT_EQ(ParseServeTarget("/metrics").endpoint, Endpoint::kMetrics);
  EXPECT_EQ(ParseServeTarget("/metrics?x=1").endpoint, Endpoint::kMetrics);
  for (const char* bad : {"/metrics?pid=", "/metrics?pid=0", "/metrics?pid=-1", "/metrics?pid=x",
                          "/pid/abc/metrics", "/pid/0/metrics", "/pid//metrics"}) {
    r = ParseServeTarget(bad);
    ASSERT_TRUE(r.error) << bad;
    EXPECT_EQ(r.error->status, 400) << bad;
    EXPECT_EQ(r.error->text, "invalid pid - must be a positive integer") << bad;
  }
  // Only /metrics itself under /pid/N/.
  r = ParseServeTarget("/pid/42/metrics/x");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->status, 404);
}

}  // namespace
}  // namespace goheap2pprof
