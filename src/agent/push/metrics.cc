#include "agent/push/metrics.h"

#include "agent/common/prometheus_text.h"

namespace goheap2pprof {
void PushMetrics::Outcome(const std::string& backend, const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++outcomes_[backend][outcome];
}

void PushMetrics::Retry(const std::string& backend) {
  std::lock_guard<std::mutex> lock(mu_);
  ++retries_[backend];
}

void PushMetrics::SentBytes(const std::string& backend, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  bytes_[backend] += bytes;
}

void PushMetrics::QueueLength(const std::string& backend, uint64_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_[backend] = length;
}

void PushMetrics::QueueBytes(const std::string& backend, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_bytes_[backend] = bytes;
}

void PushMetrics::DroppedBytes(const std::string& backend, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  dropped_bytes_[backend] += bytes;
}

void PushMetrics::Trimmed(uint64_t samples) {
  std::lock_guard<std::mutex> lock(mu_);
  ++trimmed_profiles_;
  trimmed_samples_ += samples;
}

void PushMetrics::Unchanged() {
  std::lock_guard<std::mutex> lock(mu_);
  ++unchanged_;
}

void PushMetrics::Resets(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  resets_ += n;
}

void PushMetrics::Baseline() {
  std::lock_guard<std::mutex> lock(mu_);
  ++baselines_;
}

uint64_t PushMetrics::Get(const std::string& backend, const std::string& outcome) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto b = outcomes_.find(backend);
  if (b == outcomes_.end()) return 0;
  auto o = b->second.find(outcome);
  return o == b->second.end() ? 0 : o->second;
}

std::string PushMetrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  PrometheusFamily(
      out, "goheap2pprof_push_profiles_total", "counter",
      "Profiles per backend by outcome: sent (2xx), rejected (4xx but 408 and 429, never "
      "retried), failed (5xx, 408, 429 or connection errors after the last retry), dropped "
      "(queue over its profiles or bytes bound, oldest first), shutdown (still queued at "
      "exit).");
  for (const auto& [backend, outcomes] : queue_) {
    (void)outcomes;
    std::map<std::string, uint64_t> all;
    if (auto it = outcomes_.find(backend); it != outcomes_.end()) all = it->second;
    for (const char* o : {"sent", "rejected", "failed", "dropped", "shutdown"}) all.emplace(o, 0);
    for (const auto& [outcome, n] : all) {
      out += "goheap2pprof_push_profiles_total{backend=\"" + PrometheusLabelValue(backend) +
             "\",outcome=\"" + PrometheusLabelValue(outcome) + "\"} " + std::to_string(n) + "\n";
    }
  }
  PrometheusFamily(out, "goheap2pprof_push_retries_total", "counter",
                   "Attempts repeated after a 5xx, 408 or 429 answer or a connection error.");
  for (const auto& [backend, n] : queue_) {
    (void)n;
    auto it = retries_.find(backend);
    out += "goheap2pprof_push_retries_total{backend=\"" + PrometheusLabelValue(backend) + "\"} " +
           std::to_string(it == retries_.end() ? 0 : it->second) + "\n";
  }
  PrometheusFamily(out, "goheap2pprof_push_sent_bytes_total", "counter",
                   "Request body bytes of the pushes the backend accepted.");
  for (const auto& [backend, n] : queue_) {
    (void)n;
    auto it = bytes_.find(backend);
    out += "goheap2pprof_push_sent_bytes_total{backend=\"" + PrometheusLabelValue(backend) +
           "\"} " + std::to_string(it == bytes_.end() ? 0 : it->second) + "\n";
  }
  PrometheusFamily(out, "goheap2pprof_push_queue_length", "gauge",
                   "Profiles waiting for their backend.");
  for (const auto& [backend, n] : queue_) {
    out += "goheap2pprof_push_queue_length{backend=\"" + PrometheusLabelValue(backend) + "\"} " +
           std::to_string(n) + "\n";
  }
  PrometheusFamily(out, "goheap2pprof_push_queue_bytes", "gauge",
                   "Request body bytes of the profiles waiting for their backend.");
  for (const auto& [backend, n] : queue_) {
    (void)n;
    auto it = queue_bytes_.find(backend);
    out += "goheap2pprof_push_queue_bytes{backend=\"" + backend + "\"} " +
           std::to_string(it == queue_bytes_.end() ? 0 : it->second) + "\n";
  }
  PrometheusFamily(out, "goheap2pprof_push_dropped_bytes_total", "counter",
                   "Request body bytes of the profiles dropped from a full queue.");
  for (const auto& [backend, n] : queue_) {
    (void)n;
    auto it = dropped_bytes_.find(backend);
    out += "goheap2pprof_push_dropped_bytes_total{backend=\"" + backend + "\"} " +
           std::to_string(it == dropped_bytes_.end() ? 0 : it->second) + "\n";
  }
  PrometheusFamily(out, "goheap2pprof_push_trimmed_profiles_total", "counter",
                   "Pyroscope profiles trimmed to fit the server's sample and size limits.");
  out += "goheap2pprof_push_trimmed_profiles_total " + std::to_string(trimmed_profiles_) + "\n";
  PrometheusFamily(
      out, "goheap2pprof_push_trimmed_samples_total", "counter",
      "Samples left out of Pyroscope profiles to fit the limits (their allocations are "
      "pushed later).");
  out += "goheap2pprof_push_trimmed_samples_total " + std::to_string(trimmed_samples_) + "\n";
  PrometheusFamily(out, "goheap2pprof_push_unchanged_total", "counter",
                   "Captures not pushed because the process's profile cycle had not advanced.");
  out += "goheap2pprof_push_unchanged_total " + std::to_string(unchanged_) + "\n";
  PrometheusFamily(
      out, "goheap2pprof_push_alloc_resets_total", "counter",
      "Stacks whose cumulative alloc values decreased (treated as a reset, godeltaprof's "
      "rule).");
  out += "goheap2pprof_push_alloc_resets_total " + std::to_string(resets_) + "\n";
  PrometheusFamily(out, "goheap2pprof_push_baselines_total", "counter",
                   "First profiles of processes older than the agent, pushed with no alloc delta.");
  out += "goheap2pprof_push_baselines_total " + std::to_string(baselines_) + "\n";
  return out;
}

}  // namespace goheap2pprof
