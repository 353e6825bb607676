// The capture metrics every role keeps (serve, push, watch, the agent), in
// the Prometheus text exposition format (0.0.4): captures by outcome, a capture duration histogram,
// target bytes read, processes discovered, executable analyses and cache hits, worker restarts;
// written with agent/common/prometheus_text.h.
//
//   CaptureMetrics m;
//   m.CaptureDone("ok", 0.012, 4096);
//   std::string text = m.Render();
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "agent/common/prometheus_text.h"

namespace goheap2pprof {

class CaptureMetrics {
 public:
  // Upper bounds of the duration histogram, in seconds.
  static constexpr std::array<double, 11> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                      0.5,   1,    2.5,   5,    10};

  // outcome: ok, sampling_off, not_found, forbidden, gone, busy, worker_crash,
  // worker_timeout, error.
  void CaptureDone(const std::string& outcome, double seconds, uint64_t bytes_read);
  // Discovery's counters, copied when /metrics is rendered.
  void SetDiscovery(uint64_t processes, uint64_t scans, uint64_t analyses, uint64_t cache_hits);
  // Scans of /proc that failed (their last good list was kept), and when
  // the last one succeeded (seconds since the epoch; 0: none yet).
  void SetDiscoveryHealth(uint64_t scan_errors, double last_success_seconds);
  // Go processes whose pod names could not be read, by reason
  // (Discovery::identity_failures).
  void SetIdentityFailures(std::map<std::string, uint64_t> failures);
  // A capture that needed `analyses` executable analyses (0: a cache hit).
  void CaptureAnalyses(uint64_t analyses);
  void WorkerRestarted(const std::string& reason);
  // A read of a process's Go memory statistics (/pid/N/metrics), by the
  // outcome names of CaptureDone.
  void MemoryStatsRead(const std::string& outcome);
  void RequestServed(int status);

  std::string Render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> captures_;
  std::array<uint64_t, kBuckets.size()> duration_counts_{};
  uint64_t duration_count_ = 0;
  double duration_sum_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t processes_ = 0;
  uint64_t scans_ = 0;
  uint64_t scan_errors_ = 0;
  double last_scan_success_seconds_ = 0;
  std::map<std::string, uint64_t> identity_failures_;
  uint64_t discovery_analyses_ = 0, discovery_cache_hits_ = 0;
  uint64_t capture_analyses_ = 0, capture_cache_hits_ = 0;
  std::map<std::string, uint64_t> worker_restarts_;
  std::map<std::string, uint64_t> memory_stats_reads_;
  std::map<int, uint64_t> requests_;
};

}  // namespace goheap2pprof
