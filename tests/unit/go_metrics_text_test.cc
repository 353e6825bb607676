// serve's per-process /metrics: client_golang's Go-collector exposition of a
// GoRuntimeStats, and the worker's wire form of that value. The expected
// float texts were printed by Go's strconv.FormatFloat(v, 'g', -1, 64) and
// time.Duration.Seconds (go1.26.8); the expected names are those
// client_golang v1.25.0's own tests list for go1.26. The e2e suite
// serve_metrics_test.sh feeds real output to promtool and Prometheus.
#include "agent/serve/go_metrics_text.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "agent/worker/runtime_stats_wire.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

TEST(PrometheusFloat, WritesWhatGoWrites) {
  const std::pair<double, const char*> cases[] = {
      {0, "0"},
      {1, "1"},
      {-1, "-1"},
      {0.5, "0.5"},
      {1e-5, "1e-05"},
      {0.0001, "0.0001"},
      {123456, "123456"},
      {1234567, "1.234567e+06"},
      {18446744073709551615.0, "1.8446744073709552e+19"},
      {9223372036854775807.0, "9.223372036854776e+18"},
      {2.5e-05, "2.5e-05"},
      {100, "100"},
      {1e21, "1e+21"},
      {3.14159, "3.14159"},
      {12345.678, "12345.678"},
      {-0.00012, "-0.00012"},
      {0.000123, "0.000123"},
      {65536, "65536"},
      {static_cast<double>(int64_t{1764612345123456789}) / 1e9, "1.7646123451234567e+09"},
  };
  for (const auto& [v, want] : cases) EXPECT_EQ(PrometheusFloat(v), want) << v;
  EXPECT_EQ(PrometheusFloat(1.0 / 0.0), "+Inf");
  EXPECT_EQ(PrometheusFloat(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(PrometheusFloat(0.0 / 0.0), "NaN");
}

TEST(GoDurationSeconds, RoundsAsGoDoes) {
  EXPECT_EQ(PrometheusFloat(GoDurationSeconds(1)), "1e-09");
  EXPECT_EQ(PrometheusFloat(GoDurationSeconds(999999999)), "0.999999999");
  EXPECT_EQ(PrometheusFloat(GoDurationSeconds(1000000001)), "1.000000001");
  EXPECT_EQ(PrometheusFloat(GoDurationSeconds(123456789012)), "123.456789012");
  EXPECT_EQ(PrometheusFloat(GoDurationSeconds(21000)), "2.1e-05");
}

TEST(GcPauseQuantiles, ZeroBeforeTheFirstCollection) {
  MemStats m;
  m.pause_ns[0] = 99;  // not a pause yet: NumGC is 0
  EXPECT_EQ(GcPauseQuantiles(m), (std::array<uint64_t, 5>{0, 0, 0, 0, 0}));
}

TEST(GcPauseQuantiles, PicksSortedElementsAsReadGCStats) {
  MemStats m;
  m.num_gc = 5;
  const uint64_t pauses[] = {50, 10, 40, 20, 30};
  for (int i = 0; i < 5; ++i) m.pause_ns[i] = pauses[i];
  m.pause_ns[5] = 1000000;  // beyond NumGC: not a pause
  // sorted 10 20 30 40 50; n*i/4 = 0, 1, 2, 3; then the largest.
  EXPECT_EQ(GcPauseQuantiles(m), (std::array<uint64_t, 5>{10, 20, 30, 40, 50}));
  m.num_gc = 2;  // 50 and 10: sorted 10 50, indexes 0 0 1 1, max 50
  EXPECT_EQ(GcPauseQuantiles(m), (std::array<uint64_t, 5>{10, 10, 50, 50, 50}));
}

TEST(GcPauseQuantiles, UsesTheWholeRingOnceItWrapped) {
  MemStats m;
  m.num_gc = 1000;
  for (size_t i = 0; i < m.pause_ns.size(); ++i) m.pause_ns[i] = 1000 + i;
  EXPECT_EQ(GcPauseQuantiles(m), (std::array<uint64_t, 5>{1000, 1064, 1128, 1192, 1255}));
}

TEST(PrometheusNameOfRuntimeMetric, FollowsClientGolangsRule) {
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/memory/classes/heap/objects:bytes", false),
            "go_memory_classes_heap_objects_bytes");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/memory/classes/os-stacks:bytes", false),
            "go_memory_classes_os_stacks_bytes");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/memory/classes/total:bytes", false),
            "go_memory_classes_total_bytes");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/gc/gogc:percent", false), "go_gc_gogc_percent");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/sched/gomaxprocs:threads", false),
            "go_sched_gomaxprocs_threads");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/cpu/classes/gc/mark/assist:cpu-seconds", true),
            "go_cpu_classes_gc_mark_assist_cpu_seconds_total");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/gc/cycles/total:gc-cycles", true),
            "go_gc_cycles_total_gc_cycles_total");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/godebug/non-default-behavior/execerrdot:events", true),
            "go_godebug_non_default_behavior_execerrdot_events_total");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/sched/goroutines-created:goroutines", true),
            "go_sched_goroutines_created_goroutines_total");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/x/y:a/b*c", false), "go_x_y_a_per_b_c");
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/nosubsystem:bytes", false), std::nullopt);
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/a/b c:bytes", false), std::nullopt);
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("/a/b\n# x:bytes", false), std::nullopt);
  EXPECT_EQ(PrometheusNameOfRuntimeMetric("no/colon", false), std::nullopt);
}

GoRuntimeStats Example() {
  GoRuntimeStats s;
  s.go_version = "go1.26.8";
  auto add = [&](const char* name, uint64_t v) {
    s.metrics.push_back({name, GoMetric::Kind::kUint64, v, 0});
  };
  add("/gc/gogc:percent", 100);
  add("/gc/gomemlimit:bytes", 9223372036854775807ull);
  add("/gc/heap/allocs:bytes", 5000000);
  add("/gc/heap/allocs:objects", 700);
  add("/gc/heap/frees:objects", 300);
  add("/gc/heap/goal:bytes", 4194304);
  add("/gc/heap/objects:objects", 400);
  add("/gc/heap/tiny/allocs:objects", 50);
  add("/memory/classes/heap/free:bytes", 1000);
  add("/memory/classes/heap/objects:bytes", 200000);
  add("/memory/classes/heap/released:bytes", 30000);
  add("/memory/classes/heap/stacks:bytes", 4000);
  add("/memory/classes/heap/unused:bytes", 500);
  add("/memory/classes/os-stacks:bytes", 7);
  add("/memory/classes/total:bytes", 7000000);
  add("/sched/gomaxprocs:threads", 4);
  add("/sched/goroutines:goroutines", 17);  // not in the collector's set
  s.num_goroutine = 11;
  s.threads = 6;
  s.mem.num_gc = 3;
  s.mem.pause_ns[0] = 21000;
  s.mem.pause_ns[1] = 50000;
  s.mem.pause_ns[2] = 10000;
  s.mem.pause_total_ns = 81000;
  s.mem.last_gc = 1764612345123456789;
  return s;
}

TEST(GoCollectorText, WritesTheCollectorsFamilies) {
  const std::string t = GoCollectorText(Example());
  const char* lines[] = {
      "# HELP go_gc_duration_seconds Stop-the-world pauses of the garbage collector, in seconds: "
      "quantiles of the last 256 pauses at most, sum and count over all cycles.\n"
      "# TYPE go_gc_duration_seconds summary\n"
      "go_gc_duration_seconds{quantile=\"0\"} 1e-05\n"
      "go_gc_duration_seconds{quantile=\"0.25\"} 1e-05\n"
      "go_gc_duration_seconds{quantile=\"0.5\"} 2.1e-05\n"
      "go_gc_duration_seconds{quantile=\"0.75\"} 5e-05\n"
      "go_gc_duration_seconds{quantile=\"1\"} 5e-05\n"
      "go_gc_duration_seconds_sum 8.1e-05\ngo_gc_duration_seconds_count 3\n",
      "# TYPE go_gc_gogc_percent gauge\ngo_gc_gogc_percent 100\n",
      "go_gc_gomemlimit_bytes 9.223372036854776e+18\n",
      "# TYPE go_goroutines gauge\ngo_goroutines 11\n",
      "go_info{version=\"go1.26.8\"} 1\n",
      "# TYPE go_memstats_alloc_bytes gauge\ngo_memstats_alloc_bytes 200000\n",
      "# TYPE go_memstats_alloc_bytes_total counter\ngo_memstats_alloc_bytes_total 5e+06\n",
      "go_memstats_mallocs_total 750\n",
      "go_memstats_frees_total 350\n",
      "go_memstats_heap_sys_bytes 231500\n",
      "go_memstats_heap_idle_bytes 31000\n",
      "go_memstats_heap_inuse_bytes 200500\n",
      "go_memstats_heap_objects 400\n",
      "go_memstats_stack_sys_bytes 4007\n",
      "go_memstats_mspan_sys_bytes 0\n",  // a class this example lacks reads 0
      "go_memstats_next_gc_bytes 4.194304e+06\n",
      "go_memstats_sys_bytes 7e+06\n",
      "go_memstats_last_gc_time_seconds 1.7646123451234567e+09\n",
      "# HELP go_memory_classes_heap_objects_bytes Heap bytes in objects: live ones and dead "
      "ones the sweeper has not reclaimed yet (runtime/metrics "
      "/memory/classes/heap/objects:bytes).\n# TYPE go_memory_classes_heap_objects_bytes gauge\n"
      "go_memory_classes_heap_objects_bytes 200000\n",
      "go_memory_classes_total_bytes 7e+06\n",
      "go_sched_gomaxprocs_threads 4\n",
      "# HELP go_memstats_heap_inuse_bytes Heap memory in spans holding objects, their free "
      "slots included; sum of the heap objects and unused classes.\n",
      "# HELP go_threads OS threads the Go runtime has created.\n# TYPE go_threads gauge\n"
      "go_threads 6\n",
  };
  for (const char* want : lines) EXPECT_NE(t.find(want), std::string::npos) << want << "\n" << t;
  EXPECT_EQ(t.find("goroutines_goroutines"), std::string::npos) << "only the collector's set";
}

TEST(GoCollectorText, FamiliesAreSortedAndEachHasHelpAndType) {
  const std::string t = GoCollectorText(Example());
  std::string previous;
  size_t families = 0;
  for (size_t at = 0; (at = t.find("# HELP ", at)) != std::string::npos; ++at) {
    const std::string name = t.substr(at + 7, t.find(' ', at + 7) - at - 7);
    EXPECT_LT(previous, name);
    EXPECT_NE(t.find("# TYPE " + name + " ", at), std::string::npos) << name;
    previous = name;
    ++families;
  }
  // 5 base families, 21 memstats, 3 default runtime metrics, 7 classes.
  EXPECT_EQ(families, 5u + 21u + 3u + 7u);
}

TEST(GoCollectorText, AClassANewerGoAddsIsDescribedByItsName) {
  GoRuntimeStats s = Example();
  s.metrics.push_back({"/memory/classes/heap/new-kind:bytes", GoMetric::Kind::kUint64, 42, 0});
  const std::string t = GoCollectorText(s);
  EXPECT_NE(t.find("# HELP go_memory_classes_heap_new_kind_bytes Go runtime metric "
                   "/memory/classes/heap/new-kind:bytes, as runtime/metrics reads it.\n"
                   "# TYPE go_memory_classes_heap_new_kind_bytes gauge\n"
                   "go_memory_classes_heap_new_kind_bytes 42\n"),
            std::string::npos)
      << t;
}

TEST(GoCollectorText, HostileNamesAndVersionsCannotForgeLines) {
  GoRuntimeStats s = Example();
  s.go_version = "go1\"} 1\nevil 2";
  s.metrics.push_back({"/memory/classes/x\nevil:bytes", GoMetric::Kind::kUint64, 1, 0});
  s.metrics.push_back({"/memory/classes/total:bytes", GoMetric::Kind::kUint64, 1, 0});
  const std::string t = GoCollectorText(s);
  EXPECT_EQ(t.find("\nevil"), std::string::npos) << t;
  EXPECT_NE(t.find("go_info{version=\"go1\\\"} 1\\nevil 2\"} 1\n"), std::string::npos) << t;
  // The duplicate is dropped: the first value stays.
  EXPECT_NE(t.find("go_memory_classes_total_bytes 7e+06\n"), std::string::npos);
  EXPECT_EQ(t.find("go_memory_classes_total_bytes 1\n"), std::string::npos);
}

TEST(RuntimeStatsWire, RoundTrips) {
  GoRuntimeStats s = Example();
  s.metrics.push_back({"/gc/limiter/x:float", GoMetric::Kind::kFloat64, 0, 0.25});
  s.mem.by_size[3] = {32, 9, 4};
  s.mem.gc_cpu_fraction = 5.3e-05;
  s.mem.pause_end[255] = 77;
  s.gomaxprocs = -1;
  s.attempts = 3;
  s.notes = {"read at 0x1000", ""};
  const GoRuntimeStats back = DecodeRuntimeStats(EncodeRuntimeStats(s));
  EXPECT_EQ(back.go_version, s.go_version);
  EXPECT_EQ(back.mem.pause_ns, s.mem.pause_ns);
  EXPECT_EQ(back.mem.pause_end, s.mem.pause_end);
  EXPECT_EQ(back.mem.last_gc, s.mem.last_gc);
  EXPECT_EQ(back.mem.num_gc, 3u);
  EXPECT_EQ(back.mem.gc_cpu_fraction, 5.3e-05);
  EXPECT_EQ(back.mem.by_size[3].size, 32u);
  EXPECT_EQ(back.mem.by_size[3].frees, 4u);
  EXPECT_EQ(back.gomaxprocs, -1);
  EXPECT_EQ(back.attempts, 3);
  EXPECT_EQ(back.threads, 6u);
  EXPECT_EQ(back.num_goroutine, 11u);
  EXPECT_EQ(back.notes, s.notes);
  ASSERT_EQ(back.metrics.size(), s.metrics.size());
  EXPECT_EQ(back.Float("/gc/limiter/x:float"), 0.25);
  EXPECT_EQ(back.Uint("/gc/gomemlimit:bytes"), 9223372036854775807ull);
  EXPECT_EQ(GoCollectorText(back), GoCollectorText(s));
}

// The roles' form: a worker's bad reply is a returned Error, a good one the
// value DecodeRuntimeStats gives.
TEST(RuntimeStatsWire, TryDecodeReturnsTheErrorOfABadReply) {
  const std::string good = EncodeRuntimeStats(Example());
  const Expected<GoRuntimeStats> back = TryDecodeRuntimeStats(good);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(GoCollectorText(*back), GoCollectorText(DecodeRuntimeStats(good)));
  const Expected<GoRuntimeStats> cut = TryDecodeRuntimeStats(good.substr(0, good.size() / 2));
  ASSERT_FALSE(cut.has_value());
  EXPECT_EQ(cut.error().kind(), ErrorKind::kMalformed);
  EXPECT_NE(std::string(cut.error().what()).find("memory-statistics reply"), std::string::npos)
      << cut.error().what();
}

TEST(RuntimeStatsWire, RefusesTruncatedTrailingAndOversized) {
  const std::string good = EncodeRuntimeStats(Example());
  for (size_t n = 0; n < good.size(); n += 7) {
    EXPECT_THROW(DecodeRuntimeStats(good.substr(0, n)), Error) << n;
  }
  EXPECT_THROW(DecodeRuntimeStats(good + "x"), Error);
  std::string bad_magic = good;
  bad_magic[0] ^= 1;
  EXPECT_THROW(DecodeRuntimeStats(bad_magic), Error);
  // A version length far beyond its bound: refused before anything is read.
  std::string long_version = good;
  long_version[4] = '\xff';
  long_version[5] = '\xff';
  try {
    DecodeRuntimeStats(long_version);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed);
    EXPECT_NE(std::string(e.what()).find("exceeds 64"), std::string::npos) << e.what();
  }
}

TEST(RuntimeStatsWire, CarriesTheProcesssOwnOtelNames) {
  const std::string seed = EncodeRuntimeStats(GoRuntimeStats{}, {"checkout", "inst-7"});
  OtelProcessIdentity back;
  DecodeRuntimeStats(seed, &back);
  EXPECT_EQ(back, (OtelProcessIdentity{"checkout", "inst-7"}));
  // Without a place for them (serve, watch) they are read and dropped.
  EXPECT_NO_THROW(DecodeRuntimeStats(seed));
  // A name past the bound is cut by the worker and refused from a forged reply.
  const std::string long_name(kMaxOtelIdentityValue + 10, 'a');
  DecodeRuntimeStats(EncodeRuntimeStats(GoRuntimeStats{}, {long_name, ""}), &back);
  EXPECT_EQ(back.service_name.size(), kMaxOtelIdentityValue);
  std::string forged = EncodeRuntimeStats(GoRuntimeStats{}, {"", ""});
  forged.resize(forged.size() - 8);
  const uint32_t n = kMaxOtelIdentityValue + 1;
  forged.append(reinterpret_cast<const char*>(&n), 4);
  forged.append(n, 'a');
  forged.append(4, '\0');
  EXPECT_THROW(DecodeRuntimeStats(forged, &back), Error);
}

TEST(RuntimeStatsWire, TheFuzzSeedsAreValidReplies) {
  // testdata/fuzz/runtime_stats_wire holds replies in this build's format:
  // a change of the format must regenerate them, or the fuzzer starts from
  // nothing but refusals.
  const std::string dir =
      std::string(GOHEAP2PPROF_SOURCE_DIR) + "/testdata/fuzz/runtime_stats_wire/";
  for (const char* name : {"go1.26.8", "go1.19.8-few", "hostile-names"}) {
    std::ifstream in(dir + name, std::ios::binary);
    ASSERT_TRUE(in) << name;
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    const GoRuntimeStats s = DecodeRuntimeStats(bytes);
    EXPECT_EQ(EncodeRuntimeStats(s), bytes) << name;
    EXPECT_FALSE(s.metrics.empty()) << name;
  }
}

}  // namespace
}  // namespace goheap2pprof
