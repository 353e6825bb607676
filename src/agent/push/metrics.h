// The push agent's own counters, rendered in the Prometheus text format
// beside serve's capture and discovery metrics (agent/worker/capture_metrics.h) on the
// agent's /metrics: profiles per backend by outcome, retries, queue length
// and drops, trimmed profiles and samples, captures skipped because the
// profile cycle did not advance, alloc resets.
//
//   PushMetrics m;
//   m.Outcome("pyroscope", "sent");
//   std::string text = m.Render();
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace goheap2pprof {

class PushMetrics {
 public:
  // outcome: sent (2xx), rejected (4xx but 408 and 429: not retried),
  // failed (5xx, 408, 429 or no connection after the last retry), dropped
  // (the queue was over its profiles or bytes bound; the oldest went),
  // shutdown (still queued when the agent stopped).
  void Outcome(const std::string& backend, const std::string& outcome);
  void Retry(const std::string& backend);
  void SentBytes(const std::string& backend, uint64_t bytes);
  void QueueLength(const std::string& backend, uint64_t length);
  void QueueBytes(const std::string& backend, uint64_t bytes);
  void DroppedBytes(const std::string& backend, uint64_t bytes);
  void Trimmed(uint64_t samples);
  void Unchanged();
  void Resets(uint64_t n);
  void Baseline();

  std::string Render() const;
  // One counter's value, for tests.
  uint64_t Get(const std::string& backend, const std::string& outcome) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, uint64_t>> outcomes_;
  std::map<std::string, uint64_t> retries_, bytes_, queue_, queue_bytes_, dropped_bytes_;
  uint64_t trimmed_profiles_ = 0, trimmed_samples_ = 0, unchanged_ = 0, resets_ = 0, baselines_ = 0;
};

}  // namespace goheap2pprof
