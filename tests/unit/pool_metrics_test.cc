// What /metrics counts of one pooled request (CountPoolResult,
// agent/worker/pool.h), the same for serve, push and watch: the outcome of a
// capture or of a memory-statistics read, analyses, and restarts only of
// workers that had been started.
#include <gtest/gtest.h>

#include <string>

#include "agent/worker/capture_metrics.h"
#include "agent/worker/pool.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

PoolResult Replied(int error_kind, uint64_t bytes_read, uint64_t analyses) {
  PoolResult r;
  r.outcome = PoolOutcome::kReplied;
  r.reply.error_kind = error_kind;
  r.reply.bytes_read = bytes_read;
  r.reply.analyses = analyses;
  return r;
}

TEST(CountPoolResult, ACaptureCountsOutcomeDurationBytesAndAnalyses) {
  CaptureMetrics m;
  CountPoolResult(m, WorkerOp::kHeap, Replied(0, 4096, 1), 0.02);
  CountPoolResult(m, WorkerOp::kAllocs,
                  Replied(static_cast<int>(ErrorKind::kSamplingDisabled), 0, 0), 0.001);
  const std::string t = m.Render();
  EXPECT_TRUE(Has(t, "goheap2pprof_captures_total{outcome=\"ok\"} 1")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_captures_total{outcome=\"sampling_off\"} 1")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_capture_duration_seconds_count 2")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_target_bytes_read_total 4096")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_executable_analyses_total{phase=\"capture\"} 1")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_analysis_cache_hits_total{phase=\"capture\"} 1")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_memory_stats_reads_total{outcome=\"ok\"} 0")) << t;
}

TEST(CountPoolResult, AMemoryStatisticsReadIsNotACapture) {
  CaptureMetrics m;
  CountPoolResult(m, WorkerOp::kRuntimeStats, Replied(0, 512, 0), 0.003);
  const std::string t = m.Render();
  EXPECT_TRUE(Has(t, "goheap2pprof_memory_stats_reads_total{outcome=\"ok\"} 1")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_captures_total{outcome=\"ok\"} 0")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_capture_duration_seconds_count 0")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_analysis_cache_hits_total{phase=\"capture\"} 1")) << t;
}

TEST(CountPoolResult, RestartsOnlyOfStartedWorkersAndProbesCountOnlyThose) {
  CaptureMetrics m;
  PoolResult crashed;
  crashed.outcome = PoolOutcome::kCrashed;
  CountPoolResult(m, WorkerOp::kHeap, crashed, 0.5);
  PoolResult timed_out;
  timed_out.outcome = PoolOutcome::kTimedOut;
  CountPoolResult(m, WorkerOp::kProbe, timed_out, 10);
  PoolResult not_started;
  not_started.outcome = PoolOutcome::kCrashed;
  not_started.not_started = true;
  CountPoolResult(m, WorkerOp::kHeap, not_started, 0);
  CountPoolResult(m, WorkerOp::kProbe, Replied(0, 0, 1), 0.01);
  const std::string t = m.Render();
  EXPECT_TRUE(Has(t, "goheap2pprof_worker_restarts_total{reason=\"crash\"} 1")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_worker_restarts_total{reason=\"timeout\"} 1")) << t;
  // The two captures that failed count as captures; the probes do not.
  EXPECT_TRUE(Has(t, "goheap2pprof_captures_total{outcome=\"worker_crash\"} 2")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_captures_total{outcome=\"worker_timeout\"} 0")) << t;
  EXPECT_TRUE(Has(t, "goheap2pprof_executable_analyses_total{phase=\"capture\"} 0")) << t;
}

}  // namespace
}  // namespace goheap2pprof
