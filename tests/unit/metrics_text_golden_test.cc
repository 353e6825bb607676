// The agent's four Prometheus texts (serve's own metrics, push's, the pool's
// in `agent`, a Go process's runtime metrics), byte for byte as they were
// before they shared one writer (agent/common/prometheus_text.h): each is
// rendered from fixed values and compared with its golden file in
// testdata/metrics_text/. A mismatch writes what was rendered to
// <build>/metrics_text/<name>.txt, to diff against the golden file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/common/prometheus_text.h"
#include "agent/node/agent.h"
#include "agent/push/metrics.h"
#include "agent/serve/go_metrics_text.h"
#include "agent/worker/capture_metrics.h"
#include "agent/worker/pool.h"

namespace goheap2pprof {
namespace {

void ExpectGolden(const std::string& name, const std::string& text) {
  const std::string path = std::string(GOHEAP2PPROF_SOURCE_DIR) + "/testdata/metrics_text/" + name;
  std::ifstream in(path, std::ios::binary);
  std::stringstream golden;
  golden << in.rdbuf();
  if (golden.str() == text) return;
  const std::filesystem::path out = std::string(GOHEAP2PPROF_BINARY_DIR) + "/metrics_text";
  std::filesystem::create_directories(out);
  std::ofstream(out / name, std::ios::binary) << text;
  ADD_FAILURE() << name << " differs from " << path << "; rendered: " << (out / name).string();
}

TEST(MetricsTextGolden, Serve) {
  CaptureMetrics m;
  m.CaptureDone("ok", 0.012, 4096);
  m.CaptureDone("busy", 3, 0);
  m.CaptureDone("odd\"\n\\", 0.0001, 1);
  m.SetDiscovery(4, 10, 3, 7);
  m.SetDiscoveryHealth(2, 1796170509.25);
  m.SetIdentityFailures({{"no_bundle", 2}, {"other", 5}});
  m.CaptureAnalyses(0);
  m.CaptureAnalyses(2);
  m.WorkerRestarted("crash");
  m.WorkerRestarted("oom\"x");
  m.MemoryStatsRead("gone");
  m.RequestServed(200);
  m.RequestServed(404);
  m.RequestServed(200);
  ExpectGolden("serve.txt", m.Render());
}

TEST(MetricsTextGolden, Push) {
  PushMetrics m;
  m.QueueLength("pyroscope", 3);
  m.QueueLength("parca", 0);
  m.Outcome("pyroscope", "sent");
  m.Outcome("pyroscope", "sent");
  m.Outcome("parca", "failed");
  m.Outcome("parca", "odd\"one");
  m.Retry("parca");
  m.SentBytes("pyroscope", 12345);
  m.QueueBytes("pyroscope", 999);
  m.DroppedBytes("parca", 77);
  m.Trimmed(5);
  m.Trimmed(6);
  m.Unchanged();
  m.Resets(4);
  m.Baseline();
  ExpectGolden("push.txt", m.Render());
}

TEST(MetricsTextGolden, Pool) {
  PoolStats stats;
  stats.workers_started = 3;
  stats.workers_unreaped = 1;
  stats.requests["serve"] = 5;
  stats.requests["watch"] = 2;
  stats.requests[""] = 1;
  stats.requests["x\"y"] = 4;
  ExpectGolden("pool.txt", PoolMetricsText(stats, 2));
}

TEST(MetricsTextGolden, GoCollector) {
  GoRuntimeStats s;
  s.go_version = "go1.26.8\"\n";
  // What a Go 1.26 reply has (the derived families read these), a class a
  // newer Go adds, and a float.
  const std::pair<const char*, uint64_t> uints[] = {
      {"/gc/gogc:percent", 100},
      {"/gc/gomemlimit:bytes", 9223372036854775807ull},
      {"/gc/heap/allocs:bytes", 5000000},
      {"/gc/heap/allocs:objects", 700},
      {"/gc/heap/frees:objects", 300},
      {"/gc/heap/goal:bytes", 4194304},
      {"/gc/heap/objects:objects", 400},
      {"/gc/heap/tiny/allocs:objects", 50},
      {"/memory/classes/heap/free:bytes", 1000},
      {"/memory/classes/heap/newer-class:bytes", 12},
      {"/memory/classes/heap/objects:bytes", 200000},
      {"/memory/classes/heap/released:bytes", 30000},
      {"/memory/classes/total:bytes", 7000000},
      {"/sched/gomaxprocs:threads", 4}};
  for (const auto& [name, v] : uints) s.metrics.push_back({name, GoMetric::Kind::kUint64, v, 0});
  s.metrics.push_back({"/memory/classes/float:bytes", GoMetric::Kind::kFloat64, 0, 0.5});
  s.num_goroutine = 12;
  s.threads = 7;
  s.mem.num_gc = 258;  // the ring wrapped
  for (size_t i = 0; i < s.mem.pause_ns.size(); ++i) s.mem.pause_ns[i] = 1000 + i * 37;
  s.mem.pause_total_ns = 123456789;
  s.mem.last_gc = 1764612345987654321;
  ExpectGolden("go_collector.txt", GoCollectorText(s));
}

// A backend's name is configuration, but every label value is escaped
// (prometheus_text.h): push's queue_bytes and dropped_bytes families wrote
// it raw, so a name with a double quote ended the label and broke the scrape.
TEST(MetricsText, PushEscapesTheBackendInEveryFamily) {
  PushMetrics m;
  m.QueueLength("a\"b", 1);
  const std::string text = m.Render();
  size_t series = 0;
  for (size_t at = text.find("backend="); at != std::string::npos;
       at = text.find("backend=", at + 1)) {
    EXPECT_EQ(text.substr(at, 14), "backend=\"a\\\"b\"") << text;
    ++series;
  }
  EXPECT_EQ(series, 10u);  // 5 outcomes and 5 families of one series
}

// HELP texts are ours, but the format escapes backslash and newline in them
// (a newline would end the comment and start a line of samples); they went
// out raw.
TEST(MetricsText, HelpTextIsEscaped) {
  PrometheusWriter w;
  w.Family({"x_total", "counter", "A \\ B\nx_total 666"});
  w.Sample(uint64_t{1});
  EXPECT_EQ(std::move(w).Text(),
            "# HELP x_total A \\\\ B\\nx_total 666\n# TYPE x_total counter\nx_total 1\n");
}

}  // namespace
}  // namespace goheap2pprof
