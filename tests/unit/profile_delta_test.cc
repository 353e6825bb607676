// DeltaProfile: net/http/pprof's ?seconds=N delta (p0 scaled by -1, merged
// with p1 by internal/profile's rules).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "pprof/profile/delta.h"

namespace goheap2pprof {
namespace {

// A heap profile with functions f0..f2 at locations 1..3 (addresses 0x1000,
// 0x2000, 0x3000) in one mapping; location/function ids are given in the
// order the caller lists them, to check that merging does not depend on ids.
class DeltaProfileMaker {
 public:
  explicit DeltaProfileMaker(std::vector<int> order = {0, 1, 2}) {
    Str("");
    for (const char* t : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}) {
      auto* vt = p_.add_sample_type();
      vt->set_type(Str(t));
      vt->set_unit(Str(std::string(t).find("objects") != std::string::npos ? "count" : "bytes"));
    }
    p_.mutable_period_type()->set_type(Str("space"));
    p_.mutable_period_type()->set_unit(Str("bytes"));
    p_.set_period(524288);
    auto* m = p_.add_mapping();
    m->set_id(1);
    m->set_memory_start(0x400000);
    m->set_memory_limit(0x500000);
    m->set_filename(Str("/bin/app"));
    for (int i : order) {
      auto* f = p_.add_function();
      f->set_id(static_cast<uint64_t>(i) + 10);
      f->set_name(Str("f" + std::to_string(i)));
      auto* l = p_.add_location();
      l->set_id(static_cast<uint64_t>(i) + 100);
      l->set_mapping_id(1);
      l->set_address(0x1000u * (static_cast<uint64_t>(i) + 1));
      auto* ln = l->add_line();
      ln->set_function_id(static_cast<uint64_t>(i) + 10);
      ln->set_line(i + 1);
    }
  }
  DeltaProfileMaker& Sample(std::vector<int> stack, std::vector<int64_t> values, int64_t bytes) {
    auto* s = p_.add_sample();
    for (int i : stack) s->add_location_id(static_cast<uint64_t>(i) + 100);
    for (int64_t v : values) s->add_value(v);
    if (bytes) {
      auto* l = s->add_label();
      l->set_key(Str("bytes"));
      l->set_num(bytes);
    }
    return *this;
  }
  pb::Profile Build(int64_t time) {
    p_.set_time_nanos(time);
    return p_;
  }

 private:
  int64_t Str(const std::string& s) {
    for (int i = 0; i < p_.string_table_size(); ++i) {
      if (p_.string_table(i) == s) return i;
    }
    p_.add_string_table(s);
    return p_.string_table_size() - 1;
  }
  pb::Profile p_;
};

// "f0;f1 bytes=N" -> values.
std::map<std::string, std::vector<int64_t>> Samples(const pb::Profile& p) {
  std::map<std::string, std::vector<int64_t>> out;
  std::map<uint64_t, std::string> loc_names;
  std::map<uint64_t, std::string> func_names;
  for (const auto& f : p.function())
    func_names[f.id()] = p.string_table(static_cast<int>(f.name()));
  for (const auto& l : p.location()) loc_names[l.id()] = func_names[l.line(0).function_id()];
  for (const auto& s : p.sample()) {
    std::string key;
    for (uint64_t id : s.location_id()) key += (key.empty() ? "" : ";") + loc_names.at(id);
    for (const auto& l : s.label()) {
      key += " " + p.string_table(static_cast<int>(l.key())) + "=" + std::to_string(l.num());
    }
    EXPECT_EQ(out.count(key), 0u) << "duplicate sample " << key;
    out[key] = {s.value().begin(), s.value().end()};
  }
  return out;
}

TEST(DeltaProfile, SubtractsAllFourValuesAndDropsZeroSamples) {
  pb::Profile p0 = DeltaProfileMaker()
                       .Sample({0, 1}, {10, 640, 5, 320}, 64)
                       .Sample({2}, {1, 4096, 1, 4096}, 4096)
                       .Sample({1}, {3, 30, 3, 30}, 10)
                       .Build(100);
  // Ids in another order: merging goes by content, not ids.
  pb::Profile p1 = DeltaProfileMaker({2, 0, 1})
                       .Sample({0, 1}, {12, 768, 4, 256}, 64)
                       .Sample({1}, {3, 30, 3, 30}, 10)        // unchanged: dropped
                       .Sample({0, 1}, {1, 128, 1, 128}, 128)  // same stack, other bytes label
                       .Build(200);
  pb::Profile d = DeltaProfile(p0, p1);
  auto s = Samples(d);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s["f0;f1 bytes=64"], (std::vector<int64_t>{2, 128, -1, -64}));
  EXPECT_EQ(s["f2 bytes=4096"], (std::vector<int64_t>{-1, -4096, -1, -4096}));
  EXPECT_EQ(s["f0;f1 bytes=128"], (std::vector<int64_t>{1, 128, 1, 128}));
  EXPECT_EQ(d.time_nanos(), 100);  // the smaller; the server overwrites it
  EXPECT_EQ(d.period(), 524288);
  EXPECT_EQ(d.string_table(0), "");
  // Ids 1..N in order (Parca checks this), locations deduplicated: f1
  // appears once although both profiles have it.
  for (int i = 0; i < d.location_size(); ++i) EXPECT_EQ(d.location(i).id(), uint64_t(i + 1));
  for (int i = 0; i < d.function_size(); ++i) EXPECT_EQ(d.function(i).id(), uint64_t(i + 1));
  ASSERT_EQ(d.mapping_size(), 1);
  EXPECT_EQ(d.mapping(0).id(), 1u);
  EXPECT_EQ(d.location_size(), 3);
}

TEST(DeltaProfile, IdenticalProfilesGiveAnEmptyDeltaWithoutLocations) {
  pb::Profile p = DeltaProfileMaker().Sample({0}, {1, 2, 3, 4}, 2).Build(5);
  pb::Profile d = DeltaProfile(p, p);
  EXPECT_EQ(d.sample_size(), 0);
  // The re-merge that drops zero samples drops what only they used.
  EXPECT_EQ(d.location_size(), 0);
  EXPECT_EQ(d.function_size(), 0);
  EXPECT_EQ(d.sample_type_size(), 4);
}

TEST(DeltaProfile, KeepsDefaultSampleTypeOfTheFirst) {
  pb::Profile p0 = DeltaProfileMaker().Sample({0}, {1, 2, 3, 4}, 2).Build(5);
  p0.add_string_table("alloc_space");
  p0.set_default_sample_type(p0.string_table_size() - 1);
  pb::Profile p1 = p0;
  p1.mutable_sample(0)->set_value(0, 7);
  pb::Profile d = DeltaProfile(p0, p1);
  EXPECT_EQ(d.string_table(static_cast<int>(d.default_sample_type())), "alloc_space");
  EXPECT_EQ(Samples(d)["f0 bytes=2"], (std::vector<int64_t>{6, 0, 0, 0}));
}

TEST(DeltaProfile, NegationRoundsThroughFloat64AsGo) {
  EXPECT_EQ(GoNegate(5), -5);
  EXPECT_EQ(GoNegate(0), 0);
  // 2^53 + 1 is not a float64: Go's int64(float64(v) * -1) gives -2^53.
  EXPECT_EQ(GoNegate((int64_t{1} << 53) + 1), -(int64_t{1} << 53));
  EXPECT_EQ(GoNegate(INT64_MIN), INT64_MIN);
  EXPECT_EQ(GoNegate(INT64_MAX), INT64_MIN);  // 2^63 overflows int64
}

TEST(DeltaProfile, RejectsMalformedInput) {
  pb::Profile good = DeltaProfileMaker().Sample({0}, {1, 2, 3, 4}, 2).Build(5);
  pb::Profile bad = good;
  bad.mutable_sample(0)->set_location_id(0, 999);
  EXPECT_THROW(DeltaProfile(good, bad), Error);
  bad = good;
  bad.mutable_function(0)->set_name(1000);
  EXPECT_THROW(DeltaProfile(good, bad), Error);
  bad = good;
  bad.mutable_sample(0)->add_value(1);
  EXPECT_THROW(DeltaProfile(good, bad), Error);
  bad = good;
  bad.mutable_sample_type(0)->set_type(0);
  EXPECT_THROW(DeltaProfile(good, bad), Error);
}

// The worker's entry point: serialized profiles in and out, with the times
// net/http/pprof's serveDeltaProfile sets.
TEST(EncodedDeltaProfile, SetsServeDeltaProfileTimes) {
  const std::string p0 =
      DeltaProfileMaker().Sample({0}, {1, 2, 3, 4}, 2).Build(100).SerializeAsString();
  const std::string p1 =
      DeltaProfileMaker().Sample({0}, {2, 4, 3, 4}, 2).Build(250).SerializeAsString();
  pb::Profile d;
  ASSERT_TRUE(d.ParseFromString(EncodedDeltaProfile(p0, p1)));
  EXPECT_EQ(d.time_nanos(), 250);
  EXPECT_EQ(d.duration_nanos(), 150);
  EXPECT_EQ(Samples(d)["f0 bytes=2"], (std::vector<int64_t>{1, 2, 0, 0}));
}

// A capture writes its tables first and its strings last (finished_profile.h);
// two serialized messages concatenated are one message with both fields.
TEST(EncodedDeltaProfile, ReadsFieldsInAnyOrder) {
  const pb::Profile p0 = DeltaProfileMaker().Sample({0, 1}, {1, 2, 3, 4}, 2).Build(1);
  const pb::Profile p1 = DeltaProfileMaker({2, 1, 0}).Sample({0, 1}, {5, 6, 7, 8}, 2).Build(2);
  pb::Profile strings_only, rest = p1;
  *strings_only.mutable_string_table() = p1.string_table();
  rest.clear_string_table();
  const std::string reordered = rest.SerializeAsString() + strings_only.SerializeAsString();
  EXPECT_EQ(EncodedDeltaProfile(p0.SerializeAsString(), reordered),
            EncodedDeltaProfile(p0.SerializeAsString(), p1.SerializeAsString()));
}

// internal/profile keys samples by their label sets, not the labels' order.
TEST(EncodedDeltaProfile, LabelsInAnotherOrderAreTheSameSample) {
  pb::Profile p0 = DeltaProfileMaker().Sample({0}, {1, 2, 3, 4}, 2).Build(1);
  pb::Profile p1 = p0;
  for (pb::Profile* p : {&p0, &p1}) {
    p->add_string_table("k");
    p->add_string_table("v");
  }
  const int64_t k = p0.string_table_size() - 2, v = k + 1;
  auto* l = p0.mutable_sample(0)->add_label();
  l->set_key(k);
  l->set_str(v);
  p0.mutable_sample(0)->mutable_label()->SwapElements(0, 1);  // "k" first in p0 only
  l = p1.mutable_sample(0)->add_label();
  l->set_key(k);
  l->set_str(v);
  pb::Profile d;
  ASSERT_TRUE(
      d.ParseFromString(EncodedDeltaProfile(p0.SerializeAsString(), p1.SerializeAsString())));
  EXPECT_EQ(d.sample_size(), 0);
}

// A function name is the target's pclntab bytes, which need not be UTF-8: the
// runtime writes them as they are, and a delta (our reader and writer) keeps
// them where proto3's string would refuse to parse.
TEST(EncodedDeltaProfile, KeepsNamesThatAreNotUtf8) {
  const std::string name = "main.gr\xFFwHeap";
  const auto renamed = [&](pb::Profile p) {
    for (std::string& s : *p.mutable_string_table()) {
      if (s == "f0") s = name;
    }
    return p.SerializeAsString();
  };
  const std::string p0 = renamed(DeltaProfileMaker().Sample({0}, {1, 2, 3, 4}, 2).Build(100));
  const std::string p1 = renamed(DeltaProfileMaker().Sample({0}, {2, 4, 3, 4}, 2).Build(250));
  pb::Profile d;
  ASSERT_TRUE(d.ParseFromString(EncodedDeltaProfile(p0, p1)));
  EXPECT_EQ(Samples(d)[name + " bytes=2"], (std::vector<int64_t>{1, 2, 0, 0}));
  pb::Profile parsed0, parsed1;
  ASSERT_TRUE(parsed0.ParseFromString(p0));
  ASSERT_TRUE(parsed1.ParseFromString(p1));
  EXPECT_EQ(Samples(DeltaProfile(parsed0, parsed1))[name + " bytes=2"],
            (std::vector<int64_t>{1, 2, 0, 0}));
}

// The base comes back through the server: bytes that are not a profile are
// an error, never a crash or an unbounded allocation.
TEST(EncodedDeltaProfile, RejectsBytesThatAreNotAProfile) {
  const std::string good =
      DeltaProfileMaker().Sample({0}, {1, 2, 3, 4}, 2).Build(5).SerializeAsString();
  EXPECT_THROW(EncodedDeltaProfile(good.substr(0, good.size() - 3), good), Error);
  EXPECT_THROW(EncodedDeltaProfile(std::string("\x12\xff\xff\xff\xff\x0f", 6), good), Error);
  EXPECT_THROW(EncodedDeltaProfile(std::string(11, '\xff'), good), Error);
  EXPECT_THROW(EncodedDeltaProfile("garbage that is not protobuf", good), Error);
}

}  // namespace
}  // namespace goheap2pprof
