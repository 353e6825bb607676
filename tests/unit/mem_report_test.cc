// `goheap2pprof mem`'s rendering on hand-made statistics: the
// /memory/classes/ tree (folders sum their leaves, larger siblings first),
// du -h sizes, the not-managed-by-Go figure and its clamp, the live heap
// lines per Go version, and the JSON document.
#include "app/mem_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace goheap2pprof {
namespace {

constexpr uint64_t kReportMiB = uint64_t{1} << 20;

GoMetric U(std::string name, uint64_t v) {
  return {.name = std::move(name), .kind = GoMetric::Kind::kUint64, .u = v, .f = 0};
}

// A Go 1.26 process: 64 MiB mapped by the runtime.
MemReport SampleReport() {
  MemReport r;
  r.pid = 4242;
  r.comm = "server";
  GoRuntimeStats& s = r.stats;
  s.go_version = "go1.26.8";
  s.metrics = {
      U("/gc/gogc:percent", 100),
      U("/gc/gomemlimit:bytes", uint64_t{INT64_MAX}),
      U("/gc/heap/goal:bytes", 40 * kReportMiB),
      U("/gc/heap/live:bytes", 20 * kReportMiB),
      U("/memory/classes/heap/free:bytes", 6 * kReportMiB),
      U("/memory/classes/heap/objects:bytes", 30 * kReportMiB),
      U("/memory/classes/heap/released:bytes", 8 * kReportMiB),
      U("/memory/classes/heap/stacks:bytes", 2 * kReportMiB),
      U("/memory/classes/heap/unused:bytes", 4 * kReportMiB),
      U("/memory/classes/metadata/mcache/free:bytes", 1000),
      U("/memory/classes/metadata/mcache/inuse:bytes", 24),
      U("/memory/classes/metadata/mspan/free:bytes", 100000),
      U("/memory/classes/metadata/mspan/inuse:bytes", 400000),
      U("/memory/classes/metadata/other:bytes", 10 * kReportMiB - 501024),
      U("/memory/classes/os-stacks:bytes", 0),
      U("/memory/classes/other:bytes", 2 * kReportMiB),
      U("/memory/classes/profiling/buckets:bytes", 2 * kReportMiB),
      U("/memory/classes/total:bytes", 64 * kReportMiB),
  };
  s.mem.sys = 64 * kReportMiB;
  s.mem.heap_released = 8 * kReportMiB;
  s.mem.heap_alloc = 30 * kReportMiB;
  s.mem.next_gc = 40 * kReportMiB;
  s.mem.num_gc = 7;
  s.mem.num_forced_gc = 2;
  s.num_goroutine = 5;
  s.gomaxprocs = 2;
  r.process = ProcStatusMemory{.vm_rss = 170 * kReportMiB,
                               .rss_anon = 160 * kReportMiB,
                               .rss_file = 9 * kReportMiB,
                               .rss_shmem = 1 * kReportMiB,
                               .vm_hwm = 171 * kReportMiB};
  r.cgroup = CgroupFigures{.version = "v2",
                           .dir = "/sys/fs/cgroup/app",
                           .usage = 340 * kReportMiB,
                           .limit = 512 * kReportMiB};
  return r;
}

TEST(HumanSize, RoundsUpLikeDuH) {
  EXPECT_EQ(HumanSize(0), "0");
  EXPECT_EQ(HumanSize(1023), "1023");
  EXPECT_EQ(HumanSize(1024), "1.0K");
  EXPECT_EQ(HumanSize(1025), "1.1K");
  EXPECT_EQ(HumanSize(1536), "1.5K");
  EXPECT_EQ(HumanSize(10 * 1024 - 1), "10K");
  EXPECT_EQ(HumanSize(10 * 1024 + 1), "11K");
  EXPECT_EQ(HumanSize(1024 * 1024 - 1), "1.0M");
  EXPECT_EQ(HumanSize(100 * kReportMiB), "100M");
  EXPECT_EQ(HumanSize(uint64_t{3} << 30), "3.0G");
  EXPECT_EQ(HumanSize(UINT64_MAX), "16E");
}

TEST(NotManagedByGo, IsRssAnonMinusMappedAndNotReleasedClampedAtZero) {
  MemReport r = SampleReport();
  // 160 MiB anon - (64 - 8) MiB.
  EXPECT_EQ(NotManagedByGo(r), 104 * kReportMiB);
  r.process->rss_anon = 50 * kReportMiB;  // less than the runtime maps: none outside it
  EXPECT_EQ(NotManagedByGo(r), 0u);
  r.process->rss_anon.reset();
  EXPECT_FALSE(NotManagedByGo(r));
  r.process.reset();
  EXPECT_FALSE(NotManagedByGo(r));
}

TEST(RenderMemText, PrintsTheClassTreeLargestFirstWithFolderSums) {
  const std::string text = RenderMemText(SampleReport());
  EXPECT_NE(text.find("pid 4242 (server), go1.26.8\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    64M        67108864  100.0%  total\n"), std::string::npos) << text;
  // heap = 6 + 30 + 8 + 2 + 4 MiB, then its leaves by size.
  EXPECT_NE(text.find("    50M        52428800   78.1%    heap\n"
                      "    30M        31457280   46.9%      objects\n"
                      "   8.0M         8388608   12.5%      released\n"
                      "   6.0M         6291456    9.4%      free\n"
                      "   4.0M         4194304    6.2%      unused\n"
                      "   2.0M         2097152    3.1%      stacks\n"
                      "    10M        10485760   15.6%    metadata\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("   489K          500000    0.7%      mspan\n"
                      "   391K          400000    0.6%        inuse\n"
                      "    98K          100000    0.1%        free\n"
                      "   1.0K            1024    0.0%      mcache\n"
                      "   1000            1000    0.0%        free\n"
                      "     24              24    0.0%        inuse\n"),
            std::string::npos)
      << text;
  // Equal siblings keep the name order; an empty class is still listed.
  EXPECT_NE(text.find("   2.0M         2097152    3.1%    other\n"
                      "   2.0M         2097152    3.1%    profiling\n"
                      "   2.0M         2097152    3.1%      buckets\n"
                      "      0               0    0.0%    os-stacks\n"),
            std::string::npos)
      << text;
}

TEST(RenderMemText, GoroutineStacksBySiteAgainstStackInuse) {
  MemReport r = SampleReport();
  r.stats.mem.stack_inuse = 100 << 20;
  r.stacks = GoroutineStacks{
      .sites = {{"main.main at main.go:12", 10000, 80 << 20}, {"(no creator shown)", 1, 8192}},
      .goroutines = 10001,
      .bytes = (80 << 20) + 8192,
      .system = 4};
  const std::string text = RenderMemText(r);
  EXPECT_NE(text.find("Goroutine stacks by creation site (g.stack.hi - g.stack.lo, summed):\n"
                      "  81M (83894272) in 10001 goroutines, 80.0% of StackInuse 100M\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" 80M        83886080       10000  main.main at main.go:12\n"),
            std::string::npos)
      << text;
  const nlohmann::json j = nlohmann::json::parse(RenderMemJson(r));
  EXPECT_EQ(j["goroutine_stacks"]["bytes"], 83894272);
  EXPECT_EQ(j["goroutine_stacks"]["stack_inuse_bytes"], 100 << 20);
  EXPECT_EQ(j["goroutine_stacks"]["left_out"]["system"], 4);
  EXPECT_EQ(j["goroutine_stacks"]["sites"][0]["goroutines"], 10000);
  // Where the goroutines cannot be read, the section says why.
  r.stacks.reset();
  r.stacks_error = "arm64 is not supported";
  EXPECT_NE(RenderMemText(r).find("Goroutine stacks: not read (arm64 is not supported)"),
            std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(RenderMemJson(r))["goroutine_stacks"]["error"],
            "arm64 is not supported");
}

TEST(RenderMemText, PrintsHeapProcessNotGoAndCgroupLines) {
  const std::string text = RenderMemText(SampleReport());
  EXPECT_NE(
      text.find("  live        20M (20971520) marked live by the last GC, 50.0% of the goal\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  goal        40M (41943040)"), std::string::npos) << text;
  EXPECT_NE(text.find("  GOMEMLIMIT  none\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  GOGC        100\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  RSS         170M (anon 160M, file 9.0M, shmem 1.0M); the Go runtime's "
                      "total is 37.6% of RSS\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  peak RSS    171M (VmHWM)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  104M (109051904) = RSS anon 160M - (Sys 64M - HeapReleased 8.0M)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Cgroup (v2 /sys/fs/cgroup/app):\n  usage       340M of limit 512M "
                      "(66.4%); this process's RSS is 50.0% of it\n"),
            std::string::npos)
      << text;
}

TEST(RenderMemText, OlderGoAndLimitsAndCores) {
  MemReport r = SampleReport();
  // Go 1.20: no /gc/heap/live, no /gc/gogc; a memory limit set; GOGC=off.
  r.stats.go_version = "go1.20.14";
  std::erase_if(r.stats.metrics, [](const GoMetric& m) { return m.name == "/gc/heap/live:bytes"; });
  for (GoMetric& m : r.stats.metrics) {
    if (m.name == "/gc/gomemlimit:bytes") m.u = 128 * kReportMiB;
    if (m.name == "/gc/gogc:percent") m.u = UINT64_MAX;
  }
  std::string text = RenderMemText(r);
  EXPECT_NE(text.find("  live        ? (/gc/heap/live:bytes is Go 1.21+; go1.20.14 lacks it)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  GOMEMLIMIT  128M (134217728), the runtime's total is 50.0% of it\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  GOGC        off\n"), std::string::npos) << text;
  r.core = "core.4242";
  r.process.reset();
  r.cgroup.reset();
  text = RenderMemText(r);
  EXPECT_TRUE(text.starts_with("core core.4242, pid 4242 (server), go1.20.14\n")) << text;
  EXPECT_NE(text.find("Process: no RSS figures (read from a core file"), std::string::npos) << text;
  std::erase_if(r.stats.metrics,
                [](const GoMetric& m) { return m.name == "/gc/gomemlimit:bytes"; });
  text = RenderMemText(r);
  EXPECT_NE(text.find("  GOMEMLIMIT  ? (/gc/gomemlimit:bytes is Go 1.21+; go1.20.14 lacks it)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Not managed"), std::string::npos) << text;
  EXPECT_EQ(text.find("Cgroup"), std::string::npos) << text;
}

TEST(RenderMemText, NamesThatAreNotUtf8AreWrittenWithReplacementCharacters) {
  MemReport r = SampleReport();
  r.comm = "srv\xFF";
  const std::string text = RenderMemText(r);
  EXPECT_TRUE(text.starts_with("pid 4242 (srv\xEF\xBF\xBD), ")) << text;
}

TEST(RenderMemJson, CarriesMetricsMemStatsAndProcessFigures) {
  MemReport r = SampleReport();
  r.stats.metrics.push_back(
      {.name = "/gc/cpu/fraction:float", .kind = GoMetric::Kind::kFloat64, .u = 0, .f = 0.25});
  r.stats.mem.pause_ns[3] = 777;
  r.stats.mem.by_size[1] = {.size = 8, .mallocs = 10, .frees = 4};
  const nlohmann::json j = nlohmann::json::parse(RenderMemJson(r));
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["go_version"], "go1.26.8");
  EXPECT_EQ(j["core"], nullptr);
  EXPECT_EQ(j["metrics"]["/memory/classes/total:bytes"], 64 * kReportMiB);
  EXPECT_EQ(j["metrics"]["/gc/gomemlimit:bytes"], uint64_t{INT64_MAX});
  EXPECT_EQ(j["metrics"]["/gc/cpu/fraction:float"], 0.25);
  EXPECT_EQ(j["metrics"].size(), r.stats.metrics.size());
  EXPECT_EQ(j["memstats"]["Sys"], 64 * kReportMiB);
  EXPECT_EQ(j["memstats"]["NumGC"], 7);
  EXPECT_EQ(j["memstats"]["PauseNs"].size(), 256u);
  EXPECT_EQ(j["memstats"]["PauseNs"][3], 777);
  EXPECT_EQ(j["memstats"]["BySize"].size(), 61u);
  EXPECT_EQ(j["memstats"]["BySize"][1]["Mallocs"], 10);
  EXPECT_EQ(j["memstats"]["EnableGC"], true);
  EXPECT_EQ(j["process"]["rss_anon_bytes"], 160 * kReportMiB);
  EXPECT_EQ(j["not_managed_by_go_bytes"], 104 * kReportMiB);
  EXPECT_EQ(j["cgroup"]["limit_bytes"], 512 * kReportMiB);
  EXPECT_EQ(j["num_goroutine"], 5);
  EXPECT_EQ(j["gomaxprocs"], 2);
  r.process.reset();
  r.cgroup.reset();
  const nlohmann::json k = nlohmann::json::parse(RenderMemJson(r));
  EXPECT_EQ(k["process"], nullptr);
  EXPECT_EQ(k["not_managed_by_go_bytes"], nullptr);
  EXPECT_EQ(k["cgroup"], nullptr);
}

}  // namespace
}  // namespace goheap2pprof
