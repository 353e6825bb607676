// The one Prometheus text writer (agent/common/prometheus_text.h) that serve's,
// push's and a process's Go metrics share: family headers, and values in the
// form Prometheus's Go writer uses, our own counters included.
#include "agent/common/prometheus_text.h"

#include <gtest/gtest.h>

#include <string>

#include "agent/worker/capture_metrics.h"

namespace goheap2pprof {
namespace {

TEST(PrometheusText, FamilyWritesHelpThenType) {
  std::string out = "x\n";
  PrometheusFamily(out, "goheap2pprof_things_total", "counter", "Things done, by kind.");
  EXPECT_EQ(out,
            "x\n# HELP goheap2pprof_things_total Things done, by kind.\n"
            "# TYPE goheap2pprof_things_total counter\n");
}

TEST(PrometheusText, TheServerOwnValuesUseTheGoWritersForm) {
  CaptureMetrics m;
  m.SetDiscoveryHealth(0, 1796170509.25);
  m.CaptureDone("ok", 0.00001, 0);
  const std::string t = m.Render();
  EXPECT_NE(t.find("goheap2pprof_discovery_last_success_timestamp_seconds 1.79617050925e+09\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("goheap2pprof_capture_duration_seconds_sum 1e-05\n"), std::string::npos) << t;
  EXPECT_NE(t.find("goheap2pprof_capture_duration_seconds_bucket{le=\"0.005\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_EQ(PrometheusFloat(123456), "123456");
  EXPECT_EQ(PrometheusFloat(1234567), "1.234567e+06");
}

}  // namespace
}  // namespace goheap2pprof
