// What `goheap2pprof push` sends to Pyroscope (agent/worker/push_profile.h): alloc
// deltas keyed by stack addresses and object size, inuse as it is, zero
// samples dropped, resets, baselines, trimming to the limits, compaction;
// and what carries them between the agent and its workers
// (agent/worker/push_wire.h), which each side reads as untrusted.
#include "agent/worker/push_profile.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "agent/worker/push_wire.h"
#include "base/error.h"
#include "pprof/output.h"

namespace goheap2pprof {
namespace {

// One sample of a synthetic cumulative heap profile.
struct S {
  std::vector<uint64_t> addresses;  // leaf first
  int64_t size;                     // the bytes label (0: none)
  int64_t alloc_objects, alloc_space, inuse_objects, inuse_space;
};

// A heap profile as the runtime writes it: one location (and function) per
// address, numbered in order of first use starting at `first_id`, so that
// two captures can number the same stacks differently.
pb::Profile Heap(const std::vector<S>& samples, uint64_t first_id = 1) {
  pb::Profile p;
  std::map<std::string, int64_t> strings;
  auto str = [&](const std::string& s) {
    auto [it, added] = strings.emplace(s, p.string_table_size());
    if (added) p.add_string_table(s);
    return it->second;
  };
  str("");
  for (const char* t : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}) {
    pb::ValueType* v = p.add_sample_type();
    v->set_type(str(t));
    v->set_unit(str(std::string(t).find("objects") != std::string::npos ? "count" : "bytes"));
  }
  p.mutable_period_type()->set_type(str("space"));
  p.mutable_period_type()->set_unit(str("bytes"));
  p.set_period(512 * 1024);
  p.set_time_nanos(1700000000000000000);
  str("unused string");
  pb::Mapping* m = p.add_mapping();
  m->set_id(1);
  m->set_memory_start(0x400000);
  m->set_memory_limit(0x800000);
  m->set_filename(str("/bin/server"));
  std::map<uint64_t, uint64_t> location_of;
  uint64_t next_id = first_id;
  for (const S& s : samples) {
    pb::Sample* out = p.add_sample();
    for (uint64_t a : s.addresses) {
      auto [it, added] = location_of.emplace(a, next_id);
      if (added) {
        pb::Function* f = p.add_function();
        f->set_id(next_id);
        f->set_name(str("func" + std::to_string(a)));
        f->set_filename(str("main.go"));
        pb::Location* l = p.add_location();
        l->set_id(next_id);
        l->set_mapping_id(1);
        l->set_address(a);
        pb::Line* line = l->add_line();
        line->set_function_id(next_id);
        line->set_line(static_cast<int64_t>(a % 100));
        ++next_id;
      }
      out->add_location_id(it->second);
    }
    for (int64_t v : {s.alloc_objects, s.alloc_space, s.inuse_objects, s.inuse_space}) {
      out->add_value(v);
    }
    if (s.size != 0) {
      pb::Label* l = out->add_label();
      l->set_key(str("bytes"));
      l->set_num(s.size);
    }
  }
  return p;
}

// The pushed values per "addresses/size", as {alloc_objects, alloc_space,
// inuse_objects, inuse_space}.
std::map<std::string, std::vector<int64_t>> Values(const pb::Profile& p) {
  std::map<uint64_t, uint64_t> address;
  for (const pb::Location& l : p.location()) address[l.id()] = l.address();
  int64_t bytes = -1;
  for (int i = 0; i < p.string_table_size(); ++i) {
    if (p.string_table(i) == "bytes") bytes = i;
  }
  std::map<std::string, std::vector<int64_t>> out;
  for (const pb::Sample& s : p.sample()) {
    std::string key;
    for (uint64_t id : s.location_id()) key += std::to_string(address.at(id)) + " ";
    for (const pb::Label& l : s.label()) {
      if (l.key() == bytes) key += "/" + std::to_string(l.num());
    }
    out[key] = std::vector<int64_t>(s.value().begin(), s.value().end());
  }
  return out;
}

std::vector<std::string> Comments(const pb::Profile& p) {
  std::vector<std::string> out;
  for (int64_t c : p.comment()) out.push_back(p.string_table(static_cast<int>(c)));
  return out;
}

TEST(PushProfile, FirstProfileOfANewProcessCarriesItsAllocationsAndDropsZeros) {
  AllocDeltaState state(/*from_zero=*/true);
  PyroscopeProfile out = MakePyroscopeProfile(
      Heap(
          {{{10, 20}, 64, 3, 192, 1, 64}, {{11, 20}, 64, 0, 0, 0, 0}, {{12}, 4096, 1, 4096, 0, 0}}),
      state, PushLimits{});
  EXPECT_FALSE(out.baseline);
  EXPECT_EQ(out.samples_in, 3u);
  EXPECT_EQ(Values(out.profile),
            (std::map<std::string, std::vector<int64_t>>{{"10 20 /64", {3, 192, 1, 64}},
                                                         {"12 /4096", {1, 4096, 0, 0}}}));
}

TEST(PushProfile, AllocIsTheDeltaByAddressesAndSizeInuseIsAbsolute) {
  AllocDeltaState state(true);
  MakePyroscopeProfile(Heap({{{10, 20}, 64, 3, 192, 1, 64},
                             {{10, 20}, 128, 1, 128, 1, 128},
                             {{12}, 4096, 1, 4096, 1, 4096}}),
                       state, PushLimits{});
  // The second capture numbers its locations differently: keys are addresses.
  PyroscopeProfile out = MakePyroscopeProfile(Heap({{{12}, 4096, 1, 4096, 1, 4096},
                                                    {{10, 20}, 64, 5, 320, 2, 128},
                                                    {{10, 20}, 128, 1, 128, 0, 0},
                                                    {{13, 20}, 32, 2, 64, 2, 64}},
                                                   100),
                                              state, PushLimits{});
  EXPECT_EQ(Values(out.profile), (std::map<std::string, std::vector<int64_t>>{
                                     {"12 /4096", {0, 0, 1, 4096}},  // no new allocation, in use
                                     {"10 20 /64", {2, 128, 2, 128}},
                                     // {10 20}/128: no delta, nothing in use: dropped
                                     {"13 20 /32", {2, 64, 2, 64}}}));
}

TEST(PushProfile, ADecreaseIsAResetThatSkipsTheSample) {
  AllocDeltaState state(true);
  MakePyroscopeProfile(Heap({{{10}, 64, 10, 640, 1, 64}}), state, PushLimits{});
  PyroscopeProfile out =
      MakePyroscopeProfile(Heap({{{10}, 64, 4, 256, 1, 64}}), state, PushLimits{});
  EXPECT_EQ(out.resets, 1u);
  EXPECT_EQ(out.profile.sample_size(), 0);
  // The decreased values are the new baseline.
  out = MakePyroscopeProfile(Heap({{{10}, 64, 6, 384, 1, 64}}), state, PushLimits{});
  EXPECT_EQ(Values(out.profile)["10 /64"], (std::vector<int64_t>{2, 128, 1, 64}));
}

TEST(PushProfile, AProcessOlderThanTheAgentStartsWithABaseline) {
  AllocDeltaState state(/*from_zero=*/false);
  PyroscopeProfile out = MakePyroscopeProfile(
      Heap({{{10}, 64, 10, 640, 1, 64}, {{11}, 64, 5, 320, 0, 0}}), state, PushLimits{});
  EXPECT_TRUE(out.baseline);
  EXPECT_EQ(Values(out.profile),
            (std::map<std::string, std::vector<int64_t>>{{"10 /64", {0, 0, 1, 64}}}));
  ASSERT_EQ(Comments(out.profile).size(), 1u);
  EXPECT_NE(Comments(out.profile)[0].find("baseline"), std::string::npos);
  out = MakePyroscopeProfile(Heap({{{10}, 64, 12, 768, 1, 64}, {{11}, 64, 5, 320, 0, 0}}), state,
                             PushLimits{});
  EXPECT_FALSE(out.baseline);
  EXPECT_EQ(Values(out.profile),
            (std::map<std::string, std::vector<int64_t>>{{"10 /64", {2, 128, 1, 64}}}));
}

TEST(PushProfile, TrimmingKeepsTheLargestSamplesAndCarriesTheRestToTheNextPush) {
  AllocDeltaState state(true);
  PushLimits limits;
  limits.max_samples = 2;
  PyroscopeProfile out = MakePyroscopeProfile(
      Heap({{{10}, 64, 1, 64, 0, 0}, {{11}, 64, 100, 6400, 0, 0}, {{12}, 64, 1, 64, 1, 64}}), state,
      limits);
  EXPECT_EQ(out.nonzero, 3u);
  EXPECT_EQ(out.trimmed, 1u);
  EXPECT_EQ(Values(out.profile), (std::map<std::string, std::vector<int64_t>>{
                                     {"11 /64", {100, 6400, 0, 0}}, {"12 /64", {1, 64, 1, 64}}}));
  ASSERT_EQ(Comments(out.profile).size(), 1u);
  EXPECT_NE(Comments(out.profile)[0].find("1 of 3 samples were trimmed"), std::string::npos);
  // Next time only {10} changed: its allocations of both intervals arrive.
  out = MakePyroscopeProfile(
      Heap({{{10}, 64, 3, 192, 0, 0}, {{11}, 64, 100, 6400, 0, 0}, {{12}, 64, 1, 64, 1, 64}}),
      state, limits);
  EXPECT_EQ(out.trimmed, 0u);
  EXPECT_EQ(Values(out.profile), (std::map<std::string, std::vector<int64_t>>{
                                     {"10 /64", {3, 192, 0, 0}}, {"12 /64", {0, 0, 1, 64}}}));
}

TEST(PushProfile, TrimmingToTheSizeLimit) {
  std::vector<S> samples;
  for (uint64_t i = 0; i < 2000; ++i) {
    samples.push_back({{1000 + i, 2000 + i, 3000 + i},
                       64,
                       static_cast<int64_t>(i + 1),
                       static_cast<int64_t>(64 * (i + 1)),
                       0,
                       0});
  }
  AllocDeltaState state(true);
  PushLimits limits;
  limits.max_bytes = 20000;
  PyroscopeProfile out = MakePyroscopeProfile(Heap(samples), state, limits);
  EXPECT_LE(out.profile.ByteSizeLong(), limits.max_bytes);
  EXPECT_GT(out.profile.sample_size(), 0);
  EXPECT_EQ(out.trimmed + static_cast<uint64_t>(out.profile.sample_size()), 2000u);
  // The largest were kept.
  EXPECT_EQ(Values(out.profile).count("2999 3999 4999 /64"), 1u);
  EXPECT_EQ(Values(out.profile).count("1000 2000 3000 /64"), 0u);
}

TEST(PushProfile, OutputIdsAreSequentialAndOnlyUsedStringsRemain) {
  AllocDeltaState state(true);
  PyroscopeProfile out = MakePyroscopeProfile(
      Heap({{{10, 20}, 64, 0, 0, 0, 0}, {{30, 20}, 64, 1, 64, 1, 64}}, 7), state, PushLimits{});
  const pb::Profile& p = out.profile;
  ASSERT_GT(p.string_table_size(), 0);
  EXPECT_EQ(p.string_table(0), "");
  for (int i = 0; i < p.location_size(); ++i) EXPECT_EQ(p.location(i).id(), uint64_t(i + 1));
  for (int i = 0; i < p.function_size(); ++i) EXPECT_EQ(p.function(i).id(), uint64_t(i + 1));
  for (int i = 0; i < p.mapping_size(); ++i) EXPECT_EQ(p.mapping(i).id(), uint64_t(i + 1));
  EXPECT_EQ(p.location_size(), 2);  // 10 was used only by the dropped sample
  for (const std::string& s : p.string_table()) {
    EXPECT_NE(s, "unused string");
    EXPECT_NE(s, "func10");
  }
  EXPECT_EQ(p.period(), 512 * 1024);
  EXPECT_EQ(p.string_table(static_cast<int>(p.period_type().type())), "space");
}

TEST(PushProfile, MalformedInputIsRefused) {
  AllocDeltaState state(true);
  pb::Profile p = Heap({{{10}, 64, 1, 64, 1, 64}});
  p.mutable_sample(0)->set_location_id(0, 99);
  try {
    MakePyroscopeProfile(p, state, PushLimits{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed);
  }
  pb::Profile q = Heap({{{10}, 64, 1, 64, 1, 64}});
  q.mutable_sample_type(1)->set_type(0);  // no alloc_space
  EXPECT_THROW(MakePyroscopeProfile(q, state, PushLimits{}), Error);
  pb::Profile r = Heap({{{10}, 64, 1, 64, 1, 64}});
  r.mutable_sample(0)->mutable_label(0)->set_key(1000);  // string index out of range
  EXPECT_THROW(MakePyroscopeProfile(r, state, PushLimits{}), Error);
}

// What the agent keeps between pushes is bytes only a worker reads: the
// delta through them is the delta through the state itself.
// A goroutine profile is a gauge: trimmed to the limits, the largest
// counts kept in their order, the rest said in a comment; Parca gets it
// whole. Heap()'s first value stands for the goroutine count here.
TEST(PushProfile, AGoroutineProfileKeepsTheLargestCountsWithinTheLimits) {
  const pb::Profile in = Heap({{{0x401000}, 0, 5, 0, 0, 0},
                               {{0x402000}, 0, 10000, 0, 0, 0},
                               {{0x403000}, 0, 1, 0, 0, 0},
                               {{0x404000}, 0, 7, 0, 0, 0}});
  const TrimmedProfile out = TrimToLimits(in, {.max_samples = 2, .max_bytes = 1 << 20});
  EXPECT_EQ(out.trimmed, 2u);
  const auto v = Values(out.profile);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v.at("4202496 ")[0], 10000);
  EXPECT_EQ(v.at("4210688 ")[0], 7);
  ASSERT_EQ(out.profile.comment_size(), 1);
  EXPECT_NE(out.profile.string_table(static_cast<int>(out.profile.comment(0))).find("2 of 4"),
            std::string::npos);
  // Under the limits, nothing is dropped or said.
  EXPECT_EQ(TrimToLimits(in, {}).trimmed, 0u);
  EXPECT_EQ(TrimToLimits(in, {}).profile.comment_size(), 0);

  PushWork work;
  work.limits.max_samples = 3;
  const PushMade made =
      DecodePushMade(EncodePushMade(MakeGoroutinePushProfiles(in, work)), 1 << 20);
  EXPECT_EQ(made.pyroscope_samples, 3u);
  EXPECT_EQ(made.parca_samples, 4u);
  EXPECT_EQ(made.trimmed, 1u);
  EXPECT_TRUE(made.state.empty());
}

TEST(PushWire, TheDeltaGoesThroughTheStateBytes) {
  PushWork work;
  work.from_zero = true;
  PushMade first = MakePushProfiles(Heap({{{10, 20}, 64, 3, 192, 1, 64}}), work, 7, 1 << 20);
  EXPECT_EQ(first.pyroscope_samples, 1u);
  EXPECT_FALSE(first.baseline);
  work.state = DecodePushMade(EncodePushMade(first), 1 << 20).state;
  PushMade second = MakePushProfiles(Heap({{{10, 20}, 64, 5, 320, 2, 128}}), work, 8, 1 << 20);
  pb::Profile pushed, parca;
  ASSERT_TRUE(pushed.ParseFromString(Gunzip(second.pyroscope)));
  EXPECT_EQ(Values(pushed),
            (std::map<std::string, std::vector<int64_t>>{{"10 20 /64", {2, 128, 2, 128}}}));
  // Parca's is the cumulative profile, a snapshot with its cycle.
  ASSERT_TRUE(parca.ParseFromString(Gunzip(second.parca)));
  EXPECT_EQ(Values(parca),
            (std::map<std::string, std::vector<int64_t>>{{"10 20 /64", {5, 320, 2, 128}}}));
  EXPECT_EQ(parca.duration_nanos(), 0);
  EXPECT_EQ(Comments(parca), std::vector<std::string>{"goheap2pprof: profile cycle 8"});
}

TEST(PushWire, AReplyIsReadAsUntrusted) {
  PushMade made;
  made.pyroscope = "p";
  made.state = "state";
  const std::string good = EncodePushMade(made);
  EXPECT_EQ(DecodePushMade(good, 16).state, "state");
  // A length past the end, bytes after it, a string over the bound.
  EXPECT_THROW(DecodePushMade(good.substr(0, good.size() - 1), 16), Error);
  EXPECT_THROW(DecodePushMade(good + "x", 16), Error);
  EXPECT_THROW(DecodePushMade(good, 4), Error);
  // A gzip bomb where the reply should be is refused as it is, not inflated.
  const std::string bomb = Gzip(std::string(size_t{64} << 20, '\0'));
  try {
    DecodePushMade(bomb, size_t{1} << 30);
    ADD_FAILURE() << "a gzip bomb was accepted as a push reply";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed);
    EXPECT_STREQ(e.what(), "push reply from a worker: bad magic");
  }
}

TEST(PushWire, AStateIsBoundedWhenInflatedAndChecked) {
  PushWork work;
  work.from_zero = true;
  const std::string state =
      MakePushProfiles(Heap({{{10, 20}, 64, 3, 192, 1, 64}}), work, std::nullopt, 1 << 20).state;
  EXPECT_EQ(DecodeAllocDeltaState(state, 1 << 20).keys(), 1u);
  // A bomb for a state: refused once it inflates past the bound.
  EXPECT_THROW(DecodeAllocDeltaState(Gzip(std::string(size_t{8} << 20, '\0')), 1 << 20), Error);
  // A count of entries that the bytes cannot hold.
  std::string raw = Gunzip(state);
  raw[5] = '\x7f';  // the count's low byte, after the magic and the primed flag
  EXPECT_THROW(DecodeAllocDeltaState(Gzip(raw), 1 << 20), Error);
  // A worker that cannot read the state fails the push (the agent then
  // starts the process afresh from a baseline).
  work.state = Gzip(raw);
  EXPECT_THROW(MakePushProfiles(Heap({{{10}, 64, 1, 64, 1, 64}}), work, std::nullopt, 1 << 20),
               Error);
}

}  // namespace
}  // namespace goheap2pprof
