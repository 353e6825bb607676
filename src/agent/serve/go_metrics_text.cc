#include "agent/serve/go_metrics_text.h"

#include <algorithm>
#include <cmath>
#include <functional>
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

// The runtime/metrics values client_golang's memStatsFromRM reads, zero
// when the target's Go lacks one (its lookupOrZero).
class Lookup {
 public:
  explicit Lookup(const GoRuntimeStats& stats) : stats_(stats) {}
  uint64_t operator()(std::string_view name) const { return stats_.Uint(name).value_or(0); }

 private:
  const GoRuntimeStats& stats_;
};

struct MemstatsMetric {
  std::string_view name;  // after "go_memstats_"
  std::string_view help;
  bool counter;
  // In uint64 arithmetic, as the collector's runtime.MemStats fields are.
  std::function<uint64_t(const Lookup&)> value;
};

constexpr std::string_view kObjects = "/memory/classes/heap/objects:bytes";
constexpr std::string_view kUnused = "/memory/classes/heap/unused:bytes";
constexpr std::string_view kReleased = "/memory/classes/heap/released:bytes";
constexpr std::string_view kFree = "/memory/classes/heap/free:bytes";
constexpr std::string_view kTiny = "/gc/heap/tiny/allocs:objects";

// client_golang's goRuntimeMemStats over memStatsFromRM (v1.25.0), in its
// order and with its names and types (the interface dashboards query); the
// HELP texts are our own words (the project copies no one's prose).
const std::vector<MemstatsMetric>& MemstatsMetrics() {
  static const std::vector<MemstatsMetric> kMetrics = {
      {"alloc_bytes",
       "Heap bytes in objects not yet reclaimed (live, or dead and unswept); from "
       "/memory/classes/heap/objects:bytes.",
       false, [](const Lookup& l) { return l(kObjects); }},
      {"alloc_bytes_total",
       "Cumulative heap bytes allocated since the process started, freed ones included; from "
       "/gc/heap/allocs:bytes.",
       true, [](const Lookup& l) { return l("/gc/heap/allocs:bytes"); }},
      {"sys_bytes",
       "All memory the Go runtime has mapped from the OS, every class together; from "
       "/memory/classes/total:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/total:bytes"); }},
      {"mallocs_total",
       "Cumulative heap objects allocated, tiny allocations included; /gc/heap/allocs:objects plus "
       "/gc/heap/tiny/allocs:objects.",
       true, [](const Lookup& l) { return l("/gc/heap/allocs:objects") + l(kTiny); }},
      {"frees_total",
       "Cumulative heap objects reclaimed, with tiny allocations counted as reclaimed; "
       "/gc/heap/frees:objects plus /gc/heap/tiny/allocs:objects.",
       true, [](const Lookup& l) { return l("/gc/heap/frees:objects") + l(kTiny); }},
      {"heap_alloc_bytes",
       "Heap bytes in objects not yet reclaimed, the same value as go_memstats_alloc_bytes; from "
       "/memory/classes/heap/objects:bytes.",
       false, [](const Lookup& l) { return l(kObjects); }},
      {"heap_sys_bytes",
       "Heap memory the runtime holds, in use, idle or given back to the OS; sum of the heap "
       "objects, unused, released and free classes.",
       false, [](const Lookup& l) { return l(kObjects) + l(kUnused) + l(kReleased) + l(kFree); }},
      {"heap_idle_bytes",
       "Heap memory in spans without objects, kept or given back to the OS; sum of the heap "
       "released and free classes.",
       false, [](const Lookup& l) { return l(kReleased) + l(kFree); }},
      {"heap_inuse_bytes",
       "Heap memory in spans holding objects, their free slots included; sum of the heap objects "
       "and unused classes.",
       false, [](const Lookup& l) { return l(kObjects) + l(kUnused); }},
      {"heap_released_bytes",
       "Idle heap memory given back to the OS; from /memory/classes/heap/released:bytes.", false,
       [](const Lookup& l) { return l(kReleased); }},
      {"heap_objects", "Heap objects not yet reclaimed; from /gc/heap/objects:objects.", false,
       [](const Lookup& l) { return l("/gc/heap/objects:objects"); }},
      {"stack_inuse_bytes",
       "Heap spans set aside for stacks; from /memory/classes/heap/stacks:bytes.", false,
       [](const Lookup& l) { return l("/memory/classes/heap/stacks:bytes"); }},
      {"stack_sys_bytes",
       "Stack memory from the heap and from the OS together; /memory/classes/heap/stacks:bytes "
       "plus /memory/classes/os-stacks:bytes.",
       false,
       [](const Lookup& l) {
         return l("/memory/classes/heap/stacks:bytes") + l("/memory/classes/os-stacks:bytes");
       }},
      {"mspan_inuse_bytes",
       "Span descriptors (mspan) in use; from /memory/classes/metadata/mspan/inuse:bytes.", false,
       [](const Lookup& l) { return l("/memory/classes/metadata/mspan/inuse:bytes"); }},
      {"mspan_sys_bytes",
       "Memory for span descriptors (mspan), used or reserved; sum of the mspan inuse and free "
       "classes.",
       false,
       [](const Lookup& l) {
         return l("/memory/classes/metadata/mspan/inuse:bytes") +
                l("/memory/classes/metadata/mspan/free:bytes");
       }},
      {"mcache_inuse_bytes",
       "Per-P allocation caches (mcache) in use; from /memory/classes/metadata/mcache/inuse:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/metadata/mcache/inuse:bytes"); }},
      {"mcache_sys_bytes",
       "Memory for per-P allocation caches (mcache), used or reserved; sum of the mcache inuse and "
       "free classes.",
       false,
       [](const Lookup& l) {
         return l("/memory/classes/metadata/mcache/inuse:bytes") +
                l("/memory/classes/metadata/mcache/free:bytes");
       }},
      {"buck_hash_sys_bytes",
       "The profilers' table of stack-trace buckets; from /memory/classes/profiling/buckets:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/profiling/buckets:bytes"); }},
      {"gc_sys_bytes",
       "Runtime metadata outside mspan and mcache, mostly the garbage collector's; from "
       "/memory/classes/metadata/other:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/metadata/other:bytes"); }},
      {"other_sys_bytes",
       "Runtime memory that fits no other class; from /memory/classes/other:bytes.", false,
       [](const Lookup& l) { return l("/memory/classes/other:bytes"); }},
      {"next_gc_bytes",
       "Heap size the garbage collector aims to end its next cycle at; from /gc/heap/goal:bytes.",
       false, [](const Lookup& l) { return l("/gc/heap/goal:bytes"); }},
  };
  return kMetrics;
}

struct Family {
  std::string name;
  std::string_view type;
  std::string help;
  std::string samples;  // complete lines
};

void AddSample(Family& f, std::string_view suffix, std::string_view labels, double v) {
  f.samples += f.name;
  f.samples += suffix;
  f.samples += labels;
  f.samples += ' ';
  f.samples += PrometheusFloat(v);
  f.samples += '\n';
}

Family Single(std::string name, std::string_view type, std::string help, double v) {
  Family f{std::move(name), type, std::move(help), {}};
  AddSample(f, "", "", v);
  return f;
}

Family GcDurationSummary(const MemStats& mem) {
  Family f{"go_gc_duration_seconds",
           "summary",
           "Stop-the-world pauses of the garbage collector, in seconds: quantiles of the last "
           "256 pauses at most, sum and count over all cycles.",
           {}};
  const std::array<uint64_t, 5> q = GcPauseQuantiles(mem);
  constexpr std::array<std::string_view, 5> kLabels = {"0", "0.25", "0.5", "0.75", "1"};
  for (size_t i = 0; i < q.size(); ++i) {
    AddSample(f, "", "{quantile=\"" + std::string(kLabels[i]) + "\"}",
              GoDurationSeconds(static_cast<int64_t>(q[i])));
  }
  AddSample(f, "_sum", "", GoDurationSeconds(static_cast<int64_t>(mem.pause_total_ns)));
  AddSample(f, "_count", "", static_cast<double>(mem.num_gc));
  return f;
}

// The runtime/metrics gauges: the collector's default three, and every
// memory class.
void AddRuntimeMetricGauges(const GoRuntimeStats& stats, std::vector<Family>& out) {
  std::set<std::string> seen;
  for (const GoMetric& m : stats.metrics) {
    const bool wanted = m.name.starts_with("/memory/classes/") || m.name == "/gc/gogc:percent" ||
                        m.name == "/gc/gomemlimit:bytes" || m.name == "/sched/gomaxprocs:threads";
    if (!wanted) continue;
    std::optional<std::string> name = PrometheusNameOfRuntimeMetric(m.name, false);
    // A worker's reply is bounded but not trusted: one family per name.
    if (!name || !seen.insert(*name).second) continue;
    const double v = m.kind == GoMetric::Kind::kUint64 ? static_cast<double>(m.u) : m.f;
    out.push_back(Single(*name, "gauge", HelpOfRuntimeMetric(m.name), v));
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
  std::vector<Family> families;
  families.push_back(GcDurationSummary(stats.mem));
  families.push_back(Single("go_goroutines", "gauge", "Goroutines the process has when read.",
                            static_cast<double>(stats.num_goroutine)));
  families.push_back(Single("go_threads", "gauge", "OS threads the Go runtime has created.",
                            static_cast<double>(stats.threads)));
  families.push_back(
      Single("go_memstats_last_gc_time_seconds", "gauge",
             "End of the latest garbage collection, in Unix seconds; 0 before the first.",
             static_cast<double>(static_cast<int64_t>(stats.mem.last_gc)) / 1e9));
  Family info{"go_info", "gauge", "Always 1; the label names the Go version the process runs.", {}};
  AddSample(info, "", "{version=\"" + PrometheusLabelValue(stats.go_version) + "\"}", 1);
  families.push_back(std::move(info));
  const Lookup lookup(stats);
  for (const MemstatsMetric& m : MemstatsMetrics()) {
    families.push_back(Single("go_memstats_" + std::string(m.name), m.counter ? "counter" : "gauge",
                              std::string(m.help), static_cast<double>(m.value(lookup))));
  }
  AddRuntimeMetricGauges(stats, families);
  std::stable_sort(families.begin(), families.end(),
                   [](const Family& a, const Family& b) { return a.name < b.name; });
  std::string out;
  for (const Family& f : families) {
    PrometheusFamily(out, f.name, f.type, f.help);
    out += f.samples;
  }
  return out;
}

}  // namespace goheap2pprof
