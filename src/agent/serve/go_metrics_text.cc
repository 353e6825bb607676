#include "agent/serve/go_metrics_text.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "agent/common/prometheus_text.h"

namespace goheap2pprof {
namespace {

// Our own one-line descriptions of the runtime/metrics values written as
// gauges (the names and units are the interface; the words are ours),
// without a final period: the metric's path follows.
struct RuntimeMetricHelp {
  std::string_view name;
  std::string_view description;
};
constexpr RuntimeMetricHelp kRuntimeMetricHelp[] = {
    {"/gc/gogc:percent",
     "GOGC in effect, in percent (100 unless changed); GOGC=off reads as 2^64-1, the runtime's -1 "
     "taken as unsigned"},
    {"/gc/gomemlimit:bytes", "Soft memory limit in effect, in bytes; 2^63-1 means no limit"},
    {"/sched/gomaxprocs:threads", "GOMAXPROCS: how many threads may run Go code at the same time"},
    {"/memory/classes/heap/free:bytes",
     "Idle heap pages still backed by physical memory, which the runtime could give back to the "
     "OS"},
    {"/memory/classes/heap/objects:bytes",
     "Heap bytes in objects: live ones and dead ones the sweeper has not reclaimed yet"},
    {"/memory/classes/heap/released:bytes",
     "Idle heap pages already given back to the OS: mapped, but without physical memory"},
    {"/memory/classes/heap/stacks:bytes", "Heap spans set aside for stacks, used or not"},
    {"/memory/classes/heap/unused:bytes",
     "Free slots in heap spans that hold objects (fragmentation of in-use spans)"},
    {"/memory/classes/metadata/mcache/free:bytes",
     "Memory reserved for per-P allocation caches (mcache) but holding none"},
    {"/memory/classes/metadata/mcache/inuse:bytes", "Per-P allocation caches (mcache) in use"},
    {"/memory/classes/metadata/mspan/free:bytes",
     "Memory reserved for span descriptors (mspan) but holding none"},
    {"/memory/classes/metadata/mspan/inuse:bytes", "Span descriptors (mspan) in use"},
    {"/memory/classes/metadata/other:bytes",
     "Runtime metadata outside mspan and mcache, mostly the garbage collector's"},
    {"/memory/classes/os-stacks:bytes",
     "Thread stacks the OS allocated rather than the Go heap; zero in a program without cgo"},
    {"/memory/classes/other:bytes",
     "Runtime memory that fits no other class, such as execution-trace buffers"},
    {"/memory/classes/profiling/buckets:bytes", "The profilers' table of stack-trace buckets"},
    {"/memory/classes/total:bytes",
     "All memory the Go runtime has mapped read-write; the other classes add up to it"},
};

std::string HelpOfRuntimeMetric(std::string_view name) {
  for (const RuntimeMetricHelp& h : kRuntimeMetricHelp) {
    if (h.name == name) {
      return std::string(h.description) + " (runtime/metrics " + std::string(name) + ").";
    }
  }
  // A class a newer Go adds: described by its name alone.
  return "Go runtime metric " + std::string(name) + ", as runtime/metrics reads it.";
}

constexpr std::string_view kObjects = "/memory/classes/heap/objects:bytes";
constexpr std::string_view kUnused = "/memory/classes/heap/unused:bytes";
constexpr std::string_view kReleased = "/memory/classes/heap/released:bytes";
constexpr std::string_view kFree = "/memory/classes/heap/free:bytes";
constexpr std::string_view kTiny = "/gc/heap/tiny/allocs:objects";
constexpr std::string_view kStacks = "/memory/classes/heap/stacks:bytes";
constexpr std::string_view kMspanInuse = "/memory/classes/metadata/mspan/inuse:bytes";
constexpr std::string_view kMcacheInuse = "/memory/classes/metadata/mcache/inuse:bytes";

// A go_memstats_* family and the runtime/metrics values whose sum it is, as
// client_golang's memStatsFromRM reads them: each 0 when the target's Go
// lacks it (its lookupOrZero), added in uint64 arithmetic as the
// collector's runtime.MemStats fields are.
struct MemstatsMetric {
  MetricFamily family;
  std::array<std::string_view, 4> sum_of;
};

// client_golang's goRuntimeMemStats over memStatsFromRM (v1.25.0), in its
// order and with its names and types (the interface dashboards query); the
// HELP texts are our own words (the project copies no one's prose).
constexpr MemstatsMetric kMemstatsMetrics[] = {
    {{"go_memstats_alloc_bytes", "gauge",
      "Heap bytes in objects not yet reclaimed (live, or dead and unswept); from "
      "/memory/classes/heap/objects:bytes."},
     {kObjects}},
    {{"go_memstats_alloc_bytes_total", "counter",
      "Cumulative heap bytes allocated since the process started, freed ones included; from "
      "/gc/heap/allocs:bytes."},
     {"/gc/heap/allocs:bytes"}},
    {{"go_memstats_sys_bytes", "gauge",
      "All memory the Go runtime has mapped from the OS, every class together; from "
      "/memory/classes/total:bytes."},
     {"/memory/classes/total:bytes"}},
    {{"go_memstats_mallocs_total", "counter",
      "Cumulative heap objects allocated, tiny allocations included; /gc/heap/allocs:objects plus "
      "/gc/heap/tiny/allocs:objects."},
     {"/gc/heap/allocs:objects", kTiny}},
    {{"go_memstats_frees_total", "counter",
      "Cumulative heap objects reclaimed, with tiny allocations counted as reclaimed; "
      "/gc/heap/frees:objects plus /gc/heap/tiny/allocs:objects."},
     {"/gc/heap/frees:objects", kTiny}},
    {{"go_memstats_heap_alloc_bytes", "gauge",
      "Heap bytes in objects not yet reclaimed, the same value as go_memstats_alloc_bytes; from "
      "/memory/classes/heap/objects:bytes."},
     {kObjects}},
    {{"go_memstats_heap_sys_bytes", "gauge",
      "Heap memory the runtime holds, in use, idle or given back to the OS; sum of the heap "
      "objects, unused, released and free classes."},
     {kObjects, kUnused, kReleased, kFree}},
    {{"go_memstats_heap_idle_bytes", "gauge",
      "Heap memory in spans without objects, kept or given back to the OS; sum of the heap "
      "released and free classes."},
     {kReleased, kFree}},
    {{"go_memstats_heap_inuse_bytes", "gauge",
      "Heap memory in spans holding objects, their free slots included; sum of the heap objects "
      "and unused classes."},
     {kObjects, kUnused}},
    {{"go_memstats_heap_released_bytes", "gauge",
      "Idle heap memory given back to the OS; from /memory/classes/heap/released:bytes."},
     {kReleased}},
    {{"go_memstats_heap_objects", "gauge",
      "Heap objects not yet reclaimed; from /gc/heap/objects:objects."},
     {"/gc/heap/objects:objects"}},
    {{"go_memstats_stack_inuse_bytes", "gauge",
      "Heap spans set aside for stacks; from /memory/classes/heap/stacks:bytes."},
     {kStacks}},
    {{"go_memstats_stack_sys_bytes", "gauge",
      "Stack memory from the heap and from the OS together; /memory/classes/heap/stacks:bytes "
      "plus /memory/classes/os-stacks:bytes."},
     {kStacks, "/memory/classes/os-stacks:bytes"}},
    {{"go_memstats_mspan_inuse_bytes", "gauge",
      "Span descriptors (mspan) in use; from /memory/classes/metadata/mspan/inuse:bytes."},
     {kMspanInuse}},
    {{"go_memstats_mspan_sys_bytes", "gauge",
      "Memory for span descriptors (mspan), used or reserved; sum of the mspan inuse and free "
      "classes."},
     {kMspanInuse, "/memory/classes/metadata/mspan/free:bytes"}},
    {{"go_memstats_mcache_inuse_bytes", "gauge",
      "Per-P allocation caches (mcache) in use; from /memory/classes/metadata/mcache/inuse:bytes."},
     {kMcacheInuse}},
    {{"go_memstats_mcache_sys_bytes", "gauge",
      "Memory for per-P allocation caches (mcache), used or reserved; sum of the mcache inuse and "
      "free classes."},
     {kMcacheInuse, "/memory/classes/metadata/mcache/free:bytes"}},
    {{"go_memstats_buck_hash_sys_bytes", "gauge",
      "The profilers' table of stack-trace buckets; from /memory/classes/profiling/buckets:bytes."},
     {"/memory/classes/profiling/buckets:bytes"}},
    {{"go_memstats_gc_sys_bytes", "gauge",
      "Runtime metadata outside mspan and mcache, mostly the garbage collector's; from "
      "/memory/classes/metadata/other:bytes."},
     {"/memory/classes/metadata/other:bytes"}},
    {{"go_memstats_other_sys_bytes", "gauge",
      "Runtime memory that fits no other class; from /memory/classes/other:bytes."},
     {"/memory/classes/other:bytes"}},
    {{"go_memstats_next_gc_bytes", "gauge",
      "Heap size the garbage collector aims to end its next cycle at; from /gc/heap/goal:bytes."},
     {"/gc/heap/goal:bytes"}},
};

// The families every exposition has besides go_memstats_*.
constexpr MetricFamily kGcDuration{
    "go_gc_duration_seconds", "summary",
    "Stop-the-world pauses of the garbage collector, in seconds: quantiles of the last 256 "
    "pauses at most, sum and count over all cycles."};
constexpr MetricFamily kGoroutines{"go_goroutines", "gauge",
                                   "Goroutines the process has when read."};
constexpr MetricFamily kThreads{"go_threads", "gauge", "OS threads the Go runtime has created."};
constexpr MetricFamily kLastGc{
    "go_memstats_last_gc_time_seconds", "gauge",
    "End of the latest garbage collection, in Unix seconds; 0 before the first."};
constexpr MetricFamily kInfo{"go_info", "gauge",
                             "Always 1; the label names the Go version the process runs."};

void WriteMemstats(const GoRuntimeStats& stats, PrometheusWriter& w) {
  for (const MemstatsMetric& m : kMemstatsMetrics) {
    uint64_t sum = 0;
    for (std::string_view name : m.sum_of) {
      if (!name.empty()) sum += stats.Uint(name).value_or(0);
    }
    w.Family(m.family);
    w.Sample(static_cast<double>(sum));
  }
}

void WriteGcDurationSummary(const MemStats& mem, PrometheusWriter& w) {
  w.Family(kGcDuration);
  const std::array<uint64_t, 5> q = GcPauseQuantiles(mem);
  constexpr std::array<std::string_view, 5> kLabels = {"0", "0.25", "0.5", "0.75", "1"};
  for (size_t i = 0; i < q.size(); ++i) {
    w.Sample({{"quantile", kLabels[i]}}, GoDurationSeconds(static_cast<int64_t>(q[i])));
  }
  w.Sample("_sum", {}, GoDurationSeconds(static_cast<int64_t>(mem.pause_total_ns)));
  w.Sample("_count", {}, static_cast<double>(mem.num_gc));
}

// The runtime/metrics gauges: the collector's default three, and every
// memory class.
void WriteRuntimeMetricGauges(const GoRuntimeStats& stats, PrometheusWriter& w) {
  std::set<std::string> seen;
  for (const GoMetric& m : stats.metrics) {
    const bool wanted = m.name.starts_with("/memory/classes/") || m.name == "/gc/gogc:percent" ||
                        m.name == "/gc/gomemlimit:bytes" || m.name == "/sched/gomaxprocs:threads";
    if (!wanted) continue;
    std::optional<std::string> name = PrometheusNameOfRuntimeMetric(m.name, false);
    // A worker's reply is bounded but not trusted: one family per name.
    if (!name || !seen.insert(*name).second) continue;
    const std::string help = HelpOfRuntimeMetric(m.name);
    w.Family({*name, "gauge", help});
    w.Sample(m.kind == GoMetric::Kind::kUint64 ? static_cast<double>(m.u) : m.f);
  }
}

bool ValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

}  // namespace

double GoDurationSeconds(int64_t ns) {
  const int64_t sec = ns / 1000000000;
  const int64_t nsec = ns % 1000000000;
  return static_cast<double>(sec) + static_cast<double>(nsec) / 1e9;
}

std::array<uint64_t, 5> GcPauseQuantiles(const MemStats& mem) {
  std::array<uint64_t, 5> q{};
  const size_t n = std::min<size_t>(mem.num_gc, mem.pause_ns.size());
  if (n == 0) return q;
  std::vector<uint64_t> sorted;
  sorted.reserve(n);
  // The last n pauses of the ring, most recent first as readGCStats_m
  // gives them (the order does not matter once sorted).
  for (size_t i = 0; i < n; ++i) {
    sorted.push_back(mem.pause_ns[(mem.num_gc - 1 - i) % mem.pause_ns.size()]);
  }
  std::sort(sorted.begin(), sorted.end());
  // Go's Duration is int64: pauses above 2^63 ns (only from a hostile
  // reply) sort as negative there; they cannot come from a runtime.
  for (size_t i = 0; i < 4; ++i) q[i] = sorted[n * i / 4];
  q[4] = sorted[n - 1];
  return q;
}

std::optional<std::string> PrometheusNameOfRuntimeMetric(std::string_view name, bool cumulative) {
  const size_t colon = name.find(':');
  if (colon == std::string_view::npos || name.empty() || name[0] != '/') return std::nullopt;
  const std::string_view key = name.substr(1, colon - 1);
  std::string unit(name.substr(colon + 1));
  const size_t slash = key.rfind('/');
  // Go's path.Dir of a key without a slash is ".", which makes no valid name.
  if (slash == std::string_view::npos) return std::nullopt;
  std::string subsystem(key.substr(0, slash));
  std::string base(key.substr(slash + 1));
  ReplaceAll(subsystem, "/", "_");
  ReplaceAll(subsystem, "-", "_");
  ReplaceAll(unit, "-", "_");
  ReplaceAll(unit, "*", "_");
  ReplaceAll(unit, "/", "_per_");
  ReplaceAll(base, "-", "_");
  std::string out = "go_" + subsystem + "_" + base + "_" + unit;
  if (cumulative) out += "_total";
  if (!ValidMetricName(out)) return std::nullopt;
  return out;
}

std::string GoCollectorText(const GoRuntimeStats& stats) {
  PrometheusWriter w;
  WriteGcDurationSummary(stats.mem, w);
  w.Family(kGoroutines);
  w.Sample(static_cast<double>(stats.num_goroutine));
  w.Family(kThreads);
  w.Sample(static_cast<double>(stats.threads));
  w.Family(kLastGc);
  w.Sample(static_cast<double>(static_cast<int64_t>(stats.mem.last_gc)) / 1e9);
  w.Family(kInfo);
  w.Sample({{"version", stats.go_version}}, 1.0);
  WriteMemstats(stats, w);
  WriteRuntimeMetricGauges(stats, w);
  return std::move(w).SortedText();
}

std::string OtelGoMetricsText(const GoRuntimeStats& stats) {
  PrometheusWriter w;
  constexpr std::string_view kScope = "goheap2pprof";
  constexpr std::string_view kVersion = GOHEAP2PPROF_VERSION;
  for (const OtelGoMetric& m : OtelGoMetrics(stats)) {
    const std::string name = OtelPrometheusName(m);
    const std::string help = std::string(m.description) + " (OpenTelemetry " + std::string(m.name) +
                             ", unit " + std::string(m.unit) + ").";
    w.Family({name, m.instrument == OtelInstrument::kCounter ? "counter" : "gauge", help});
    for (const OtelGoPoint& p : m.points) {
      if (p.attribute_key.empty()) {
        w.Sample({{"otel_scope_name", kScope}, {"otel_scope_version", kVersion}}, p.value);
        continue;
      }
      const std::string label = OtelPrometheusLabel(p.attribute_key);
      w.Sample({{label, p.attribute_value},
                {"otel_scope_name", kScope},
                {"otel_scope_version", kVersion}},
               p.value);
    }
  }
  return std::move(w).SortedText();
}

}  // namespace goheap2pprof
