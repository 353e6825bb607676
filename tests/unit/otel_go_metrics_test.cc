// The Go runtime's metrics under OpenTelemetry's names: the table computed
// from runtime/metrics as the semantic conventions say (go.memory.used by
// type, what is left out and why), the names OTel's Prometheus exporter
// gives them (serve's /pid/N/metrics?names=otel), the OTLP request push
// --otlp-metrics sends (decoded back with our own proto; the resource is
// agent/push/otlp_resource.h's, tested with the OTLP profiles), and the gRPC
// framing and status of its transport.
// The e2e suites serve_otel_metrics_test.sh and push_otlp_metrics_test.sh
// check the values against the target's own and a real Collector.
#include "agent/common/otel_go_metrics.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>

#include "agent/push/otlp_metrics.h"
#include "agent/push/otlp_resource.h"
#include "agent/push/sender.h"
#include "agent/serve/go_metrics_text.h"
#include "agent/serve/query.h"
#include "proto/otlp_metrics.pb.h"

namespace goheap2pprof {
namespace {

constexpr uint64_t kOtelMaxInt64 = std::numeric_limits<int64_t>::max();

GoRuntimeStats OtelStats(uint64_t gogc, uint64_t limit) {
  GoRuntimeStats s;
  s.go_version = "go1.26.8";
  s.gomaxprocs = 4;
  auto add = [&s](const char* name, uint64_t v) { s.metrics.push_back({name, {}, v, 0}); };
  add("/gc/cycles/total:gc-cycles", 7);
  add("/gc/gogc:percent", gogc);
  add("/gc/gomemlimit:bytes", limit);
  add("/gc/heap/allocs:bytes", 9700576);
  add("/gc/heap/allocs:objects", 8803);
  add("/gc/heap/goal:bytes", 13840869);
  add("/memory/classes/heap/released:bytes", 1000);
  add("/memory/classes/heap/stacks:bytes", 262144);
  add("/memory/classes/total:bytes", 14081264);
  add("/sched/gomaxprocs:threads", 2);
  add("/sched/goroutines:goroutines", 12);
  return s;
}

// name -> "unit kind value[,value]" of each metric.
std::map<std::string, std::string> OtelSummary(const std::vector<OtelGoMetric>& metrics) {
  std::map<std::string, std::string> out;
  for (const OtelGoMetric& m : metrics) {
    std::string& s = out[std::string(m.name)];
    s = std::string(m.unit) + (m.instrument == OtelInstrument::kCounter ? " counter" : " updown");
    for (const OtelGoPoint& p : m.points) {
      s += " ";
      if (!p.attribute_key.empty()) {
        s += std::string(p.attribute_key) + "=" + std::string(p.attribute_value) + ":";
      }
      s += std::to_string(p.value);
    }
  }
  return out;
}

TEST(OtelGoMetrics, EachComputedAsTheConventionsSay) {
  EXPECT_EQ(OtelSummary(OtelGoMetrics(OtelStats(50, 314572800))),
            (std::map<std::string, std::string>{
                {"go.config.gogc", "% updown 50"},
                {"go.goroutine.count", "{goroutine} updown 12"},
                {"go.memory.allocated", "By counter 9700576"},
                {"go.memory.allocations", "{allocation} counter 8803"},
                {"go.memory.gc.cycles", "{gc_cycle} counter 7"},
                {"go.memory.gc.goal", "By updown 13840869"},
                {"go.memory.limit", "By updown 314572800"},
                // other = total - released - stack
                {"go.memory.used",
                 "By updown go.memory.type=stack:262144 "
                 "go.memory.type=other:13818120"},
                {"go.processor.limit", "{thread} updown 2"},
            }));
}

TEST(OtelGoMetrics, NoLimitAndGogcOffAreLeftOut) {
  auto s =
      OtelSummary(OtelGoMetrics(OtelStats(std::numeric_limits<uint64_t>::max(), kOtelMaxInt64)));
  EXPECT_EQ(s.count("go.memory.limit"), 0u);
  EXPECT_EQ(s.count("go.config.gogc"), 0u);
  EXPECT_EQ(s.count("go.memory.gc.goal"), 1u);
}

TEST(OtelGoMetrics, AGoWithoutAMetricLacksItsOtelMetric) {
  // Go 1.18: no /sched/gomaxprocs:threads (the variable is read instead),
  // no /gc/gogc:percent or /gc/gomemlimit:bytes.
  GoRuntimeStats s = OtelStats(100, kOtelMaxInt64);
  std::erase_if(s.metrics, [](const GoMetric& m) {
    return m.name == "/sched/gomaxprocs:threads" || m.name == "/gc/gogc:percent" ||
           m.name == "/memory/classes/heap/stacks:bytes";
  });
  auto summary = OtelSummary(OtelGoMetrics(s));
  EXPECT_EQ(summary["go.processor.limit"], "{thread} updown 4");
  EXPECT_EQ(summary.count("go.config.gogc"), 0u);
  EXPECT_EQ(summary.count("go.memory.used"), 0u);  // its stack part is unknown
}

TEST(OtelGoMetrics, InconsistentClassesAreNotWrapped) {
  GoRuntimeStats s = OtelStats(100, kOtelMaxInt64);
  for (GoMetric& m : s.metrics) {
    if (m.name == "/memory/classes/heap/released:bytes") m.u = 20000000;  // above total
    if (m.name == "/gc/heap/allocs:bytes") m.u = kOtelMaxInt64 + 1;
  }
  auto summary = OtelSummary(OtelGoMetrics(s));
  EXPECT_EQ(summary.count("go.memory.used"), 0u);
  EXPECT_EQ(summary.count("go.memory.allocated"), 0u);
}

TEST(OtelGoMetrics, PrometheusNamesAsOtelsExporterWritesThem) {
  std::map<std::string, std::string> names;
  for (const OtelGoMetric& m : OtelGoMetrics(OtelStats(50, 1 << 30))) {
    names[std::string(m.name)] = OtelPrometheusName(m);
  }
  EXPECT_EQ(names, (std::map<std::string, std::string>{
                       {"go.config.gogc", "go_config_gogc_percent"},
                       {"go.goroutine.count", "go_goroutine_count"},
                       {"go.memory.allocated", "go_memory_allocated_bytes_total"},
                       {"go.memory.allocations", "go_memory_allocations_total"},
                       {"go.memory.gc.cycles", "go_memory_gc_cycles_total"},
                       {"go.memory.gc.goal", "go_memory_gc_goal_bytes"},
                       {"go.memory.limit", "go_memory_limit_bytes"},
                       {"go.memory.used", "go_memory_used_bytes"},
                       {"go.processor.limit", "go_processor_limit"},
                   }));
  EXPECT_EQ(OtelPrometheusLabel("go.memory.type"), "go_memory_type");
}

TEST(OtelGoMetrics, PrometheusTextTypesLabelsAndScope) {
  const std::string text = OtelGoMetricsText(OtelStats(50, 1 << 30));
  const std::string scope = "otel_scope_name=\"goheap2pprof\",otel_scope_version=\"" +
                            std::string(GOHEAP2PPROF_VERSION) + "\"";
  EXPECT_NE(text.find("# TYPE go_memory_used_bytes gauge\n"), std::string::npos);
  EXPECT_NE(text.find("go_memory_used_bytes{go_memory_type=\"stack\"," + scope + "} 262144\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE go_memory_allocated_bytes_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("go_goroutine_count{" + scope + "} 12\n"), std::string::npos);
  EXPECT_EQ(text.find("go_memstats"), std::string::npos);
}

TEST(OtelGoMetrics, ServeRouteNamesParameter) {
  EXPECT_EQ(ParseServeTarget("/pid/7/metrics").metric_names, MetricNames::kPrometheus);
  EXPECT_EQ(ParseServeTarget("/pid/7/metrics?names=prometheus").metric_names,
            MetricNames::kPrometheus);
  ServeRoute r = ParseServeTarget("/pid/7/metrics?names=otel");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.endpoint, Endpoint::kProcessMetrics);
  EXPECT_EQ(r.profile.pid, 7);
  EXPECT_EQ(r.metric_names, MetricNames::kOpenTelemetry);
  EXPECT_EQ(ParseServeTarget("/metrics?pid=7&names=otel").metric_names,
            MetricNames::kOpenTelemetry);
  ServeRoute bad = ParseServeTarget("/pid/7/metrics?names=statsd");
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(bad.error->status, 400);
}

TEST(OtlpMetrics, RequestDecodesToTheMetrics) {
  const std::string resource =
      EncodeOtlpResource({{"service.name", std::string("svc")}, {"process.pid", int64_t{42}}});
  const std::string body =
      OtlpMetricsRequest(OtelGoMetrics(OtelStats(50, 1 << 30)), resource, 111, 222);
  otlp::metrics::ExportMetricsServiceRequest req;
  ASSERT_TRUE(req.ParseFromString(body));
  ASSERT_EQ(req.resource_metrics_size(), 1);
  const auto& rm = req.resource_metrics(0);
  ASSERT_EQ(rm.resource().attributes_size(), 2);
  EXPECT_EQ(rm.resource().attributes(0).value().string_value(), "svc");
  EXPECT_EQ(rm.resource().attributes(1).value().int_value(), 42);
  ASSERT_EQ(rm.scope_metrics_size(), 1);
  EXPECT_EQ(rm.scope_metrics(0).scope().name(), "goheap2pprof");
  std::map<std::string, const otlp::metrics::Metric*> by_name;
  for (const auto& m : rm.scope_metrics(0).metrics()) by_name[m.name()] = &m;
  const auto& used = by_name.at("go.memory.used")->sum();
  EXPECT_FALSE(used.is_monotonic());
  EXPECT_EQ(used.aggregation_temporality(), otlp::metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  ASSERT_EQ(used.data_points_size(), 2);
  EXPECT_EQ(used.data_points(1).attributes(0).key(), "go.memory.type");
  EXPECT_EQ(used.data_points(1).attributes(0).value().string_value(), "other");
  EXPECT_EQ(used.data_points(1).as_int(), 13818120);
  EXPECT_EQ(used.data_points(1).start_time_unix_nano(), 111u);
  EXPECT_EQ(used.data_points(1).time_unix_nano(), 222u);
  const auto& allocated = by_name.at("go.memory.allocated")->sum();
  EXPECT_TRUE(allocated.is_monotonic());
  EXPECT_EQ(allocated.data_points(0).as_int(), 9700576);
  EXPECT_EQ(by_name.at("go.memory.allocated")->unit(), "By");
}

TEST(OtlpMetrics, GrpcFrameIsLengthPrefixed) {
  EXPECT_EQ(GrpcFrame(""), std::string("\0\0\0\0\0", 5));
  EXPECT_EQ(GrpcFrame("ab"), std::string("\0\0\0\0\2ab", 7));
  EXPECT_EQ(GrpcFrame(std::string(0x10203, 'x')).substr(0, 5), std::string("\0\0\1\2\3", 5));
}

TEST(OtlpMetrics, GrpcStatusesAsOtlpExportersReadThem) {
  EXPECT_EQ(ClassifyGrpcStatus(0), PushVerdict::kSent);
  for (long retried : {1, 4, 8, 10, 11, 14, 15}) {
    EXPECT_EQ(ClassifyGrpcStatus(retried), PushVerdict::kRetry) << retried;
  }
  for (long rejected : {2, 3, 5, 6, 7, 9, 12, 13, 16, -1}) {
    EXPECT_EQ(ClassifyGrpcStatus(rejected), PushVerdict::kRejected) << rejected;
  }
}

}  // namespace
}  // namespace goheap2pprof
