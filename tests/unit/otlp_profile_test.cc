// The OTLP profiles push --otlp sends (pprof/otlp_profile.h) and the
// resource around them (agent/push/otlp_resource.h): what a receiver decodes
// from the request, read back with our own copy of the messages.
#include "pprof/otlp_profile.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "agent/push/otlp_resource.h"
#include "agent/worker/push_wire.h"
#include "base/error.h"
#include "proto/otlp_profiles.pb.h"

namespace goheap2pprof {
namespace {

namespace op = otlp::profiles;

// A heap profile of two samples over one stack: leaf location 1 has an
// inlined frame (two lines), location 2 one line; one mapping with a build id.
pb::Profile Heap() {
  pb::Profile p;
  for (const char* s : {"", "alloc_objects", "count", "alloc_space", "bytes", "inuse_objects",
                        "inuse_space", "space", "main.leaf", "main.inlined", "main.go", "main.main",
                        "/bin/server", "abc123", "bytes", "note", "cycle 7"}) {
    p.add_string_table(s);
  }
  for (auto [type, unit] : {std::pair{1, 2}, {3, 4}, {5, 2}, {6, 4}}) {
    pb::ValueType* v = p.add_sample_type();
    v->set_type(type);
    v->set_unit(unit);
  }
  p.mutable_period_type()->set_type(7);
  p.mutable_period_type()->set_unit(4);
  p.set_period(524288);
  p.set_time_nanos(1700000000000000000);
  p.add_comment(16);
  p.set_default_sample_type(6);
  pb::Mapping* m = p.add_mapping();
  m->set_id(1);
  m->set_memory_start(0x400000);
  m->set_memory_limit(0x800000);
  m->set_filename(12);
  m->set_build_id(13);
  m->set_has_functions(true);
  for (uint64_t id : {1, 2, 3}) {
    pb::Function* f = p.add_function();
    f->set_id(id);
    f->set_name(id == 1 ? 9 : id == 2 ? 8 : 11);
    f->set_filename(10);
  }
  pb::Location* leaf = p.add_location();
  leaf->set_id(1);
  leaf->set_mapping_id(1);
  leaf->set_address(0x401000);
  leaf->add_line()->set_function_id(1);  // inlined, innermost first
  leaf->mutable_line(0)->set_line(10);
  leaf->add_line()->set_function_id(2);
  leaf->mutable_line(1)->set_line(20);
  pb::Location* root = p.add_location();
  root->set_id(2);
  root->set_mapping_id(1);
  root->set_address(0x402000);
  root->add_line()->set_function_id(3);
  for (int64_t size : {48, 112}) {
    pb::Sample* s = p.add_sample();
    s->add_location_id(1);
    s->add_location_id(2);
    for (int64_t v : {int64_t{2}, 2 * size, int64_t{1}, size}) s->add_value(v);
    pb::Label* l = s->add_label();
    l->set_key(14);
    l->set_num(size);
  }
  return p;
}

op::ExportProfilesServiceRequest Decode(const pb::Profile& p) {
  std::vector<OtlpAttribute> attrs = {{"service.name", std::string("api")},
                                      {"process.pid", int64_t{42}}};
  const std::string body =
      JoinOtlpProfilesRequest(EncodeOtlpResource(attrs), PprofToOtlp(p, {"goheap2pprof", "9.9"}));
  op::ExportProfilesServiceRequest req;
  EXPECT_TRUE(req.ParseFromString(body));
  return req;
}

// The dictionary's attributes at `indices`, as "key=value unit".
std::vector<std::string> Attrs(const op::ProfilesDictionary& d,
                               const google::protobuf::RepeatedField<int32_t>& indices) {
  std::vector<std::string> out;
  for (int32_t i : indices) {
    const op::KeyValueAndUnit& kv = d.attribute_table(i);
    const otlp::common::AnyValue& v = kv.value();
    std::string value = v.has_int_value()    ? std::to_string(v.int_value())
                        : v.has_bool_value() ? (v.bool_value() ? "true" : "false")
                                             : v.string_value();
    out.push_back(d.string_table(kv.key_strindex()) + "=" + value +
                  (kv.unit_strindex() ? " " + d.string_table(kv.unit_strindex()) : ""));
  }
  return out;
}

TEST(OtlpProfile, OneProfilePerSampleTypeInOneScopeAndOneResource) {
  const op::ExportProfilesServiceRequest req = Decode(Heap());
  ASSERT_EQ(req.resource_profiles_size(), 1);
  const op::ResourceProfiles& rp = req.resource_profiles(0);
  ASSERT_EQ(rp.resource().attributes_size(), 2);
  EXPECT_EQ(rp.resource().attributes(0).key(), "service.name");
  EXPECT_EQ(rp.resource().attributes(0).value().string_value(), "api");
  EXPECT_EQ(rp.resource().attributes(1).value().int_value(), 42);
  ASSERT_EQ(rp.scope_profiles_size(), 1);
  const op::ScopeProfiles& sp = rp.scope_profiles(0);
  EXPECT_EQ(sp.scope().name(), "goheap2pprof");
  EXPECT_EQ(sp.scope().version(), "9.9");
  ASSERT_EQ(sp.scope().attributes_size(), 2);
  EXPECT_EQ(sp.scope().attributes(0).key(), "pprof.scope.sample_type_order");
  EXPECT_EQ(sp.scope().attributes(0).value().array_value().values_size(), 4);
  EXPECT_EQ(sp.scope().attributes(1).key(), "pprof.scope.default_sample_type");
  EXPECT_EQ(sp.scope().attributes(1).value().string_value(), "inuse_space");
  const op::ProfilesDictionary& d = req.dictionary();
  ASSERT_EQ(sp.profiles_size(), 4);
  const char* types[] = {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"};
  for (int t = 0; t < 4; ++t) {
    const op::Profile& pr = sp.profiles(t);
    EXPECT_EQ(d.string_table(pr.sample_type().type_strindex()), types[t]);
    EXPECT_EQ(d.string_table(pr.period_type().type_strindex()), "space");
    EXPECT_EQ(pr.period(), 524288);
    EXPECT_EQ(pr.time_unix_nano(), 1700000000000000000u);
    EXPECT_EQ(Attrs(d, pr.attribute_indices()), std::vector<std::string>{"pprof.profile.comment="});
    ASSERT_EQ(pr.samples_size(), 2);
    EXPECT_EQ(pr.samples(1).values(0), (std::vector<int64_t>{2, 224, 1, 112})[t]);
    EXPECT_EQ(Attrs(d, pr.samples(1).attribute_indices()),
              std::vector<std::string>{"bytes=112 bytes"});
  }
}

TEST(OtlpProfile, StacksInlineFramesAndMappingsAreInTheDictionary) {
  const op::ExportProfilesServiceRequest req = Decode(Heap());
  const op::ProfilesDictionary& d = req.dictionary();
  // Index 0 of every table is its zero value.
  EXPECT_EQ(d.string_table(0), "");
  EXPECT_EQ(d.mapping_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.location_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.function_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.stack_table(0).location_indices_size(), 0);
  EXPECT_EQ(d.attribute_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.link_table_size(), 1);
  const op::Profile& pr = req.resource_profiles(0).scope_profiles(0).profiles(0);
  // Both samples share one stack.
  EXPECT_EQ(pr.samples(0).stack_index(), pr.samples(1).stack_index());
  EXPECT_EQ(d.stack_table_size(), 2);
  const op::Stack& stack = d.stack_table(pr.samples(0).stack_index());
  ASSERT_EQ(stack.location_indices_size(), 2);
  const op::Location& leaf = d.location_table(stack.location_indices(0));
  EXPECT_EQ(leaf.address(), 0x401000u);
  ASSERT_EQ(leaf.lines_size(), 2);
  EXPECT_EQ(d.string_table(d.function_table(leaf.lines(0).function_index()).name_strindex()),
            "main.inlined");
  EXPECT_EQ(leaf.lines(0).line(), 10);
  EXPECT_EQ(d.string_table(d.function_table(leaf.lines(1).function_index()).name_strindex()),
            "main.leaf");
  const op::Mapping& m = d.mapping_table(leaf.mapping_index());
  EXPECT_EQ(m.memory_start(), 0x400000u);
  EXPECT_EQ(d.string_table(m.filename_strindex()), "/bin/server");
  EXPECT_EQ(Attrs(d, m.attribute_indices()),
            (std::vector<std::string>{"process.executable.build_id.gnu=abc123",
                                      "pprof.mapping.has_functions=true"}));
}

TEST(OtlpProfile, StringsThatAreNotUtf8AreReplaced) {
  pb::Profile p = Heap();
  p.set_string_table(8, "main.le\xff");  // a function name from a damaged pclntab
  const op::ExportProfilesServiceRequest req = Decode(p);
  const op::ProfilesDictionary& d = req.dictionary();
  EXPECT_EQ(d.string_table(d.function_table(2).name_strindex()), "main.le\xef\xbf\xbd");
}

TEST(OtlpProfile, AnIdOutOfRangeIsRefused) {
  pb::Profile p = Heap();
  p.mutable_sample(0)->set_location_id(0, 9);
  EXPECT_THROW(PprofToOtlp(p, {}), Error);
  p = Heap();
  p.mutable_location(0)->mutable_line(0)->set_function_id(7);
  EXPECT_THROW(PprofToOtlp(p, {}), Error);
  p = Heap();
  p.mutable_mapping(0)->set_build_id(99);
  EXPECT_THROW(PprofToOtlp(p, {}), Error);
}

TEST(OtlpProfile, TheWorkerMakesOtlpFromTheDeltaAlone) {
  PushWork work;
  work.pyroscope = false;
  work.parca = false;
  work.otlp = true;
  work.from_zero = true;
  const PushWork back = DecodePushWork(EncodePushWork(work), 1 << 20);
  EXPECT_TRUE(back.otlp);
  EXPECT_FALSE(back.pyroscope);
  PushMade made = MakePushProfiles(Heap(), back, 7, 1 << 20);
  EXPECT_TRUE(made.pyroscope.empty());
  EXPECT_FALSE(made.state.empty());  // the deltas go on
  EXPECT_EQ(made.otlp_samples, 8u);
  made = DecodePushMade(EncodePushMade(made), 1 << 20);
  op::ResourceProfiles rp;
  ASSERT_TRUE(rp.ParseFromString(made.otlp_resource_profiles));
  EXPECT_EQ(rp.scope_profiles(0).profiles_size(), 4);
}

TEST(OtlpResource, AttributesFromWhatDiscoveryKnows) {
  GoProcess p;
  p.facts.pid = 4321;
  p.facts.exe = "/usr/local/bin/api-server (deleted)";
  p.exe.go_version = "go1.26.8";
  p.exe.build_id = "goid/x";
  p.facts.identity.cgroup.container_id = std::string(64, 'a');
  p.facts.identity.cgroup.pod_uid = "uid-from-cgroup";
  p.facts.identity.names.pod_namespace = "shop";
  p.facts.identity.names.pod = "api-7d9";
  p.facts.identity.names.container = "api";
  p.facts.identity.node = "node-1";
  const std::vector<OtlpAttribute> got =
      OtlpResourceAttributes(p, "shop/api", "host-1", {{"env", "prod"}});
  const std::vector<OtlpAttribute> want = {
      {"service.name", std::string("shop/api")},
      {"process.pid", int64_t{4321}},
      {"process.executable.name", std::string("api-server")},
      {"process.executable.path", std::string("/usr/local/bin/api-server")},
      {"process.executable.build_id.go", std::string("goid/x")},
      {"process.runtime.name", std::string("go")},
      {"process.runtime.version", std::string("go1.26.8")},
      {"container.id", std::string(64, 'a')},
      {"k8s.namespace.name", std::string("shop")},
      {"k8s.pod.name", std::string("api-7d9")},
      {"k8s.pod.uid", std::string("uid-from-cgroup")},
      {"k8s.container.name", std::string("api")},
      {"k8s.node.name", std::string("node-1")},
      {"host.name", std::string("host-1")},
      {"env", std::string("prod")}};
  EXPECT_EQ(got, want);
}

TEST(OtlpResource, AVersionRefusalIsExplainedOnce) {
  const std::string collector =
      "HTTP 400: \x08\x03\x12Pinvalid or unsupported otlp-profiles-development-version: "
      "supported version is 2";
  const std::string note = ExplainOtlpProfilesRejection(collector, kOtlpProfilesVersionHeader,
                                                        kOtlpProfilesVersion, kOtlpProfilesRelease);
  EXPECT_NE(note.find("protocol version 1"), std::string::npos) << note;
  // What the Collector's gRPC receiver answers (the sender's "why").
  const std::string over_grpc =
      "grpc-status 3: invalid or unsupported otlp-profiles-development-version: supported "
      "version is 2";
  EXPECT_EQ(ExplainOtlpProfilesRejection(over_grpc, kOtlpProfilesVersionHeader,
                                         kOtlpProfilesVersion, kOtlpProfilesRelease),
            note);
  EXPECT_EQ(ExplainOtlpProfilesRejection("grpc-status 12: otlp-profiles-development-version",
                                         kOtlpProfilesVersionHeader, kOtlpProfilesVersion,
                                         kOtlpProfilesRelease),
            "");
  EXPECT_EQ(ExplainOtlpProfilesRejection("HTTP 400: bad profile", kOtlpProfilesVersionHeader,
                                         kOtlpProfilesVersion, kOtlpProfilesRelease),
            "");
  EXPECT_EQ(ExplainOtlpProfilesRejection("HTTP 500: otlp-profiles-development-version",
                                         kOtlpProfilesVersionHeader, kOtlpProfilesVersion,
                                         kOtlpProfilesRelease),
            "");
}

}  // namespace
}  // namespace goheap2pprof
