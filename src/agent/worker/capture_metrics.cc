#include "agent/worker/capture_metrics.h"

#include <cstdint>

#include "agent/common/prometheus_text.h"

namespace goheap2pprof {
namespace {

// CaptureMetrics' families, in the order Render writes them.
constexpr MetricFamily kCaptures{"goheap2pprof_captures_total", "counter",
                                 "Profile requests answered, by outcome of the capture."};
constexpr MetricFamily kMemoryStatsReads{
    "goheap2pprof_memory_stats_reads_total", "counter",
    "Reads of a process's Go memory statistics (/pid/N/metrics), by outcome."};
constexpr MetricFamily kCaptureDuration{
    "goheap2pprof_capture_duration_seconds", "histogram",
    "Wall time of captures, from the request to the finished profile."};
constexpr MetricFamily kTargetBytesRead{"goheap2pprof_target_bytes_read_total", "counter",
                                        "Bytes of target memory read by captures."};
constexpr MetricFamily kProcessesDiscovered{"goheap2pprof_processes_discovered", "gauge",
                                            "Go processes found by the last discovery scan."};
constexpr MetricFamily kDiscoveryScans{"goheap2pprof_discovery_scans_total", "counter",
                                       "Completed scans of /proc."};
constexpr MetricFamily kDiscoveryScanErrors{
    "goheap2pprof_discovery_scan_errors_total", "counter",
    "Scans of /proc that failed (e.g. out of file descriptors); the processes found by the "
    "last good scan are kept."};
constexpr MetricFamily kDiscoveryLastSuccess{
    "goheap2pprof_discovery_last_success_timestamp_seconds", "gauge",
    "When the last successful scan of /proc ended, in seconds since the epoch (0: none yet)."};
constexpr MetricFamily kPodIdentityFailures{
    "goheap2pprof_pod_identity_failures_total", "counter",
    "Go processes of a pod or a containerd/cri-o container whose names (namespace, pod, "
    "container) could not be read from the runtime's bundle, by reason: no_bundle, "
    "unreadable, malformed (they keep their other labels), cgroup_mismatch (not in the "
    "cgroup the bundle names: no pod or container labels at all)."};
constexpr MetricFamily kExecutableAnalyses{
    "goheap2pprof_executable_analyses_total", "counter",
    "Analyses of executable files (Go version, build ID, runtime tables), by who needed "
    "them: discovery (once per executable) or a capture."};
constexpr MetricFamily kAnalysisCacheHits{
    "goheap2pprof_analysis_cache_hits_total", "counter",
    "Processes or captures served from an executable analysis made earlier."};
constexpr MetricFamily kWorkerRestarts{"goheap2pprof_worker_restarts_total", "counter",
                                       "Capture workers replaced after a crash or a timeout."};
constexpr MetricFamily kHttpRequests{"goheap2pprof_http_requests_total", "counter",
                                     "HTTP requests by status code."};

// A family's samples by one label, from counts; every value of `always`
// is written, 0 before its first event, so that its series exists.
void ByLabel(PrometheusWriter& w, const MetricFamily& family, std::string_view label,
             std::map<std::string, uint64_t> counts, std::initializer_list<const char*> always) {
  w.Family(family);
  for (const char* value : always) counts.emplace(value, 0);
  for (const auto& [value, n] : counts) w.Sample({{label, value}}, n);
}

}  // namespace

void CaptureMetrics::CaptureDone(const std::string& outcome, double seconds, uint64_t bytes_read) {
  std::lock_guard<std::mutex> lock(mu_);
  ++captures_[outcome];
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++duration_counts_[i];
  }
  ++duration_count_;
  duration_sum_ += seconds;
  bytes_read_ += bytes_read;
}

void CaptureMetrics::SetDiscovery(uint64_t processes, uint64_t scans, uint64_t analyses,
                                  uint64_t cache_hits) {
  std::lock_guard<std::mutex> lock(mu_);
  processes_ = processes;
  scans_ = scans;
  discovery_analyses_ = analyses;
  discovery_cache_hits_ = cache_hits;
}

void CaptureMetrics::SetDiscoveryHealth(uint64_t scan_errors, double last_success_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  scan_errors_ = scan_errors;
  last_scan_success_seconds_ = last_success_seconds;
}

void CaptureMetrics::SetIdentityFailures(std::map<std::string, uint64_t> failures) {
  std::lock_guard<std::mutex> lock(mu_);
  identity_failures_ = std::move(failures);
}

void CaptureMetrics::CaptureAnalyses(uint64_t analyses) {
  std::lock_guard<std::mutex> lock(mu_);
  capture_analyses_ += analyses;
  if (analyses == 0) ++capture_cache_hits_;
}

void CaptureMetrics::WorkerRestarted(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++worker_restarts_[reason];
}

void CaptureMetrics::MemoryStatsRead(const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++memory_stats_reads_[outcome];
}

void CaptureMetrics::RequestServed(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[status];
}

std::string CaptureMetrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  PrometheusWriter w;
  ByLabel(w, kCaptures, "outcome", captures_,
          {"ok", "sampling_off", "not_found", "forbidden", "gone", "busy", "worker_crash",
           "worker_timeout", "error"});
  ByLabel(w, kMemoryStatsReads, "outcome", memory_stats_reads_, {"ok"});
  w.Family(kCaptureDuration);
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    w.Sample("_bucket", {{"le", PrometheusFloat(kBuckets[i])}}, duration_counts_[i]);
  }
  w.Sample("_bucket", {{"le", "+Inf"}}, duration_count_);
  w.Sample("_sum", {}, duration_sum_);
  w.Sample("_count", {}, duration_count_);
  w.Family(kTargetBytesRead);
  w.Sample(bytes_read_);
  w.Family(kProcessesDiscovered);
  w.Sample(processes_);
  w.Family(kDiscoveryScans);
  w.Sample(scans_);
  w.Family(kDiscoveryScanErrors);
  w.Sample(scan_errors_);
  w.Family(kDiscoveryLastSuccess);
  w.Sample(last_scan_success_seconds_);
  // Only the reasons Discovery has (identity_failures_ is copied from it).
  w.Family(kPodIdentityFailures);
  for (const char* reason : {"cgroup_mismatch", "malformed", "no_bundle", "unreadable"}) {
    auto it = identity_failures_.find(reason);
    w.Sample({{"reason", reason}}, it == identity_failures_.end() ? 0 : it->second);
  }
  w.Family(kExecutableAnalyses);
  w.Sample({{"phase", "discovery"}}, discovery_analyses_);
  w.Sample({{"phase", "capture"}}, capture_analyses_);
  w.Family(kAnalysisCacheHits);
  w.Sample({{"phase", "discovery"}}, discovery_cache_hits_);
  w.Sample({{"phase", "capture"}}, capture_cache_hits_);
  ByLabel(w, kWorkerRestarts, "reason", worker_restarts_, {"crash", "timeout"});
  w.Family(kHttpRequests);
  for (const auto& [code, n] : requests_) w.Sample({{"code", std::to_string(code)}}, n);
  return std::move(w).Text();
}

}  // namespace goheap2pprof
