#include "agent/go_metrics_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include "agent/serve_metrics.h"

namespace goheap2pprof {
namespace {

// runtime/metrics' descriptions (runtime/metrics/description.go, go1.26.8)
// of the metrics written here, which client_golang's HELP repeats, followed
// by " Sourced from <name>.".
struct RuntimeMetricHelp {
  std::string_view name;
  std::string_view description;
};
constexpr RuntimeMetricHelp kRuntimeMetricHelp[] = {
    {"/gc/gogc:percent",
     "Heap size target percentage configured by the user, otherwise 100. This value is set by "
     "the GOGC environment variable, and the runtime/debug.SetGCPercent function."},
    {"/gc/gomemlimit:bytes",
     "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set "
     "by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function."},
    {"/sched/gomaxprocs:threads",
     "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can "
     "execute user-level Go code simultaneously."},
    {"/memory/classes/heap/free:bytes",
     "Memory that is completely free and eligible to be returned to the underlying system, but "
     "has not been. This metric is the runtime's estimate of free address space that is backed "
     "by physical memory."},
    {"/memory/classes/heap/objects:bytes",
     "Memory occupied by live objects and dead objects that have not yet been marked free by the "
     "garbage collector."},
    {"/memory/classes/heap/released:bytes",
     "Memory that is completely free and has been returned to the underlying system. This metric "
     "is the runtime's estimate of free address space that is still mapped into the process, but "
     "is not backed by physical memory."},
    {"/memory/classes/heap/stacks:bytes",
     "Memory allocated from the heap that is reserved for stack space, whether or not it is "
     "currently in-use. Currently, this represents all stack memory for goroutines. It also "
     "includes all OS thread stacks in non-cgo programs. Note that stacks may be allocated "
     "differently in the future, and this may change."},
    {"/memory/classes/heap/unused:bytes",
     "Memory that is reserved for heap objects but is not currently used to hold heap objects."},
    {"/memory/classes/metadata/mcache/free:bytes",
     "Memory that is reserved for runtime mcache structures, but not in-use."},
    {"/memory/classes/metadata/mcache/inuse:bytes",
     "Memory that is occupied by runtime mcache structures that are currently being used."},
    {"/memory/classes/metadata/mspan/free:bytes",
     "Memory that is reserved for runtime mspan structures, but not in-use."},
    {"/memory/classes/metadata/mspan/inuse:bytes",
     "Memory that is occupied by runtime mspan structures that are currently being used."},
    {"/memory/classes/metadata/other:bytes",
     "Memory that is reserved for or used to hold runtime metadata."},
    {"/memory/classes/os-stacks:bytes",
     "Stack memory allocated by the underlying operating system. In non-cgo programs this metric "
     "is currently zero. This may change in the future.In cgo programs this metric includes OS "
     "thread stacks allocated directly from the OS. Currently, this only accounts for one stack "
     "in c-shared and c-archive build modes, and other sources of stacks from the OS are not "
     "measured. This too may change in the future."},
    {"/memory/classes/other:bytes",
     "Memory used by execution trace buffers, structures for debugging the runtime, finalizer and "
     "profiler specials, and more."},
    {"/memory/classes/profiling/buckets:bytes",
     "Memory that is used by the stack trace hash map used for profiling."},
    {"/memory/classes/total:bytes",
     "All memory mapped by the Go runtime into the current process as read-write. Note that this "
     "does not include memory mapped by code called via cgo or via the syscall package. Sum of "
     "all metrics in /memory/classes."},
};

std::string HelpOfRuntimeMetric(std::string_view name) {
  std::string help;
  for (const RuntimeMetricHelp& h : kRuntimeMetricHelp) {
    if (h.name == name) help = std::string(h.description) + " ";
  }
  // A class a newer Go adds: named, without the runtime's words for it.
  return help + "Sourced from " + std::string(name) + ".";
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
// order; the HELP texts are its own, typos included, so that a series read
// here and one a process exports itself carry the same metadata.
const std::vector<MemstatsMetric>& MemstatsMetrics() {
  static const std::vector<MemstatsMetric> kMetrics = {
      {"alloc_bytes",
       "Number of bytes allocated in heap and currently in use. Equals to "
       "/memory/classes/heap/objects:bytes.",
       false, [](const Lookup& l) { return l(kObjects); }},
      {"alloc_bytes_total",
       "Total number of bytes allocated in heap until now, even if released already. Equals to "
       "/gc/heap/allocs:bytes.",
       true, [](const Lookup& l) { return l("/gc/heap/allocs:bytes"); }},
      {"sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.",
       false, [](const Lookup& l) { return l("/memory/classes/total:bytes"); }},
      {"mallocs_total",
       "Total number of heap objects allocated, both live and gc-ed. Semantically a counter "
       "version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + "
       "/gc/heap/tiny/allocs:objects.",
       true, [](const Lookup& l) { return l("/gc/heap/allocs:objects") + l(kTiny); }},
      {"frees_total",
       "Total number of heap objects frees. Equals to /gc/heap/frees:objects + "
       "/gc/heap/tiny/allocs:objects.",
       true, [](const Lookup& l) { return l("/gc/heap/frees:objects") + l(kTiny); }},
      {"heap_alloc_bytes",
       "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. "
       "Equals to /memory/classes/heap/objects:bytes.",
       false, [](const Lookup& l) { return l(kObjects); }},
      {"heap_sys_bytes",
       "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + "
       "/memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + "
       "/memory/classes/heap/free:bytes.",
       false, [](const Lookup& l) { return l(kObjects) + l(kUnused) + l(kReleased) + l(kFree); }},
      {"heap_idle_bytes",
       "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + "
       "/memory/classes/heap/free:bytes.",
       false, [](const Lookup& l) { return l(kReleased) + l(kFree); }},
      {"heap_inuse_bytes",
       "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + "
       "/memory/classes/heap/unused:bytes",
       false, [](const Lookup& l) { return l(kObjects) + l(kUnused); }},
      {"heap_released_bytes",
       "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", false,
       [](const Lookup& l) { return l(kReleased); }},
      {"heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.",
       false, [](const Lookup& l) { return l("/gc/heap/objects:objects"); }},
      {"stack_inuse_bytes",
       "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals "
       "to /memory/classes/heap/stacks:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/heap/stacks:bytes"); }},
      {"stack_sys_bytes",
       "Number of bytes obtained from system for stack allocator. Equals to "
       "/memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.",
       false,
       [](const Lookup& l) {
         return l("/memory/classes/heap/stacks:bytes") + l("/memory/classes/os-stacks:bytes");
       }},
      {"mspan_inuse_bytes",
       "Number of bytes in use by mspan structures. Equals to "
       "/memory/classes/metadata/mspan/inuse:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/metadata/mspan/inuse:bytes"); }},
      {"mspan_sys_bytes",
       "Number of bytes used for mspan structures obtained from system. Equals to "
       "/memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.",
       false,
       [](const Lookup& l) {
         return l("/memory/classes/metadata/mspan/inuse:bytes") +
                l("/memory/classes/metadata/mspan/free:bytes");
       }},
      {"mcache_inuse_bytes",
       "Number of bytes in use by mcache structures. Equals to "
       "/memory/classes/metadata/mcache/inuse:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/metadata/mcache/inuse:bytes"); }},
      {"mcache_sys_bytes",
       "Number of bytes used for mcache structures obtained from system. Equals to "
       "/memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.",
       false,
       [](const Lookup& l) {
         return l("/memory/classes/metadata/mcache/inuse:bytes") +
                l("/memory/classes/metadata/mcache/free:bytes");
       }},
      {"buck_hash_sys_bytes",
       "Number of bytes used by the profiling bucket hash table. Equals to "
       "/memory/classes/profiling/buckets:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/profiling/buckets:bytes"); }},
      {"gc_sys_bytes",
       "Number of bytes used for garbage collection system metadata. Equals to "
       "/memory/classes/metadata/other:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/metadata/other:bytes"); }},
      {"other_sys_bytes",
       "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.",
       false, [](const Lookup& l) { return l("/memory/classes/other:bytes"); }},
      {"next_gc_bytes",
       "Number of heap bytes when next garbage collection will take place. Equals to "
       "/gc/heap/goal:bytes.",
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
           "A summary of the wall-time pause (stop-the-world) duration in garbage collection "
           "cycles.",
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

std::string PrometheusFloat(double v) {
  if (v == 0) return "0";
  if (v == 1) return "1";
  if (v == -1) return "-1";
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // The shortest round-trip digits, as "d.ddde±XX" (two exponent digits at
  // least, as Go writes them).
  char buf[64];
  const std::to_chars_result r =
      std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);
  const size_t e = sci.find('e');
  const int exp = std::stoi(sci.substr(e + 1));
  if (exp < -4 || exp >= 6) return sci;
  const bool negative = sci[0] == '-';
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c >= '0' && c <= '9') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exp < 0) {
    out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else if (digits.size() <= static_cast<size_t>(exp) + 1) {
    out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0');
  } else {
    out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
           digits.substr(static_cast<size_t>(exp) + 1);
  }
  return out;
}

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
  families.push_back(Single("go_goroutines", "gauge", "Number of goroutines that currently exist.",
                            static_cast<double>(stats.num_goroutine)));
  families.push_back(Single("go_threads", "gauge", "Number of OS threads created.",
                            static_cast<double>(stats.threads)));
  families.push_back(Single("go_memstats_last_gc_time_seconds", "gauge",
                            "Number of seconds since 1970 of last garbage collection.",
                            static_cast<double>(static_cast<int64_t>(stats.mem.last_gc)) / 1e9));
  Family info{"go_info", "gauge", "Information about the Go environment.", {}};
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
    out += "# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + " ";
    out += f.type;
    out += "\n" + f.samples;
  }
  return out;
}

}  // namespace goheap2pprof
