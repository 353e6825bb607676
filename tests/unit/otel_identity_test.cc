// The names a process publishes through OTEL_CTX, from the Resource bytes
// (agent/worker/otel_identity.h) to the OTLP resource push sends
// (agent/push/otlp_resource.h), through the worker's reply (push_wire.h).
#include "agent/worker/otel_identity.h"

#include <gtest/gtest.h>

#include <string>

#include "agent/push/otlp_resource.h"
#include "agent/worker/push_wire.h"
#include "base/error.h"
#include "proto/otlp_common.pb.h"

namespace goheap2pprof {
namespace {

void Add(otlp::common::Resource& r, const std::string& key, const std::string& value) {
  otlp::common::KeyValue* kv = r.add_attributes();
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}

TEST(OtelIdentity, TheTwoNamesOfAPublishedResource) {
  otlp::common::Resource r;
  Add(r, "deployment.environment.name", "prod");
  Add(r, "service.name", "checkout");
  Add(r, "service.instance.id", "627cc493-f310-47de-96bd-71410b7dec09");
  Add(r, "service.name", "second");                    // the first one counts
  r.add_attributes()->set_key("service.instance.id");  // no value: skipped
  const OtelProcessIdentity got = DecodeOtelContextResource(r.SerializeAsString());
  EXPECT_EQ(got.service_name, "checkout");
  EXPECT_EQ(got.service_instance_id, "627cc493-f310-47de-96bd-71410b7dec09");
}

TEST(OtelIdentity, UntrustedBytesAreBoundedOrNoContext) {
  EXPECT_EQ(DecodeOtelContextResource("\xff\xff\xff\xff garbage"), OtelProcessIdentity{});
  EXPECT_EQ(DecodeOtelContextResource(""), OtelProcessIdentity{});
  otlp::common::Resource r;
  otlp::common::KeyValue* kv = r.add_attributes();
  kv->set_key("service.name");
  kv->mutable_value()->set_int_value(7);  // not a string: not a name
  Add(r, "service.instance.id", std::string(255, 'a') + "\xc3\xa9" + "tail\xff");
  const OtelProcessIdentity got = DecodeOtelContextResource(r.SerializeAsString());
  EXPECT_EQ(got.service_name, "");
  // Cut at 256 bytes without splitting the two-byte é.
  EXPECT_EQ(got.service_instance_id, std::string(255, 'a'));
}

TEST(OtelIdentity, TravelsInTheWorkersReplyBounded) {
  PushMade made;
  made.otel = {"checkout", "abc"};
  EXPECT_EQ(DecodePushMade(EncodePushMade(made), 1 << 20).otel, made.otel);
  made.otel.service_name = std::string(kMaxOtelIdentityValue + 1, 'x');  // a worker gone wrong
  EXPECT_THROW(DecodePushMade(EncodePushMade(made), 1 << 20), Error);
}

TEST(OtelIdentity, TheProcessOwnNamesWinOnTheResource) {
  GoProcess p;
  p.facts.pid = 42;
  const std::vector<OtlpAttribute> guessed = OtlpResourceAttributes(p, "api-server", "host-1");
  ASSERT_FALSE(guessed.empty());
  EXPECT_EQ(guessed[0], (OtlpAttribute{"service.name", std::string("api-server")}));
  const std::vector<OtlpAttribute> own =
      OtlpResourceAttributes(p, "api-server", "host-1", {}, {"checkout", "abc"});
  ASSERT_EQ(own.size(), guessed.size() + 1);
  EXPECT_EQ(own[0], (OtlpAttribute{"service.name", std::string("checkout")}));
  EXPECT_EQ(own[1], (OtlpAttribute{"service.instance.id", std::string("abc")}));
}

}  // namespace
}  // namespace goheap2pprof
