#include "agent/push/metrics.h"

#include "agent/common/prometheus_text.h"

namespace goheap2pprof {
namespace {

// PushMetrics' families, in the order Render writes them.
constexpr MetricFamily kProfiles{
    "goheap2pprof_push_profiles_total", "counter",
    "Profiles per backend by outcome: sent (2xx), rejected (4xx but 408 and 429, never "
    "retried), failed (5xx, 408, 429 or connection errors after the last retry), dropped "
    "(queue over its profiles or bytes bound, oldest first), shutdown (still queued at "
    "exit)."};
constexpr MetricFamily kRetries{
    "goheap2pprof_push_retries_total", "counter",
    "Attempts repeated after a 5xx, 408 or 429 answer or a connection error."};
constexpr MetricFamily kSentBytes{"goheap2pprof_push_sent_bytes_total", "counter",
                                  "Request body bytes of the pushes the backend accepted."};
constexpr MetricFamily kQueueLength{"goheap2pprof_push_queue_length", "gauge",
                                    "Profiles waiting for their backend."};
constexpr MetricFamily kQueueBytes{"goheap2pprof_push_queue_bytes", "gauge",
                                   "Request body bytes of the profiles waiting for their backend."};
constexpr MetricFamily kDroppedBytes{
    "goheap2pprof_push_dropped_bytes_total", "counter",
    "Request body bytes of the profiles dropped from a full queue."};
constexpr MetricFamily kTrimmedProfiles{
    "goheap2pprof_push_trimmed_profiles_total", "counter",
    "Pyroscope profiles trimmed to fit the server's sample and size limits."};
constexpr MetricFamily kTrimmedSamples{
    "goheap2pprof_push_trimmed_samples_total", "counter",
    "Samples left out of Pyroscope profiles to fit the limits (their allocations are "
    "pushed later)."};
constexpr MetricFamily kUnchanged{
    "goheap2pprof_push_unchanged_total", "counter",
    "Captures not pushed because the process's profile cycle had not advanced."};
constexpr MetricFamily kAllocResets{
    "goheap2pprof_push_alloc_resets_total", "counter",
    "Stacks whose cumulative alloc values decreased (treated as a reset, godeltaprof's "
    "rule)."};
constexpr MetricFamily kBaselines{
    "goheap2pprof_push_baselines_total", "counter",
    "First profiles of processes older than the agent, pushed with no alloc delta."};

// A family with one sample per backend (the backends are the queues'):
// its count, 0 when it has none.
void PerBackend(PrometheusWriter& w, const MetricFamily& family,
                const std::map<std::string, uint64_t>& backends,
                const std::map<std::string, uint64_t>& counts) {
  w.Family(family);
  for (const auto& [backend, unused] : backends) {
    (void)unused;
    auto it = counts.find(backend);
    w.Sample({{"backend", backend}}, it == counts.end() ? 0 : it->second);
  }
}

}  // namespace

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
  PrometheusWriter w;
  w.Family(kProfiles);
  for (const auto& [backend, unused] : queue_) {
    (void)unused;
    std::map<std::string, uint64_t> all;
    if (auto it = outcomes_.find(backend); it != outcomes_.end()) all = it->second;
    for (const char* o : {"sent", "rejected", "failed", "dropped", "shutdown"}) all.emplace(o, 0);
    for (const auto& [outcome, n] : all) w.Sample({{"backend", backend}, {"outcome", outcome}}, n);
  }
  PerBackend(w, kRetries, queue_, retries_);
  PerBackend(w, kSentBytes, queue_, bytes_);
  PerBackend(w, kQueueLength, queue_, queue_);
  PerBackend(w, kQueueBytes, queue_, queue_bytes_);
  PerBackend(w, kDroppedBytes, queue_, dropped_bytes_);
  for (const auto& [family, n] : {std::pair{&kTrimmedProfiles, trimmed_profiles_},
                                  {&kTrimmedSamples, trimmed_samples_},
                                  {&kUnchanged, unchanged_},
                                  {&kAllocResets, resets_},
                                  {&kBaselines, baselines_}}) {
    w.Family(*family);
    w.Sample(n);
  }
  return std::move(w).Text();
}

}  // namespace goheap2pprof
