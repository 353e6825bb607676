// Push delivery's pure parts: which answers are retried, what a Retry-After
// asks for, and how the queue keeps within its bounds; and the libcurl that
// push loads.
#include <gtest/gtest.h>

#include <string>

#include "agent/push/curl_library.h"
#include "agent/push/sender.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

TEST(PushDelivery, RateLimitsAndRequestTimeoutsAreRetriedOther4xxAreNot) {
  EXPECT_EQ(ClassifyStatus(200), PushVerdict::kSent);
  EXPECT_EQ(ClassifyStatus(204), PushVerdict::kSent);
  EXPECT_EQ(ClassifyStatus(429), PushVerdict::kRetry);
  EXPECT_EQ(ClassifyStatus(408), PushVerdict::kRetry);
  EXPECT_EQ(ClassifyStatus(500), PushVerdict::kRetry);
  EXPECT_EQ(ClassifyStatus(503), PushVerdict::kRetry);
  EXPECT_EQ(ClassifyStatus(400), PushVerdict::kRejected);
  EXPECT_EQ(ClassifyStatus(401), PushVerdict::kRejected);
  EXPECT_EQ(ClassifyStatus(413), PushVerdict::kRejected);
  EXPECT_EQ(ClassifyStatus(302), PushVerdict::kRejected);  // redirects are not followed
  EXPECT_EQ(ClassifyStatus(600), PushVerdict::kRejected);
}

TEST(CurlLibrary, IsTheLibcurlPushWasBuiltAgainst) {
  const CurlLibrary& curl = Curl();
  const curl_version_info_data* v = curl.version_info(CURLVERSION_NOW);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->version_num, static_cast<unsigned>(LIBCURL_VERSION_NUM)) << v->version;
  // A call through the variadic entry points reaches libcurl itself.
  CURL* h = curl.easy_init();
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L), CURLE_OK);
  EXPECT_EQ(curl.easy_setopt(h, static_cast<CURLoption>(999999), 1L), CURLE_UNKNOWN_OPTION);
  long status = -1;
  EXPECT_EQ(curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status), CURLE_OK);
  EXPECT_EQ(status, 0);
  curl.easy_cleanup(h);
  std::string why;
  EXPECT_EQ(TryCurl(&why), &curl);
  EXPECT_TRUE(why.empty());
}

#ifdef GOHEAP2PPROF_CURL_DLOPEN
TEST(CurlLibrary, AMissingLibcurlIsNamedWithAHint) {
  const auto loaded = TryLoadCurlLibrary("libcurl-goheap2pprof-absent.so.4");
  ASSERT_FALSE(loaded) << "loaded libcurl-goheap2pprof-absent.so.4 as libcurl";
  const Error& e = loaded.error();
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("libcurl-goheap2pprof-absent.so.4"), std::string::npos)
      << e.what();
  EXPECT_NE(e.hint().find("libcurl4"), std::string::npos) << e.hint();
}

TEST(CurlLibrary, ALibraryWithoutLibcurlsFunctionsIsRefused) {
  const auto loaded = TryLoadCurlLibrary("libz.so.1");
  ASSERT_FALSE(loaded) << "loaded libz.so.1 as libcurl";
  const Error& e = loaded.error();
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("has no function curl_global_init"), std::string::npos)
      << e.what();
}
#endif

TEST(PushDelivery, RetryAfterInDeltaSeconds) {
  EXPECT_EQ(ParseRetryAfter("3", 0), 3.0);
  EXPECT_EQ(ParseRetryAfter(" 120 \r\n", 0), 120.0);
  EXPECT_EQ(ParseRetryAfter("0", 0), 0.0);
  // Far beyond any cap, but still a number the caller can cap.
  EXPECT_GT(*ParseRetryAfter("99999999999999999999999", 0), 1e20);
  EXPECT_FALSE(ParseRetryAfter("", 0));
  EXPECT_FALSE(ParseRetryAfter("-5", 0));
  EXPECT_FALSE(ParseRetryAfter("1.5", 0));
  EXPECT_FALSE(ParseRetryAfter("soon", 0));
  EXPECT_FALSE(ParseRetryAfter(std::string(4096, '7'), 0));  // longer than any sane value
}

TEST(PushDelivery, RetryAfterAsHttpDateInEachOfItsThreeForms) {
  HttpClientGlobalInit();
  // Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example) is 784111777.
  const int64_t now = 784111777 - 30;
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now), 30.0);
  EXPECT_EQ(ParseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", now), 30.0);
  EXPECT_EQ(ParseRetryAfter("Sun Nov  6 08:49:37 1994", now), 30.0);
  // A date already past: retry now.
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now + 100), 0.0);
}

PushItem Item(size_t bytes, const std::string& what) { return {std::string(bytes, 'x'), what}; }

TEST(PushDelivery, QueueOverItsByteBoundDropsTheOldest) {
  PushQueue q(64, 100);
  EXPECT_TRUE(q.Push(Item(40, "a")).empty());
  EXPECT_TRUE(q.Push(Item(40, "b")).empty());
  std::vector<PushItem> dropped = q.Push(Item(40, "c"));
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].what, "a");
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.bytes(), 80u);
  // One larger than the bound pushes out everything older, and stays.
  dropped = q.Push(Item(150, "big"));
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0].what, "b");
  EXPECT_EQ(dropped[1].what, "c");
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.bytes(), 150u);
  EXPECT_EQ(q.Pop()->what, "big");
  EXPECT_EQ(q.bytes(), 0u);
  EXPECT_FALSE(q.Pop());
}

TEST(PushDelivery, QueueOverItsCountBoundDropsTheOldest) {
  PushQueue q(2, 1 << 20);
  q.Push(Item(1, "a"));
  q.Push(Item(1, "b"));
  std::vector<PushItem> dropped = q.Push(Item(1, "c"));
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].what, "a");
  EXPECT_EQ(q.Pop()->what, "b");
  EXPECT_EQ(q.Pop()->what, "c");
  q.Push(Item(5, "d"));
  EXPECT_EQ(q.TakeAll().size(), 1u);
  EXPECT_EQ(q.bytes(), 0u);
}

}  // namespace
}  // namespace goheap2pprof
