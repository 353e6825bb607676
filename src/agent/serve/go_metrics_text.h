// A Go process's runtime metrics in the Prometheus text exposition format
// (0.0.4), named and typed as prometheus/client_golang's Go collector
// (collectors.NewGoCollector, v1.20 and later) exports them from inside a
// process, so that the Go-runtime dashboards built on those names work for
// processes that export nothing: serve answers it at /pid/N/metrics for
// every Go process it may read. The HELP texts are our own descriptions.
//
// The values follow the collector's own sources exactly: go_memstats_* are
// derived from the runtime/metrics samples (not from a flushed MemStats),
// go_gc_duration_seconds is the summary of debug.ReadGCStats's five pause
// quantiles, go_threads counts the runtime's threads, go_goroutines is
// NumGoroutine. Besides the collector's default set, every
// /memory/classes/* metric the target has is written as go_memory_classes_*
// (what WithGoCollectorRuntimeMetrics(MetricsMemory) would add).
//
//   GoRuntimeStats stats = ...;  // from a worker (agent/worker/runtime_stats_wire.h)
//   reply.body = GoCollectorText(stats);
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/common/otel_go_metrics.h"
#include "agent/common/prometheus_text.h"
#include "memstats/go_runtime_stats.h"

namespace goheap2pprof {

// time.Duration(ns).Seconds(): whole seconds plus the remainder, the way Go
// rounds it (not ns / 1e9).
double GoDurationSeconds(int64_t ns);

// debug.ReadGCStats's PauseQuantiles of length 5 from the pause ring: the
// last min(NumGC, 256) pauses sorted, elements n*i/4 for i = 0..3, then the
// largest; all zero before the first GC. Indexed as client_golang labels
// them: quantile 0, 0.25, 0.5, 0.75, 1.
std::array<uint64_t, 5> GcPauseQuantiles(const MemStats& mem);

// client_golang's name for a runtime/metrics metric ("/memory/classes/heap/
// objects:bytes" -> "go_memory_classes_heap_objects_bytes"; a cumulative
// metric gets "_total"), or nullopt when the result is not a valid metric
// name (then the collector skips the metric too).
std::optional<std::string> PrometheusNameOfRuntimeMetric(std::string_view name, bool cumulative);

// The whole exposition: families sorted by name as client_golang's Gather
// writes them, each with its # HELP and # TYPE lines.
std::string GoCollectorText(const GoRuntimeStats& stats);

// The same values under OpenTelemetry's semantic-convention names
// (agent/common/otel_go_metrics.h), written as OTel's Prometheus exporter
// writes them: an UpDownCounter as a gauge, a Counter as a counter, each
// attribute a label, and every sample labelled with the instrumentation
// scope (otel_scope_name, otel_scope_version). Families sorted by name.
std::string OtelGoMetricsText(const GoRuntimeStats& stats);

}  // namespace goheap2pprof
