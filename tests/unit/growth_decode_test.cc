// The compact decoder of the growth report (GrowthCollector::AddSerialized,
// pprof/growth/decode.cc) against the message path (GrowthCollector::Add on
// a parsed pb::Profile): the same sites, locations, points and snapshots,
// on real heap profiles (testdata/fuzz/growth_decode: ours and the
// runtime's own, of testdata/growthtarget) and on hand-made ones with what
// real profiles rarely have (sparse ids, inline frames, unsymbolized
// locations, lines of missing functions); and its refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "pprof/growth/sites.h"
#include "proto/profile.pb.h"

namespace goheap2pprof {
namespace {

class Builder {
 public:
  explicit Builder(int64_t time_nanos, int64_t period = 1) {
    Str("");
    for (const char* t : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}) {
      pb::ValueType* vt = p_.add_sample_type();
      vt->set_type(Str(t));
      vt->set_unit(Str(std::string(t).find("objects") != std::string::npos ? "count" : "bytes"));
    }
    p_.set_period(period);
    p_.set_time_nanos(time_nanos);
    pb::Mapping* m = p_.add_mapping();
    m->set_id(1);
    m->set_memory_start(0x400000);
    m->set_memory_limit(0x800000);
    m->set_filename(Str("/bin/server"));
    m->set_build_id(Str("abc123"));
  }
  uint64_t Function(uint64_t id, const std::string& name, int64_t start_line) {
    pb::Function* f = p_.add_function();
    f->set_id(id);
    f->set_name(Str(name));
    f->set_system_name(Str(name));
    f->set_filename(Str("/src/" + name + ".go"));
    f->set_start_line(start_line);
    return id;
  }
  // A location with (function id, line) pairs, innermost first.
  uint64_t Location(uint64_t id, uint64_t address,
                    const std::vector<std::pair<uint64_t, int64_t>>& lines) {
    pb::Location* l = p_.add_location();
    l->set_id(id);
    l->set_mapping_id(1);
    l->set_address(address);
    for (auto [fn, line] : lines) {
      pb::Line* pl = l->add_line();
      pl->set_function_id(fn);
      pl->set_line(line);
    }
    return id;
  }
  Builder& Sample(const std::vector<uint64_t>& stack, int64_t objects, int64_t bytes) {
    pb::Sample* s = p_.add_sample();
    for (int64_t v : {objects * 2, bytes * 2, objects, bytes}) s->add_value(v);
    for (uint64_t id : stack) s->add_location_id(id);
    pb::Label* l = s->add_label();
    l->set_key(Str("bytes"));
    l->set_num(objects > 0 ? bytes / objects : 0);
    return *this;
  }
  pb::Profile& get() { return p_; }

 private:
  int64_t Str(const std::string& s) {
    p_.add_string_table(s);
    return p_.string_table_size() - 1;
  }
  pb::Profile p_;
};

// A profile with what the runtime's and ours seldom have: function and
// location ids far apart (a sparse id table), an inlined call (two lines),
// an unsymbolized location, a line whose function is missing, a zero sample
// that names a missing location (skipped, as Add skips it), and two samples
// of one stack (two object sizes). `k` varies the values.
pb::Profile Unusual(int64_t time_nanos, int64_t k, int64_t period = 1) {
  Builder b(time_nanos, period);
  const uint64_t leak = b.Function(7'000'000'001, "main.leak", 10);
  const uint64_t helper = b.Function(3, "main.helper", 40);
  const uint64_t main_fn = b.Function(900'000, "main.main", 1);
  const uint64_t l_inline = b.Location(5'000'000'000, 0x401000, {{leak, 12}, {helper, 44}});
  const uint64_t l_main = b.Location(2, 0x402000, {{main_fn, 5}});
  const uint64_t l_raw = b.Location(77, 0x7f0000001234, {});
  const uint64_t l_gone = b.Location(78, 0x403000, {{424242, 9}, {main_fn, 6}});
  b.Sample({l_inline, l_main}, 10 * k, 10240 * k)
      .Sample({l_inline, l_main}, 1, 4096)
      .Sample({l_raw, l_main}, 3, 300)
      .Sample({l_gone}, k, 64 * k)
      .Sample({999, l_main}, 0, 0);
  return b.get();
}

void ExpectSameAsMessages(const std::vector<pb::Profile>& profiles) {
  GrowthCollector by_message, by_bytes;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const std::string name = "p" + std::to_string(i);
    by_message.Add(profiles[i], name);
    EXPECT_TRUE(by_bytes.AddSerialized(profiles[i].SerializeAsString(), name));
  }
  const GrowthData a = std::move(by_message).Finish();
  const GrowthData b = std::move(by_bytes).Finish();
  EXPECT_EQ(a.snapshots, b.snapshots);
  EXPECT_EQ(a.main_mapping, b.main_mapping);
  EXPECT_EQ(a.locations, b.locations);
  EXPECT_EQ(a.sites, b.sites);
  EXPECT_TRUE(a == b);
}

TEST(GrowthDecodeTest, UnusualProfilesDecodeAsTheirMessages) {
  std::vector<pb::Profile> profiles;
  for (int64_t k = 1; k <= 4; ++k) profiles.push_back(Unusual(k * 1'000'000'000, k, 512 * 1024));
  ExpectSameAsMessages(profiles);

  GrowthCollector c;
  for (const pb::Profile& p : profiles) c.AddSerialized(p.SerializeAsString(), "x");
  const GrowthData d = std::move(c).Finish();
  // The inlined frames stay one location of two lines; the unsymbolized one
  // keeps its address; the line of a missing function is left out.
  ASSERT_EQ(d.locations.size(), 4u);
  EXPECT_EQ(d.locations[0].lines.size(), 2u);
  EXPECT_EQ(d.locations[0].lines[1].function, "main.helper");
  EXPECT_EQ(d.locations[0].lines[1].start_line, 40);
  EXPECT_TRUE(d.locations[2].lines.empty());
  EXPECT_EQ(d.locations[2].address, 0x7f0000001234u);
  ASSERT_EQ(d.locations[3].lines.size(), 1u);
  EXPECT_EQ(d.locations[3].lines[0].line, 6);
  ASSERT_EQ(d.sites.size(), 3u);
  EXPECT_EQ(d.Series(d.sites[0]).bytes, (std::vector<int64_t>{14336, 24576, 34816, 45056}));
  EXPECT_EQ(d.snapshots[0].build_id, "abc123");
  ASSERT_TRUE(d.main_mapping.has_value());
  EXPECT_EQ(d.main_mapping->filename, "/bin/server");
  EXPECT_EQ(d.main_mapping->limit, 0x800000u);
}

// Real heap profiles of testdata/growthtarget: ours (heap-ours-*) and the
// runtime's own /debug/pprof/heap (heap-runtime-*), serialized, not gzipped.
std::vector<pb::Profile> RealProfiles() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(GOHEAP2PPROF_SOURCE_DIR
                                                           "/testdata/fuzz/growth_decode")) {
    if (e.path().filename().string().rfind("heap-", 0) == 0) paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<pb::Profile> out;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    pb::Profile p;
    EXPECT_TRUE(p.ParseFromString(s.str())) << path;
    out.push_back(std::move(p));
  }
  return out;
}

TEST(GrowthDecodeTest, RealProfilesDecodeAsTheirMessages) {
  const std::vector<pb::Profile> profiles = RealProfiles();
  ASSERT_GE(profiles.size(), 4u);
  size_t samples = 0;
  for (const pb::Profile& p : profiles) samples += static_cast<size_t>(p.sample_size());
  EXPECT_GT(samples, 20u);
  ExpectSameAsMessages(profiles);
}

// Protobuf wire format by hand, for the encodings libprotobuf never writes.
void Varint(std::string& out, uint64_t v) {
  do {
    out.push_back(static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
    v >>= 7;
  } while (v != 0);
}

std::string Field(uint64_t number, const std::string& bytes) {
  std::string out;
  Varint(out, number << 3 | 2);
  Varint(out, bytes.size());
  return out + bytes;
}

std::string Packed(const std::vector<uint64_t>& values) {
  std::string out;
  for (uint64_t v : values) Varint(out, v);
  return out;
}

std::string Unpacked(uint64_t number, const std::vector<uint64_t>& values) {
  std::string out;
  for (uint64_t v : values) {
    Varint(out, number << 3);
    Varint(out, v);
  }
  return out;
}

// Unusual(...) with samples appended (top-level field 2) whose location ids
// are encoded in every way protobuf reads: unpacked, in two packed fields,
// packed then unpacked, with a non-canonical varint (id 2 as 0x82 0x00),
// and the stacks they repeat in the usual packed form, so that the
// decoder's memo of packed stacks meets each of them. Unusual's ids:
// locations 5000000000 (inline), 2 (main), 77 (raw), 78 (line of a missing
// function).
std::string WithOddSamples(int64_t time_nanos, int64_t k) {
  std::string bytes = Unusual(time_nanos, k).SerializeAsString();
  const std::string values = Field(2, Packed({0, 0, uint64_t(k), uint64_t(64 * k)}));
  const std::string odd[] = {
      Unpacked(1, {5'000'000'000, 2}) + values,
      Field(1, Packed({77})) + values + Field(1, Packed({2})),
      Field(1, Packed({78})) + Unpacked(1, {2}) + values,
      Field(1, std::string("\x82\x00", 2)) + values,
      Field(1, Packed({2})) + values,
      values + Field(1, Packed({78, 2})),
  };
  for (const std::string& sample : odd) bytes += Field(2, sample);
  return bytes;
}

TEST(GrowthDecodeTest, EveryEncodingOfLocationIdsDecodesAsItsMessage) {
  GrowthCollector by_message, by_bytes;
  for (int64_t k = 1; k <= 3; ++k) {
    const std::string bytes = WithOddSamples(k * 1'000'000'000, k);
    pb::Profile p;
    ASSERT_TRUE(p.ParseFromString(bytes));
    by_message.Add(p, "p");
    EXPECT_TRUE(by_bytes.AddSerialized(bytes, "p"));
  }
  const GrowthData a = std::move(by_message).Finish();
  const GrowthData b = std::move(by_bytes).Finish();
  EXPECT_EQ(a.sites, b.sites);
  EXPECT_TRUE(a == b);
  // The stacks: Unusual's three ({inline, main} and {raw, main} met again
  // unpacked and split), {gone, main} new (met again packed after the
  // values), and {main} new (the non-canonical 2, then the canonical one).
  ASSERT_EQ(b.sites.size(), 5u);
  EXPECT_EQ(b.sites[3].locations, (std::vector<uint32_t>{3, 1}));
  EXPECT_EQ(b.sites[4].locations, std::vector<uint32_t>{1});
  EXPECT_EQ(b.Series(b.sites[4]).bytes, (std::vector<int64_t>{128, 256, 384}));
  EXPECT_EQ(b.Series(b.sites[0]).bytes,
            (std::vector<int64_t>{14336 + 64, 24576 + 128, 34816 + 192}));
}

TEST(GrowthDecodeTest, ASkippedSampleWithBrokenIdsIsRefusedAsByItsMessage) {
  std::string bytes = Unusual(1, 1).SerializeAsString();
  // A zero sample whose packed ids end inside a varint.
  bytes += Field(2, Field(1, std::string("\x82", 1)) + Field(2, Packed({0, 0, 0, 0})));
  pb::Profile p;
  EXPECT_FALSE(p.ParseFromString(bytes));
  GrowthCollector c;
  EXPECT_THROW(c.AddSerialized(bytes, "p"), Error);
}

TEST(GrowthDecodeTest, AGrowthProfileIsLeftOutAndAddsNothing) {
  pb::Profile p = Unusual(1, 1);
  p.add_string_table("inuse_space_per_hour");
  p.add_sample_type()->set_type(p.string_table_size() - 1);
  GrowthCollector c;
  EXPECT_FALSE(c.AddSerialized(p.SerializeAsString(), "growth.pb.gz"));
  EXPECT_EQ(c.snapshots(), 0u);
}

ErrorKind DecodeKindOf(GrowthCollector& c, const std::string& bytes, std::string* message) {
  try {
    c.AddSerialized(bytes, "bad.pb.gz");
  } catch (const Error& e) {
    *message = e.what();
    return e.kind();
  }
  return ErrorKind::kInternal;
}

TEST(GrowthDecodeTest, RefusesWhatIsNotAHeapProfileNamingTheFile) {
  GrowthCollector c;
  std::string message;
  pb::Profile cpu;
  cpu.add_string_table("");
  cpu.add_string_table("samples");
  cpu.add_sample_type()->set_type(1);
  EXPECT_EQ(DecodeKindOf(c, cpu.SerializeAsString(), &message), ErrorKind::kMalformed);
  EXPECT_NE(message.find("bad.pb.gz: not a heap profile"), std::string::npos) << message;

  pb::Profile missing = Unusual(1, 1);
  missing.mutable_sample(0)->set_location_id(0, 31337);
  EXPECT_EQ(DecodeKindOf(c, missing.SerializeAsString(), &message), ErrorKind::kMalformed);
  EXPECT_NE(message.find("missing location 31337"), std::string::npos) << message;

  pb::Profile bad_string = Unusual(1, 1);
  bad_string.mutable_function(0)->set_name(100000);
  EXPECT_EQ(DecodeKindOf(c, bad_string.SerializeAsString(), &message), ErrorKind::kMalformed);
  EXPECT_NE(message.find("string index 100000"), std::string::npos) << message;

  pb::Profile few_values = Unusual(1, 1);
  few_values.mutable_sample(1)->mutable_value()->Truncate(2);
  EXPECT_EQ(DecodeKindOf(c, few_values.SerializeAsString(), &message), ErrorKind::kMalformed);
  EXPECT_NE(message.find("2 values for 4 sample types"), std::string::npos) << message;
}

TEST(GrowthDecodeTest, EveryTruncationIsAddedWholeOrRefusedLeavingNoPoints) {
  const std::string whole = Unusual(5, 3).SerializeAsString();
  size_t refused = 0;
  for (size_t n = 0; n < whole.size(); ++n) {
    GrowthCollector c;
    c.AddSerialized(Unusual(1, 1).SerializeAsString(), "first");
    try {
      c.AddSerialized(whole.substr(0, n), "cut");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kMalformed);
      ++refused;
    }
    // Whatever was added, every point is of a snapshot that exists.
    c.AddSerialized(Unusual(10, 2).SerializeAsString(), "last");
    const size_t snapshots = c.snapshots();
    const GrowthData d = std::move(c).Finish();
    for (const GrowthSite& site : d.sites) {
      for (const GrowthPoint& p : site.points) ASSERT_LT(p.snapshot, snapshots) << n;
    }
  }
  // The string table comes after the samples and locations: most cuts lose it.
  EXPECT_GT(refused, whole.size() / 2);
}

}  // namespace
}  // namespace goheap2pprof
