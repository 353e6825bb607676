// FinishedProfile's direct encoding of samples: what it writes must decode
// into exactly the profile protobuf would have encoded from the same
// messages, for every value protobuf treats specially (zeros omitted,
// negative int64 as ten-byte varints, empty repeated fields, large ids).
#include "pprof/finished_profile.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <limits>

#include "base/error.h"
#include "pprof/output.h"

namespace goheap2pprof {
namespace {

// Tables with two strings ("", "bytes" at 3) and the given runs.
std::shared_ptr<ProfileTables> Tables(const std::vector<std::vector<uint64_t>>& runs,
                                      const std::vector<uint32_t>& sample_runs,
                                      pb::Profile& expected) {
  pb::Profile t;
  t.add_string_table("");
  t.add_string_table("space");
  t.add_string_table("count");
  t.add_string_table("bytes");
  t.add_sample_type()->set_type(2);
  t.mutable_period_type()->set_type(1);
  pb::Location* loc = t.add_location();
  loc->set_id(1);
  loc->set_address(0x401000);
  auto locations = std::make_shared<LocationTables>();
  t.SerializeToString(&locations->encoded);
  locations->strings = t.string_table_size();
  locations->bytes_key = 3;
  for (const auto& r : runs) locations->AddRun(r);
  auto tables = std::make_shared<ProfileTables>();
  tables->locations = locations;
  tables->sample_runs = sample_runs;
  expected = t;
  return tables;
}

void ExpectSame(const pb::Profile& got, const pb::Profile& want) {
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(want, got)) << diff;
}

// What protobuf writes for a Sample holding only these location ids.
std::string ProtobufEncoding(const std::vector<uint64_t>& ids) {
  pb::Sample want;
  for (uint64_t id : ids) want.add_location_id(id);
  return want.SerializeAsString();
}

// Run r's encoding as WriteSample writes it.
std::string Encoding(const LocationTables& t, size_t r) {
  const LocationTables::Pieces p = t.RunPieces(t.runs[r]);
  return std::string(p.own.begin(), p.own.end()) + std::string(p.tail.begin(), p.tail.end());
}

// A recursion's run repeats one id: each size of varint around its limits,
// repeated and alone, must encode as protobuf encodes the packed field.
TEST(LocationTables, RepeatedIdsEncodeAsProtobufWould) {
  std::vector<uint64_t> ids;
  for (uint64_t id : std::vector<uint64_t>{1, 127, 128, 129, 16383, 16384, uint64_t{1} << 40}) {
    ids.insert(ids.end(), 5, id);
    ids.push_back(id);
    ids.push_back(2);
  }
  // And a run longer than the encoder's buffer on the stack.
  std::vector<uint64_t> deep;
  for (uint64_t i = 0; i < 3000; ++i) deep.push_back(i % 7 == 0 ? 5 : 20000 + i);
  LocationTables t;
  t.AddRun(ids);
  t.AddRun(deep);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(Encoding(t, r), ProtobufEncoding(r == 0 ? ids : deep)) << r;
  }
}

// Runs whose largest id takes one byte, two, or more: each is encoded its
// own way (byte lanes, a branch-free one-or-two-byte varint, the general
// varint) and must encode as protobuf encodes the packed field, at every
// boundary of a varint's width and for runs of one id.
TEST(LocationTables, IdsOfEachWidthEncodeAsProtobufWould) {
  const std::vector<std::vector<uint64_t>> runs = {
      {1},
      {127, 1, 127, 127, 5},
      std::vector<uint64_t>(100, 3),
      {128},
      {1, 128, 127, 16383, 129, 2, 255, 256, 16383, 1},
      {16384},
      {1, 16384, 127, 128, 16383, uint64_t{1} << 35, 2},
      {~uint64_t{0}, 1},
  };
  LocationTables t;
  for (const auto& r : runs) t.AddRun(r);
  for (size_t r = 0; r < runs.size(); ++r) {
    EXPECT_EQ(Encoding(t, r), ProtobufEncoding(runs[r])) << r;
  }
}

// Deep stacks of one recursion share all but their first frames: each run
// after the first keeps only its own bytes and refers to the first's end.
// The encoding must be the same bytes, wherever the shared part begins
// (within a multi-byte varint too), and a run that shares too little is kept
// whole and shared by those after it.
TEST(LocationTables, DeepRunsShareTheirTailAndEncodeTheSame) {
  std::vector<std::vector<uint64_t>> stacks;
  std::vector<uint64_t> recursion(900, 300);  // two bytes an id
  for (uint64_t leaf = 0; leaf < 200; ++leaf) {
    std::vector<uint64_t> s = {leaf + 1, 1000 + leaf % 3};
    // 300 encodes as ac 02; id 44 + 128 * 2 = 300's first byte is 0xac too,
    // so some stacks share from within their last own varint.
    if (leaf % 5 == 0) s.push_back(0x2c | 0x80 * 2);
    s.insert(s.end(), recursion.begin(), recursion.end());
    stacks.push_back(std::move(s));
  }
  // Another recursion: shares nothing with the first, kept whole, then shared.
  stacks.push_back(std::vector<uint64_t>(500, 7));
  stacks.push_back({9, 9, 8});
  std::vector<uint64_t> other(500, 7);
  other.insert(other.begin(), 4);
  stacks.push_back(other);
  LocationTables t;
  size_t payloads = 0;
  for (const auto& s : stacks) t.AddRun(s);
  for (size_t r = 0; r < stacks.size(); ++r) {
    const std::string encoded = ProtobufEncoding(stacks[r]);
    payloads += encoded.size();
    ASSERT_EQ(Encoding(t, r), encoded) << r;
  }
  EXPECT_EQ(t.tails.size(), 199u + 1u);
  EXPECT_EQ(t.runs[200].tail, 0u);  // the second recursion's first run
  size_t kept = 0;
  for (const auto& chunk : t.loc_chunks) kept += chunk.size();
  // Two whole runs (1.8 KB and 0.5 KB) and at most 8 bytes of each other
  // (tag, length, own ids): 3.9 KB, where whole runs would take 362 KB.
  EXPECT_LT(kept, 3900u) << "of " << payloads;
}

// What the runs keep is bounded: past max_bytes a run is refused with a
// message, and a shared tail keeps the deep stacks that would pass it whole
// well below it.
TEST(LocationTables, KeptBytesAreBounded) {
  std::vector<uint64_t> deep(1000, 300);
  LocationTables shared;
  shared.max_bytes = 8192;  // 100 runs kept whole: 200 KB
  for (uint64_t leaf = 1; leaf <= 100; ++leaf) {
    deep[0] = leaf;
    shared.AddRun(deep);  // 2 KB whole, then 16 + 16 + 4 bytes each
  }
  LocationTables distinct;
  distinct.max_bytes = 3000;
  distinct.AddRun(deep);
  std::vector<uint64_t> other(1000, 301);
  try {
    distinct.AddRun(other);
    ADD_FAILURE() << "two 2 KB runs kept under a 3000-byte bound";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("location ids take more than 3000 bytes (at stack 2)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.hint().find("GODEBUG=profstackdepth"), std::string::npos) << e.hint();
  }
}

TEST(FinishedProfile, SamplesDecodeAsProtobufWouldEncodeThem) {
  pb::Profile want;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr uint64_t kBigId = uint64_t{1} << 40;
  auto tables = Tables({{1, 2, 300}, {}, {kBigId}}, {0, 1, 0, 2}, want);
  std::vector<SampleValues> values = {
      {{1, 2, 3, 4}, 1024, true},
      {{0, 0, 0, 0}, 0, false},
      {{-1, kMin, 0, 5}, 0, true},  // a label whose number is 0: key only
      {{7, 8, 9, 10}, -3, true},
  };
  FinishedProfile p(tables, values, 524288, 1700000000123456789, {"goheap2pprof: a comment"}, {4},
                    3);
  const std::vector<std::vector<uint64_t>> locs = {{1, 2, 300}, {}, {1, 2, 300}, {kBigId}};
  for (size_t i = 0; i < values.size(); ++i) {
    pb::Sample* s = want.add_sample();
    for (uint64_t id : locs[i]) s->add_location_id(id);
    for (int64_t v : values[i].values) s->add_value(v);
    if (values[i].has_label) {
      pb::Label* l = s->add_label();
      l->set_key(3);
      l->set_num(values[i].label_num);
    }
  }
  want.add_string_table("goheap2pprof: a comment");
  want.add_comment(4);
  want.set_period(524288);
  want.set_time_nanos(1700000000123456789);
  ExpectSame(p.get(), want);
  EXPECT_EQ(p.sample_size(), 4u);

  // The gzipped encoding is the same bytes.
  pb::Profile from_gzip;
  ASSERT_TRUE(from_gzip.ParseFromString(Gunzip(EncodeProfile(p))));
  ExpectSame(from_gzip, want);

  // allocs: the default sample type becomes a new string.
  p.SetDefaultSampleType("alloc_space");
  want.add_string_table("alloc_space");
  want.set_default_sample_type(5);
  ExpectSame(p.get(), want);
}

// Samples of runs that share a tail are written whole.
TEST(FinishedProfile, SamplesOfSharedTailsDecodeWhole) {
  std::vector<uint64_t> a(400, 200), b(400, 200);
  a.insert(a.begin(), 1);
  b.insert(b.begin(), {1, 1});
  pb::Profile want;
  auto tables = Tables({a, b}, {1, 0, 1}, want);
  ASSERT_EQ(tables->locations->runs[1].tail, 1u);
  const std::vector<SampleValues> values(3, SampleValues{{1, 2, 3, 4}, 0, false});
  FinishedProfile p(tables, values, 1, 0, {}, {}, 3);
  for (const auto* ids : {&b, &a, &b}) {
    pb::Sample* s = want.add_sample();
    for (uint64_t id : *ids) s->add_location_id(id);
    for (int64_t v : values[0].values) s->add_value(v);
  }
  want.set_period(1);
  ExpectSame(p.get(), want);
}

TEST(FinishedProfile, ValuesMustMatchTheTablesSamples) {
  pb::Profile want;
  auto tables = Tables({{1}}, {0, 0}, want);
  EXPECT_THROW(FinishedProfile(tables, {SampleValues{}}, 1, 0, {}, {}, 3), Error);
}

TEST(FinishedProfile, SamplesOfOneStackShareTheirLocationRun) {
  pb::Profile want;
  auto tables = Tables({{1, 2}}, {0, 0, 0}, want);
  EXPECT_EQ(tables->locations->runs.size(), 1u);
  FinishedProfile p(tables, std::vector<SampleValues>(3, SampleValues{{1, 1, 1, 1}, 0, false}), 1,
                    0, {}, {}, 3);
  ASSERT_EQ(p.get().sample_size(), 3);
  for (const pb::Sample& s : p.get().sample()) EXPECT_EQ(s.location_id_size(), 2);
}

}  // namespace
}  // namespace goheap2pprof
