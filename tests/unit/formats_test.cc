// The JSON snapshot and the text top view, computed from hand-built
// profiles, the rendering choices of the app layer, and the published-only
// vs runtime-exact counters on test memory.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "app/capture.h"
#include "app/output_format.h"
#include "base/error.h"
#include "base/utf8.h"
#include "heap/buckets.h"
#include "pprof/json_snapshot.h"
#include "pprof/output.h"
#include "pprof/text_top.h"
#include "proc/memory_reader.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {
namespace {

using Json = nlohmann::json;

// Builds heap profiles the way runtime/pprof lays them out: four sample
// types (alloc_objects, alloc_space, inuse_objects, inuse_space), locations
// whose lines are listed innermost (inlined) first.
class ProfileMaker {
 public:
  ProfileMaker() {
    Str("");
    AddType("alloc_objects", "count");
    AddType("alloc_space", "bytes");
    AddType("inuse_objects", "count");
    AddType("inuse_space", "bytes");
    p_.mutable_period_type()->set_type(Str("space"));
    p_.mutable_period_type()->set_unit(Str("bytes"));
    p_.set_period(524288);
    pb::Mapping* m = p_.add_mapping();
    m->set_id(1);
    m->set_filename(Str("/srv/app"));
    m->set_build_id(Str("abc123"));
    m->set_has_functions(true);
  }

  // A location of (function, line) frames, innermost first; each function
  // lives in <name>.go.
  uint64_t Loc(std::vector<std::pair<std::string, int>> frames) {
    pb::Location* loc = p_.add_location();
    loc->set_id(p_.location_size());
    loc->set_mapping_id(1);
    loc->set_address(0x401000 + 0x10 * p_.location_size());
    for (const auto& [name, line] : frames) {
      pb::Line* l = loc->add_line();
      l->set_function_id(Func(name));
      l->set_line(line);
    }
    return loc->id();
  }

  // A sample with values {alloc_objects, alloc_space, inuse_objects, inuse_space}.
  void Sample(std::vector<uint64_t> locs, std::array<int64_t, 4> values) {
    pb::Sample* s = p_.add_sample();
    for (uint64_t id : locs) s->add_location_id(id);
    for (int64_t v : values) s->add_value(v);
  }
  // A sample with only in-use values (allocated = in use).
  void InUse(std::vector<uint64_t> locs, int64_t objects, int64_t bytes) {
    Sample(std::move(locs), {objects, bytes, objects, bytes});
  }

  pb::Profile& profile() { return p_; }

 private:
  int64_t Str(const std::string& s) {
    for (int i = 0; i < p_.string_table_size(); ++i) {
      if (p_.string_table(i) == s) return i;
    }
    p_.add_string_table(s);
    return p_.string_table_size() - 1;
  }
  uint64_t Func(const std::string& name) {
    for (const pb::Function& f : p_.function()) {
      if (p_.string_table(f.name()) == name) return f.id();
    }
    pb::Function* f = p_.add_function();
    f->set_id(p_.function_size());
    f->set_name(Str(name));
    f->set_system_name(Str(name));
    f->set_filename(Str(name + ".go"));
    return f->id();
  }
  void AddType(const std::string& type, const std::string& unit) {
    pb::ValueType* vt = p_.add_sample_type();
    vt->set_type(Str(type));
    vt->set_unit(Str(unit));
  }

  pb::Profile p_;
};

// Frames named "runtime." and "internal/runtime/" are the runtime's (Go 1.24+).
const std::vector<std::string_view> kRuntimePrefixes = TraitsForVersion({1, 26, 0}).hidden_prefixes;

Json Snapshot(const pb::Profile& p, size_t top = 0, SnapshotInfo info = {}) {
  return Json::parse(JsonSnapshot(p, info, {.top = top, .runtime_prefixes = kRuntimePrefixes}));
}

// ---- JSON snapshot

TEST(JsonSnapshot, HasTheSeedSchemaAndOurExtras) {
  ProfileMaker m;
  uint64_t leaf = m.Loc({{"main.alloc", 10}});
  uint64_t caller = m.Loc({{"main.main", 5}});
  m.InUse({leaf, caller}, 3, 3 * 4096);
  SnapshotInfo info;
  info.runtime_version = "go1.26.8";
  info.duration_ms = 18;
  info.pid = 4242;
  info.cycle = 7;
  info.warnings = {"something to know"};
  Json j = Snapshot(m.profile(), 10, info);

  EXPECT_EQ(j["runtime_version"], "go1.26.8");
  EXPECT_EQ(j["status"], "complete");
  EXPECT_EQ(j["status_reason"], "");
  EXPECT_EQ(j["duration_ms"], 18);
  EXPECT_EQ(j["output_truncated"], false);
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["counters"], "exact");
  EXPECT_EQ(j["memprofile_rate"], 524288);
  EXPECT_EQ(j["sampling_started_late"], false);
  EXPECT_EQ(j["profile_cycle"], 7);
  EXPECT_EQ(j["samples"], 1);
  EXPECT_EQ(j["entries_total"], 1);
  EXPECT_EQ(j["inuse_bytes_total"], 3 * 4096);
  EXPECT_EQ(j["inuse_objects_total"], 3);
  EXPECT_EQ(j["warnings"], Json::array({"something to know"}));
  ASSERT_EQ(j["entries"].size(), 1u);
  const Json& e = j["entries"][0];
  EXPECT_EQ(e["kind"], "inuse_space_objects");
  EXPECT_EQ(e["name"], "main.alloc");
  EXPECT_EQ(e["bytes"], 3 * 4096);
  EXPECT_EQ(e["objects"], 3);
  EXPECT_DOUBLE_EQ(e["average_bytes"].get<double>(), 4096.0);
  EXPECT_EQ(e["stack"], Json::array({"main.alloc main.alloc.go:10", "main.main main.main.go:5"}));
  // The seed's fields come first, in the seed's order (checked on the text:
  // a parsed nlohmann::json sorts its keys).
  const std::string raw = JsonSnapshot(m.profile(), info, {.top = 10});
  size_t last = 0;
  for (const char* key : {"\"runtime_version\"", "\"status\"", "\"status_reason\"",
                          "\"duration_ms\"", "\"output_truncated\"", "\"entries\""}) {
    size_t at = raw.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    EXPECT_GT(at, last) << key << " out of order";
    last = at;
  }
}

TEST(JsonSnapshot, StackListsInlineFramesInnermostFirstAllocationSiteFirst) {
  ProfileMaker m;
  // One location: main.helper inlined into main.work; then main.main.
  uint64_t inl = m.Loc({{"main.helper", 3}, {"main.work", 20}});
  uint64_t caller = m.Loc({{"main.main", 9}});
  m.InUse({inl, caller}, 1, 64);
  Json j = Snapshot(m.profile());
  EXPECT_EQ(j["entries"][0]["stack"],
            Json::array({"main.helper main.helper.go:3", "main.work main.work.go:20",
                         "main.main main.main.go:9"}));
}

TEST(JsonSnapshot, AggregatesSamplesWithTheSameStackAfterScaling) {
  ProfileMaker m;
  uint64_t a = m.Loc({{"main.alloc", 10}});
  uint64_t b = m.Loc({{"main.main", 5}});
  // Two buckets of the same stack with different object sizes: each sample
  // is already scaled on its own, the entry is their sum.
  m.InUse({a, b}, 128, 128 * 16);
  m.InUse({a, b}, 2, 2 * 65536);
  // Same function names, another PC (location): a separate entry, as the
  // seed keys by PC sequence.
  uint64_t a2 = m.Loc({{"main.alloc", 10}});
  m.InUse({a2, b}, 1, 8);
  Json j = Snapshot(m.profile());
  ASSERT_EQ(j["entries"].size(), 2u);
  EXPECT_EQ(j["entries"][0]["bytes"], 128 * 16 + 2 * 65536);
  EXPECT_EQ(j["entries"][0]["objects"], 130);
  EXPECT_DOUBLE_EQ(j["entries"][0]["average_bytes"].get<double>(), (128.0 * 16 + 2 * 65536) / 130);
  EXPECT_EQ(j["entries"][1]["bytes"], 8);
  EXPECT_EQ(j["entries"][0]["stack"], j["entries"][1]["stack"]);
  EXPECT_EQ(j["samples"], 3);
}

TEST(JsonSnapshot, SortsByBytesAndTruncatesToTop) {
  ProfileMaker m;
  uint64_t root = m.Loc({{"main.main", 1}});
  const std::vector<std::pair<std::string, int64_t>> sites = {
      {"main.small", 100}, {"main.big", 900}, {"main.mid", 500}, {"main.freed", 0}};
  for (const auto& [name, bytes] : sites) {
    m.Sample({m.Loc({{name, 7}}), root}, {5, 1000, bytes ? 1 : 0, bytes});
  }
  Json all = Snapshot(m.profile(), 0);
  ASSERT_EQ(all["entries"].size(), 3u);  // main.freed has nothing in use
  EXPECT_EQ(all["entries"][0]["name"], "main.big");
  EXPECT_EQ(all["entries"][1]["name"], "main.mid");
  EXPECT_EQ(all["entries"][2]["name"], "main.small");
  EXPECT_EQ(all["output_truncated"], false);
  EXPECT_EQ(all["entries_total"], 3);

  Json top2 = Snapshot(m.profile(), 2);
  ASSERT_EQ(top2["entries"].size(), 2u);
  EXPECT_EQ(top2["entries"][1]["name"], "main.mid");
  EXPECT_EQ(top2["output_truncated"], true);
  EXPECT_EQ(top2["entries_total"], 3);
  EXPECT_EQ(top2["inuse_bytes_total"], 1500);  // totals cover all entries

  EXPECT_EQ(Snapshot(m.profile(), 3)["output_truncated"], false);
}

TEST(JsonSnapshot, NameIsTheFirstNonRuntimeFrame) {
  ProfileMaker m;
  uint64_t malloc = m.Loc({{"runtime.mallocgc", 1}});
  uint64_t maps = m.Loc({{"internal/runtime/maps.newarray", 2}});
  uint64_t user = m.Loc({{"main.fill", 3}});
  uint64_t rt_main = m.Loc({{"runtime.main", 4}});
  m.InUse({malloc, maps, user, rt_main}, 1, 100);
  // Only runtime frames: the allocation site names it.
  uint64_t g = m.Loc({{"runtime.malg", 5}});
  m.InUse({g, rt_main}, 1, 50);
  // A package whose name only starts like "runtime" is not the runtime.
  uint64_t rtx = m.Loc({{"runtimex.alloc", 6}});
  m.InUse({malloc, rtx}, 1, 10);
  Json j = Snapshot(m.profile());
  ASSERT_EQ(j["entries"].size(), 3u);
  EXPECT_EQ(j["entries"][0]["name"], "main.fill");
  EXPECT_EQ(j["entries"][0]["stack"][0], "runtime.mallocgc runtime.mallocgc.go:1");
  EXPECT_EQ(j["entries"][1]["name"], "runtime.malg");
  EXPECT_EQ(j["entries"][2]["name"], "runtimex.alloc");
}

TEST(JsonSnapshot, UnsymbolizedLocationIsItsAddress) {
  ProfileMaker m;
  pb::Location* loc = m.profile().add_location();
  loc->set_id(99);
  loc->set_address(0x4abcde);
  m.InUse({99}, 1, 16);
  Json j = Snapshot(m.profile());
  EXPECT_EQ(j["entries"][0]["stack"], Json::array({"0x4abcde"}));
  EXPECT_EQ(j["entries"][0]["name"], "0x4abcde");
}

TEST(JsonSnapshot, FailureHasStatusReasonAndNoEntries) {
  SnapshotInfo info;
  info.status = StatusForError(ErrorKind::kSamplingDisabled);
  info.status_reason = "heap profiling is off";
  info.pid = 7;
  Json j = Json::parse(FailureJsonSnapshot(info));
  EXPECT_EQ(j["status"], "unavailable");
  EXPECT_EQ(j["status_reason"], "heap profiling is off");
  EXPECT_EQ(j["entries"], Json::array());
  EXPECT_EQ(j["output_truncated"], false);
  EXPECT_TRUE(j["memprofile_rate"].is_null());
  EXPECT_EQ(j["pid"], 7);
  EXPECT_EQ(StatusForError(ErrorKind::kPermission), SnapshotStatus::kFailed);
  EXPECT_EQ(StatusForError(ErrorKind::kNoSuchProcess), SnapshotStatus::kFailed);
  EXPECT_EQ(StatusForError(ErrorKind::kUnsupported), SnapshotStatus::kUnavailable);
  EXPECT_EQ(StatusForError(ErrorKind::kNotGo), SnapshotStatus::kUnavailable);
}

TEST(JsonSnapshot, SumsSaturateInsteadOfOverflowing) {
  // Corrupt counters: two samples of one stack whose bytes add past INT64_MAX.
  ProfileMaker m;
  uint64_t f = m.Loc({{"main.f", 1}});
  uint64_t g = m.Loc({{"main.g", 2}});
  m.InUse({f}, 1, INT64_MAX);
  m.InUse({f}, INT64_MAX, 5);
  m.InUse({g}, INT64_MIN, INT64_MIN);
  std::vector<SnapshotEntry> entries = InUseByStack(m.profile(), kRuntimePrefixes);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "main.f");
  EXPECT_EQ(entries[0].bytes, INT64_MAX);
  EXPECT_EQ(entries[0].objects, INT64_MAX);
  EXPECT_EQ(entries[1].bytes, INT64_MIN);
  Json j = Snapshot(m.profile());
  // INT64_MAX + INT64_MIN: the totals are defined (-1), not wrapped twice.
  EXPECT_EQ(j["inuse_bytes_total"].get<int64_t>(), -1);
  EXPECT_EQ(j["inuse_objects_total"].get<int64_t>(), -1);
}

// ---- text top

// main.main -> main.a -> main.leaf (inlined into main.a) and
// main.main -> main.b -> main.b (recursion) -> main.leaf2.
ProfileMaker TopFixture() {
  ProfileMaker m;
  uint64_t mainf = m.Loc({{"main.main", 1}});
  uint64_t a_leaf = m.Loc({{"main.leaf", 2}, {"main.a", 3}});
  uint64_t b1 = m.Loc({{"main.b", 4}});
  uint64_t b2 = m.Loc({{"main.b", 5}});
  uint64_t leaf2 = m.Loc({{"main.leaf2", 6}});
  m.Sample({a_leaf, mainf}, {1, 1000, 1, 600});
  m.Sample({leaf2, b2, b1, mainf}, {2, 3000, 2, 300});
  m.Sample({b1, mainf}, {4, 100, 4, 100});
  return m;
}

TEST(TextTop, Int64MinIsScaledLikePprofWithoutRecursion) {
  // pprof's Scale negates negative values, except INT64_MIN (whose negation
  // overflows), which it scales as is: no unit fits, so bytes.
  EXPECT_EQ(FormatPprofValue(INT64_MIN, "bytes", "minimum"), "-9223372036854775808B");
  EXPECT_EQ(FormatPprofValue(INT64_MIN, "count", "minimum"), "-9223372036854775808");
  EXPECT_EQ(FormatPprofValue(INT64_MIN + 1, "bytes", "minimum"), "-8192PB");
  EXPECT_EQ(FormatPprofValue(INT64_MIN, "bytes", "MB"), "-8796093022208MB");
}

TEST(TextTop, SumsOfHostileValuesSaturate) {
  // ScaleHeapSample yields INT64_MIN for corrupt counters; two huge samples
  // under one caller overflow its cum and the total.
  ProfileMaker m;
  uint64_t mainf = m.Loc({{"main.main", 1}});
  uint64_t f = m.Loc({{"main.f", 2}});
  uint64_t g = m.Loc({{"main.g", 3}});
  uint64_t h = m.Loc({{"main.h", 4}});
  m.InUse({f, mainf}, 1, INT64_MAX);
  m.InUse({g, mainf}, 1, INT64_MAX);
  m.InUse({h}, 1, INT64_MIN);
  TopTable t = ComputeTop(m.profile(), {.sample_index = "inuse_space", .node_count = 0});
  EXPECT_EQ(t.total, INT64_MAX);
  std::vector<std::tuple<std::string, int64_t, int64_t>> rows;
  for (const TopRow& r : t.rows) rows.emplace_back(r.name, r.flat, r.cum);
  // |INT64_MIN| saturates to INT64_MAX, so main.h ties and sorts by name.
  const std::vector<std::tuple<std::string, int64_t, int64_t>> want = {
      {"main.f", INT64_MAX, INT64_MAX},
      {"main.g", INT64_MAX, INT64_MAX},
      {"main.h", INT64_MIN, INT64_MIN},
      {"main.main", 0, INT64_MAX},
  };
  EXPECT_EQ(rows, want);
  EXPECT_EQ(t.output_unit, "PB");
  const std::string text = TextTop(m.profile(), {.sample_index = "inuse_space", .node_count = 0});
  EXPECT_NE(text.find("   -8192PB"), std::string::npos) << text;
  EXPECT_NE(text.find("    8192PB   100%   100%     8192PB   100%  main.f\n"), std::string::npos)
      << text;
}

TEST(TextTop, FlatGoesToTheInnermostFrameAndCumCountsRecursionOnce) {
  ProfileMaker m = TopFixture();
  TopTable t = ComputeTop(m.profile(), {.sample_index = "inuse_space", .node_count = 0});
  EXPECT_EQ(t.total, 1000);
  std::vector<std::tuple<std::string, int64_t, int64_t>> rows;
  for (const TopRow& r : t.rows) rows.emplace_back(r.name, r.flat, r.cum);
  // flat desc, then name asc for equal flat.
  const std::vector<std::tuple<std::string, int64_t, int64_t>> want = {
      {"main.leaf", 600, 600}, {"main.leaf2", 300, 300}, {"main.b", 100, 400},
      {"main.a", 0, 600},      {"main.main", 0, 1000},
  };
  EXPECT_EQ(rows, want);
  EXPECT_EQ(t.rows[0].inline_label, "(inline)");  // called only inline from main.a
  EXPECT_EQ(t.rows[2].inline_label, "");
}

TEST(TextTop, SampleIndexAndNodeCount) {
  ProfileMaker m = TopFixture();
  TopTable t = ComputeTop(m.profile(), {.sample_index = "alloc_space", .node_count = 2});
  EXPECT_EQ(t.total, 4100);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].name, "main.leaf2");
  EXPECT_EQ(t.rows[0].flat, 3000);
  EXPECT_EQ(t.rows[1].name, "main.leaf");
  EXPECT_EQ(t.labels.back(), "Showing top 2 nodes out of 5");
  TopTable objects = ComputeTop(m.profile(), {.sample_index = "inuse_objects", .node_count = 1});
  EXPECT_EQ(objects.rows[0].name, "main.b");
  EXPECT_EQ(objects.rows[0].flat, 4);
  EXPECT_EQ(objects.rows[0].cum, 6);
  EXPECT_THROW(ComputeTop(m.profile(), {.sample_index = "cpu"}), Error);
}

TEST(TextTop, DropsNodesBelowTheNodeFraction) {
  ProfileMaker m;
  uint64_t root = m.Loc({{"main.main", 1}});
  m.InUse({m.Loc({{"main.big", 2}}), root}, 1, 100000);
  m.InUse({m.Loc({{"main.tiny", 3}}), root}, 1, 400);  // < 0.5% of 100400
  TopTable t = ComputeTop(m.profile(), {.node_count = 0});
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].name, "main.big");
  EXPECT_EQ(t.rows[1].name, "main.main");
  EXPECT_NE(std::find(t.labels.begin(), t.labels.end(), "Dropped 1 node (cum <= 0.49kB)"),
            t.labels.end());
}

TEST(TextTop, RendersLikePprof) {
  ProfileMaker m = TopFixture();
  std::string text = TextTop(m.profile(), {.sample_index = "inuse_space", .node_count = 0});
  const std::string want =
      "File: app\n"
      "Build ID: abc123\n"
      "Type: inuse_space\n"
      "Showing nodes accounting for 1000B, 100% of 1000B total\n"
      "      flat  flat%   sum%        cum   cum%\n"
      "      600B 60.00% 60.00%       600B 60.00%  main.leaf (inline)\n"
      "      300B 30.00% 90.00%       300B 30.00%  main.leaf2\n"
      "      100B 10.00%   100%       400B 40.00%  main.b\n"
      "         0     0%   100%       600B 60.00%  main.a\n"
      "         0     0%   100%      1000B   100%  main.main\n";
  EXPECT_EQ(text, want);
}

TEST(TextTop, NamesThatAreNotUtf8AreWrittenWithReplacementCharacters) {
  ProfileMaker m;
  const uint64_t mainf = m.Loc({{"main.main", 1}});
  m.InUse({m.Loc({{"main.gr\xFFwHeap", 2}}), mainf}, 1, 400);
  const std::string text = TextTop(m.profile(), {.sample_index = "inuse_space", .node_count = 0});
  EXPECT_TRUE(IsValidUtf8(text)) << text;
  EXPECT_NE(text.find("  main.gr\xEF\xBF\xBDwHeap\n"), std::string::npos) << text;
}

TEST(TextTop, FormatsValuesAndPercentagesAsPprof) {
  EXPECT_EQ(FormatPprofValue(4194304, "bytes", "kB"), "4096kB");
  EXPECT_EQ(FormatPprofValue(16, "bytes", "kB"), "0.02kB");
  EXPECT_EQ(FormatPprofValue(1572864, "bytes", "MB"), "1.50MB");
  EXPECT_EQ(FormatPprofValue(0, "bytes", "MB"), "0");
  EXPECT_EQ(FormatPprofValue(3, "bytes", "MB"), "0");
  EXPECT_EQ(FormatPprofValue(1536, "bytes", "minimum"), "1.50kB");
  EXPECT_EQ(FormatPprofValue(12345, "count", "count"), "12345");
  EXPECT_EQ(FormatPprofPercentage(1, 3), "33.33%");
  EXPECT_EQ(FormatPprofPercentage(1, 1), "  100%");
  EXPECT_EQ(FormatPprofPercentage(5, 1000), "  0.5%");
  EXPECT_EQ(FormatPprofPercentage(35, 10000000), "0.00035%");
  EXPECT_EQ(FormatPprofPercentage(0, 10), "    0%");
  EXPECT_EQ(FormatPprofPercentage(0, 0), "    0%");
}

TEST(TextTop, ChoosesTheUnitOfTheSmallestValueUnlessTheTotalIsFarLarger) {
  ProfileMaker m;
  uint64_t root = m.Loc({{"main.main", 1}});
  m.InUse({m.Loc({{"main.big", 2}}), root}, 1, 4 << 20);
  m.InUse({m.Loc({{"main.small", 3}}), root}, 1, 512 << 10);
  // min 512kB, total 4.5MB: different units but not 100x apart -> kB.
  EXPECT_EQ(ComputeTop(m.profile(), {}).output_unit, "kB");
  ProfileMaker n;
  uint64_t r = n.Loc({{"main.main", 1}});
  n.InUse({n.Loc({{"main.big", 2}}), r}, 1, 400 << 20);
  n.InUse({n.Loc({{"main.small", 3}}), r}, 1, 3 << 20);
  // min 3MB and total 403MB share a unit.
  EXPECT_EQ(ComputeTop(n.profile(), {}).output_unit, "MB");
  ProfileMaker k;
  uint64_t q = k.Loc({{"main.main", 1}});
  k.InUse({k.Loc({{"main.big", 2}}), q}, 1, 4 << 20);
  k.InUse({k.Loc({{"main.small", 3}}), q}, 1, 16);
  // min 16B (kept: no node fraction) is over 100x below the 4MB total: the
  // unit of 1600B, kB.
  EXPECT_EQ(ComputeTop(k.profile(), {.node_fraction = 0}).output_unit, "kB");
  EXPECT_EQ(ComputeTop(k.profile(), {}).output_unit, "MB");  // 16B dropped, min 4MB
}

// ---- the app layer's choice of format

TEST(RenderOutput, EachFormatComesFromTheSameProfile) {
  ProfileMaker m = TopFixture();
  OutputOptions options;
  CaptureReport report;
  report.go_version = "go1.26.8";
  report.cycle = 3;
  const RenderContext context{.pid = 99, .report = &report, .runtime_prefixes = kRuntimePrefixes};

  options.format = OutputFormat::kPprof;
  pb::Profile round_trip;
  ASSERT_TRUE(round_trip.ParseFromString(Gunzip(RenderOutput(m.profile(), options, context))));
  EXPECT_EQ(round_trip.sample_size(), 3);

  options = {.format = OutputFormat::kText, .top = 2, .sample_index = "alloc_space"};
  EXPECT_EQ(RenderOutput(m.profile(), options, context),
            TextTop(m.profile(), {.sample_index = "alloc_space", .node_count = 2}));

  options = {.format = OutputFormat::kJson, .counters = CounterSource::kPublished, .top = 1};
  Json j = Json::parse(RenderOutput(m.profile(), options, context));
  EXPECT_EQ(j["status"], "complete");
  EXPECT_EQ(j["counters"], "published");
  EXPECT_EQ(j["runtime_version"], "go1.26.8");
  EXPECT_EQ(j["profile_cycle"], 3);
  EXPECT_EQ(j["entries"].size(), 1u);
  EXPECT_EQ(j["output_truncated"], true);

  report.consistent = false;
  j = Json::parse(RenderOutput(m.profile(), options, context));
  EXPECT_EQ(j["status"], "partial");
  EXPECT_NE(j["status_reason"].get<std::string>().find("two cycles"), std::string::npos);

  Json failed = Json::parse(
      RenderFailureJson(options, context, Error(ErrorKind::kPermission, "reading 0x10: EPERM")));
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_EQ(failed["status_reason"], "permission denied: reading 0x10: EPERM");
  EXPECT_EQ(failed["runtime_version"], "go1.26.8");
}

TEST(RenderOutput, JsonSaysWhenSamplingBeganAfterStartUp) {
  // A program without runtime/pprof that assigned runtime.MemProfileRate
  // itself: its allocations from before are not in the snapshot.
  ProfileMaker m = TopFixture();
  CaptureReport report;
  const RenderContext context{.pid = 99, .report = &report, .runtime_prefixes = kRuntimePrefixes};
  const OutputOptions options{.format = OutputFormat::kJson};
  EXPECT_EQ(Json::parse(RenderOutput(m.profile(), options, context))["sampling_started_late"],
            false);
  report.sampling_started_late = true;
  EXPECT_EQ(Json::parse(RenderOutput(m.profile(), options, context))["sampling_started_late"],
            true);
}

// ---- published-only vs runtime-exact counters, on test memory

// Writes one heap bucket (header, stack, memRecord) into test memory.
std::vector<uint8_t> FormatsBucketBytes(uint64_t allnext, uint64_t size,
                                        std::vector<uint64_t> stack, const MemRecordCycle& active,
                                        const std::array<MemRecordCycle, 3>& future) {
  std::vector<uint64_t> words = {0, allnext, kMemProfileBucketType, 0x1234, size, stack.size()};
  words.insert(words.end(), stack.begin(), stack.end());
  for (const MemRecordCycle* c : {&active, &future[0], &future[1], &future[2]}) {
    words.insert(words.end(), {c->allocs, c->frees, c->alloc_bytes, c->free_bytes});
  }
  std::vector<uint8_t> bytes(words.size() * 8);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

TEST(PublishedCounters, DifferFromExactByTheUnflushedCycleOnly) {
  // Two buckets; the runtime has published some cycles (active), and each
  // future slot holds a different, recognisable increment.
  const MemRecordCycle active1{100, 60, 100 * 64, 60 * 64};
  const std::array<MemRecordCycle, 3> future1 = {MemRecordCycle{20, 10, 20 * 64, 10 * 64},
                                                 MemRecordCycle{7, 0, 7 * 64, 0},
                                                 MemRecordCycle{3, 2, 3 * 64, 2 * 64}};
  const MemRecordCycle active2{5, 5, 5 * 4096, 5 * 4096};
  const std::array<MemRecordCycle, 3> future2 = {MemRecordCycle{1, 0, 4096, 0},
                                                 MemRecordCycle{0, 1, 0, 4096},
                                                 MemRecordCycle{9, 4, 9 * 4096, 4 * 4096}};
  TestMemory mem;
  const uint64_t b1 = 0x10000, b2 = 0x20000;
  mem.Map(b1, FormatsBucketBytes(b2, 64, {0x401000, 0x402000}, active1, future1));
  mem.Map(b2, FormatsBucketBytes(0, 4096, {0x403000}, active2, future2));
  const WalkResult w = WalkBuckets(mem, b1, {.max_stack_words = 32});
  ASSERT_EQ(w.buckets.size(), 2u);

  const std::vector<MemProfileRecord> published = PublishedCounts(w.buckets);
  const std::array<const std::array<MemRecordCycle, 3>*, 2> futures = {&future1, &future2};
  for (uint32_t cycle : {0u, 1u, 2u, 3u, 7u, 11u}) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    const std::vector<MemProfileRecord> exact = EmulateMemProfile(w.buckets, cycle);
    ASSERT_EQ(exact.size(), published.size());
    for (size_t i = 0; i < exact.size(); ++i) {
      // The cycle being flushed: future[C % 3], and nothing else.
      const MemRecordCycle& unflushed = (*futures[i])[cycle % 3];
      EXPECT_EQ(exact[i].alloc_objects - published[i].alloc_objects,
                static_cast<int64_t>(unflushed.allocs));
      EXPECT_EQ(exact[i].free_objects - published[i].free_objects,
                static_cast<int64_t>(unflushed.frees));
      EXPECT_EQ(exact[i].alloc_bytes - published[i].alloc_bytes,
                static_cast<int64_t>(unflushed.alloc_bytes));
      EXPECT_EQ(exact[i].free_bytes - published[i].free_bytes,
                static_cast<int64_t>(unflushed.free_bytes));
    }
  }
  // In use, for bucket 1 at cycle 3 (flushing future[0]): the published 40
  // objects, plus the unflushed 20 allocated - 10 freed.
  EXPECT_EQ(published[0].InUseObjects(), 40);
  EXPECT_EQ(EmulateMemProfile(w.buckets, 3)[0].InUseObjects(), 50);
}

TEST(PublishedCounters, EqualRightAfterAFlushAndEmptyBeforeAnyGc) {
  TestMemory mem;
  // Right after the runtime flushed cycle C into active, future[C % 3] is 0.
  const MemRecordCycle active{10, 4, 640, 256};
  mem.Map(0x10000,
          FormatsBucketBytes(0, 64, {0x401000}, active,
                             {MemRecordCycle{}, MemRecordCycle{2, 0, 128, 0}, MemRecordCycle{}}));
  WalkResult w = WalkBuckets(mem, 0x10000, {});
  EXPECT_EQ(EmulateMemProfile(w.buckets, 3)[0].InUseObjects(),
            PublishedCounts(w.buckets)[0].InUseObjects());
  EXPECT_EQ(EmulateMemProfile(w.buckets, 3)[0].alloc_bytes,
            PublishedCounts(w.buckets)[0].alloc_bytes);

  // Before any GC (cycle 0) nothing is published: allocations and explicit
  // frees sit in future[C + 2]. Published-only shows nothing; the runtime
  // folds in all three future cycles.
  TestMemory fresh;
  fresh.Map(0x10000, FormatsBucketBytes(
                         0, 64, {0x401000}, MemRecordCycle{},
                         {MemRecordCycle{}, MemRecordCycle{}, MemRecordCycle{4, 1, 256, 64}}));
  w = WalkBuckets(fresh, 0x10000, {});
  EXPECT_EQ(PublishedCounts(w.buckets)[0].InUseObjects(), 0);
  EXPECT_EQ(PublishedCounts(w.buckets)[0].alloc_objects, 0);
  EXPECT_EQ(EmulateMemProfile(w.buckets, 0)[0].InUseObjects(), 3);
  EXPECT_EQ(EmulateMemProfile(w.buckets, 0)[0].alloc_bytes, 256);
}

}  // namespace
}  // namespace goheap2pprof
