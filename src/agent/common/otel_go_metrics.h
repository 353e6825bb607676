// The Go runtime's metrics under OpenTelemetry's semantic-convention names
// (semconv "Go runtime metrics": go.memory.used, go.memory.gc.goal,
// go.goroutine.count, ...), computed from what `mem` reads from outside
// (memstats/go_runtime_stats.h) exactly as the conventions say each is
// computed from runtime/metrics, so that a dashboard built for OBI or for
// the OTel Go SDK's runtime instrumentation serves our processes too. One
// table for both outputs: serve's /pid/N/metrics?names=otel (Prometheus
// text, named as OTel's Prometheus exporter names them) and
// `push --otlp-metrics` (OTLP, agent/push/otlp_metrics.h).
//
// Only what can be filled truthfully: a metric whose runtime/metrics
// source the target's Go lacks is left out, go.memory.limit is left out
// when no limit is set (the conventions say so), go.config.gogc when
// GOGC=off (the conventions have no value for it), and go.schedule.duration
// always (a histogram of /sched/latencies, which the outside read does not
// compute). docs/opentelemetry.md has the table.
//
//   for (const OtelGoMetric& m : OtelGoMetrics(stats)) ...
//   std::string name = OtelPrometheusName(m);  // "go_memory_used_bytes"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memstats/go_runtime_stats.h"

namespace goheap2pprof {

// The OTel instrument a metric is: a Counter is a monotonic cumulative Sum,
// an UpDownCounter a non-monotonic cumulative Sum (OTLP's data model).
enum class OtelInstrument { kCounter, kUpDownCounter };

// One data point: an integer (the conventions' instruments are Int64
// observables) and at most one attribute (go.memory.type).
struct OtelGoPoint {
  std::string_view attribute_key;  // empty: none
  std::string_view attribute_value;
  int64_t value = 0;
};

struct OtelGoMetric {
  std::string_view name;  // "go.memory.used"
  std::string_view unit;  // UCUM: "By", "{goroutine}", "%"
  std::string_view description;
  OtelInstrument instrument = OtelInstrument::kUpDownCounter;
  std::vector<OtelGoPoint> points;
};

// The metrics of one read, in the conventions' order. A value above
// INT64_MAX (only a hostile worker reply could give one for the metrics
// kept) leaves its metric out rather than wrap.
std::vector<OtelGoMetric> OtelGoMetrics(const GoRuntimeStats& stats);

// The name OTel's Prometheus exporter gives a metric: dots (and any other
// character a Prometheus name cannot hold) to underscores, the unit as a
// suffix ("By" -> "_bytes", "%" -> "_percent", an annotation in braces
// none), and "_total" for a Counter. An UpDownCounter is a gauge there.
std::string OtelPrometheusName(const OtelGoMetric& metric);

// The same for an attribute key: go.memory.type -> go_memory_type.
std::string OtelPrometheusLabel(std::string_view key);

}  // namespace goheap2pprof
