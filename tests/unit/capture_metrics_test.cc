// /metrics of `goheap2pprof serve`: the exposition text. (The e2e test also
// feeds it to promtool, Prometheus's own parser.)
#include "agent/worker/capture_metrics.h"

#include <gtest/gtest.h>

namespace goheap2pprof {
namespace {

TEST(CaptureMetrics, CountsAndHistogramAreCumulative) {
  CaptureMetrics m;
  m.CaptureDone("ok", 0.02, 100);
  m.CaptureDone("ok", 3, 50);
  m.CaptureDone("worker_crash", 0.001, 0);
  m.RequestServed(200);
  m.WorkerRestarted("crash");
  std::string t = m.Render();
  EXPECT_NE(t.find("goheap2pprof_captures_total{outcome=\"ok\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("goheap2pprof_captures_total{outcome=\"worker_crash\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("goheap2pprof_captures_total{outcome=\"busy\"} 0\n"), std::string::npos);
  EXPECT_NE(t.find("_bucket{le=\"0.005\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("_bucket{le=\"0.025\"} 2\n"), std::string::npos);
  EXPECT_NE(t.find("_bucket{le=\"2.5\"} 2\n"), std::string::npos);
  EXPECT_NE(t.find("_bucket{le=\"5\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("_bucket{le=\"10\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("goheap2pprof_capture_duration_seconds_count 3\n"), std::string::npos);
  EXPECT_NE(t.find("goheap2pprof_capture_duration_seconds_sum 3.021\n"), std::string::npos);
  EXPECT_NE(t.find("goheap2pprof_target_bytes_read_total 150\n"), std::string::npos);
  EXPECT_NE(t.find("goheap2pprof_worker_restarts_total{reason=\"crash\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("goheap2pprof_http_requests_total{code=\"200\"} 1\n"), std::string::npos);
  // Every family has HELP and TYPE before its samples.
  EXPECT_EQ(t.find("# HELP goheap2pprof_captures_total"), 0u);
  EXPECT_EQ(t.back(), '\n');
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

TEST(PrometheusLabelValue, EscapesAndMakesValidUtf8) {
  EXPECT_EQ(PrometheusLabelValue("ok"), "ok");
  EXPECT_EQ(PrometheusLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(PrometheusLabelValue("x\xff"), "x\xEF\xBF\xBD");
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

TEST(CaptureMetrics, CountsMemoryStatsReadsApartFromCaptures) {
  CaptureMetrics m;
  EXPECT_NE(m.Render().find("goheap2pprof_memory_stats_reads_total{outcome=\"ok\"} 0\n"),
            std::string::npos);
  m.MemoryStatsRead("ok");
  m.MemoryStatsRead("not_found");
  m.MemoryStatsRead("ok");
  const std::string t = m.Render();
  EXPECT_NE(t.find("goheap2pprof_memory_stats_reads_total{outcome=\"ok\"} 2\n"), std::string::npos)
      << t;
  EXPECT_NE(t.find("goheap2pprof_memory_stats_reads_total{outcome=\"not_found\"} 1\n"),
            std::string::npos);
  EXPECT_NE(t.find("goheap2pprof_captures_total{outcome=\"ok\"} 0\n"), std::string::npos);
}

}  // namespace
}  // namespace goheap2pprof
