#include "agent/common/otel_go_metrics.h"

#include <limits>
#include <optional>

namespace goheap2pprof {
namespace {

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

constexpr std::string_view kTotal = "/memory/classes/total:bytes";
constexpr std::string_view kReleased = "/memory/classes/heap/released:bytes";
constexpr std::string_view kStacks = "/memory/classes/heap/stacks:bytes";

// A metric with one point, from one runtime/metrics value; nothing when the
// target's Go lacks the value or it does not fit an int64.
void AddSimple(std::vector<OtelGoMetric>& out, OtelGoMetric metric, std::optional<uint64_t> value) {
  if (!value || *value > kInt64Max) return;
  metric.points.push_back({{}, {}, static_cast<int64_t>(*value)});
  out.push_back(std::move(metric));
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
  // No limit reads as MaxInt64, which the conventions leave out.
  std::optional<uint64_t> limit = stats.Uint("/gc/gomemlimit:bytes");
  if (limit && *limit >= kInt64Max) limit.reset();
  AddSimple(out,
            {"go.memory.limit",
             "By",
             "The soft memory limit (GOMEMLIMIT) in effect",
             OtelInstrument::kUpDownCounter,
             {}},
            limit);
  AddSimple(out,
            {"go.memory.allocated",
             "By",
             "Heap bytes allocated since the process started",
             OtelInstrument::kCounter,
             {}},
            stats.Uint("/gc/heap/allocs:bytes"));
  AddSimple(out,
            {"go.memory.allocations",
             "{allocation}",
             "Heap objects allocated since the process started (tiny allocations apart)",
             OtelInstrument::kCounter,
             {}},
            stats.Uint("/gc/heap/allocs:objects"));
  AddSimple(out,
            {"go.memory.gc.goal",
             "By",
             "Heap size the garbage collector aims to end its cycle at",
             OtelInstrument::kUpDownCounter,
             {}},
            stats.Uint("/gc/heap/goal:bytes"));
  AddSimple(out,
            {"go.memory.gc.cycles",
             "{gc_cycle}",
             "Garbage collections completed",
             OtelInstrument::kCounter,
             {}},
            stats.Uint("/gc/cycles/total:gc-cycles"));
  AddSimple(out,
            {"go.goroutine.count",
             "{goroutine}",
             "Goroutines that exist (system goroutines included from Go 1.26)",
             OtelInstrument::kUpDownCounter,
             {}},
            stats.Uint("/sched/goroutines:goroutines"));
  // Go 1.18 has no /sched/gomaxprocs:threads; the variable it would read is
  // the one the reader reads for GOMAXPROCS.
  std::optional<uint64_t> procs = stats.Uint("/sched/gomaxprocs:threads");
  if (!procs && stats.gomaxprocs > 0) procs = static_cast<uint64_t>(stats.gomaxprocs);
  AddSimple(out,
            {"go.processor.limit",
             "{thread}",
             "GOMAXPROCS: threads that may run Go code at once",
             OtelInstrument::kUpDownCounter,
             {}},
            procs);
  // GOGC=off reads as 2^64-1 (the runtime's -1 as unsigned): left out.
  AddSimple(
      out,
      {"go.config.gogc", "%", "GOGC in effect, in percent", OtelInstrument::kUpDownCounter, {}},
      stats.Uint("/gc/gogc:percent"));
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
