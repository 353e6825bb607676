#include "agent/common/otel_go_metrics.h"

#include <limits>
#include <optional>

namespace goheap2pprof {
namespace {

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

constexpr std::string_view kTotal = "/memory/classes/total:bytes";
constexpr std::string_view kReleased = "/memory/classes/heap/released:bytes";
constexpr std::string_view kStacks = "/memory/classes/heap/stacks:bytes";

// A metric of one point, the value of one runtime/metrics metric.
struct SimpleMetric {
  std::string_view name, unit, description;
  OtelInstrument instrument;
  std::string_view source;
};

// In the conventions' order, after go.memory.used.
constexpr SimpleMetric kSimpleMetrics[] = {
    {"go.memory.limit", "By", "The soft memory limit (GOMEMLIMIT) in effect",
     OtelInstrument::kUpDownCounter, "/gc/gomemlimit:bytes"},
    {"go.memory.allocated", "By", "Heap bytes allocated since the process started",
     OtelInstrument::kCounter, "/gc/heap/allocs:bytes"},
    {"go.memory.allocations", "{allocation}",
     "Heap objects allocated since the process started (tiny allocations apart)",
     OtelInstrument::kCounter, "/gc/heap/allocs:objects"},
    {"go.memory.gc.goal", "By", "Heap size the garbage collector aims to end its cycle at",
     OtelInstrument::kUpDownCounter, "/gc/heap/goal:bytes"},
    {"go.memory.gc.cycles", "{gc_cycle}", "Garbage collections completed", OtelInstrument::kCounter,
     "/gc/cycles/total:gc-cycles"},
    {"go.goroutine.count", "{goroutine}",
     "Goroutines that exist (system goroutines included from Go 1.26)",
     OtelInstrument::kUpDownCounter, "/sched/goroutines:goroutines"},
    {"go.processor.limit", "{thread}", "GOMAXPROCS: threads that may run Go code at once",
     OtelInstrument::kUpDownCounter, "/sched/gomaxprocs:threads"},
    // GOGC=off reads as 2^64-1 (the runtime's -1 as unsigned): above
    // INT64_MAX, so left out.
    {"go.config.gogc", "%", "GOGC in effect, in percent", OtelInstrument::kUpDownCounter,
     "/gc/gogc:percent"},
};

// The value of row's source; nothing when the target's Go lacks it, or the
// conventions leave it out.
std::optional<uint64_t> SourceValue(const SimpleMetric& row, const GoRuntimeStats& stats) {
  std::optional<uint64_t> v = stats.Uint(row.source);
  // No limit reads as MaxInt64, which the conventions leave out.
  if (row.source == "/gc/gomemlimit:bytes" && v && *v >= kInt64Max) return std::nullopt;
  // Go 1.18 has no /sched/gomaxprocs:threads; the variable it would read is
  // the one the reader reads for GOMAXPROCS.
  if (row.source == "/sched/gomaxprocs:threads" && !v && stats.gomaxprocs > 0) {
    return static_cast<uint64_t>(stats.gomaxprocs);
  }
  return v;
}

// go.memory.used by go.memory.type: the stack class, and the rest of what
// the runtime has mapped and not given back (total minus released).
void AddMemoryUsed(std::vector<OtelGoMetric>& out, const GoRuntimeStats& stats) {
  const std::optional<uint64_t> total = stats.Uint(kTotal);
  const std::optional<uint64_t> released = stats.Uint(kReleased);
  const std::optional<uint64_t> stacks = stats.Uint(kStacks);
  if (!total || !released || !stacks) return;
  // In a consistent read, released and stacks are parts of total.
  if (*released > *total || *stacks > *total - *released || *total > kInt64Max) return;
  OtelGoMetric m{"go.memory.used",
                 "By",
                 "Memory the Go runtime has mapped and not returned to the OS, by type",
                 OtelInstrument::kUpDownCounter,
                 {}};
  m.points.push_back({"go.memory.type", "stack", static_cast<int64_t>(*stacks)});
  m.points.push_back(
      {"go.memory.type", "other", static_cast<int64_t>(*total - *released - *stacks)});
  out.push_back(std::move(m));
}

}  // namespace

std::vector<OtelGoMetric> OtelGoMetrics(const GoRuntimeStats& stats) {
  std::vector<OtelGoMetric> out;
  AddMemoryUsed(out, stats);
  for (const SimpleMetric& row : kSimpleMetrics) {
    const std::optional<uint64_t> v = SourceValue(row, stats);
    // A value above INT64_MAX would wrap: left out.
    if (!v || *v > kInt64Max) continue;
    out.push_back({row.name, row.unit, row.description, row.instrument, {}});
    out.back().points.push_back({{}, {}, static_cast<int64_t>(*v)});
  }
  return out;
}

std::string OtelPrometheusLabel(std::string_view key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    out += ok ? c : '_';
  }
  return out;
}

std::string OtelPrometheusName(const OtelGoMetric& metric) {
  std::string out = OtelPrometheusLabel(metric.name);
  std::string_view suffix;
  if (metric.unit == "By") suffix = "bytes";
  if (metric.unit == "%") suffix = "percent";
  if (metric.unit == "s") suffix = "seconds";
  // An annotation ("{goroutine}") is no unit: it adds nothing.
  if (!suffix.empty() && !out.ends_with("_" + std::string(suffix))) {
    out += "_" + std::string(suffix);
  }
  if (metric.instrument == OtelInstrument::kCounter) out += "_total";
  return out;
}

}  // namespace goheap2pprof
