#include "agent/common/metrics.h"

#include <cstdint>

#include "agent/common/prometheus_text.h"

namespace goheap2pprof {

void ServeMetrics::CaptureDone(const std::string& outcome, double seconds, uint64_t bytes_read) {
  std::lock_guard<std::mutex> lock(mu_);
  ++captures_[outcome];
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++duration_counts_[i];
  }
  ++duration_count_;
  duration_sum_ += seconds;
  bytes_read_ += bytes_read;
}

void ServeMetrics::SetDiscovery(uint64_t processes, uint64_t scans, uint64_t analyses,
                                uint64_t cache_hits) {
  std::lock_guard<std::mutex> lock(mu_);
  processes_ = processes;
  scans_ = scans;
  discovery_analyses_ = analyses;
  discovery_cache_hits_ = cache_hits;
}

void ServeMetrics::SetDiscoveryHealth(uint64_t scan_errors, double last_success_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  scan_errors_ = scan_errors;
  last_scan_success_seconds_ = last_success_seconds;
}

void ServeMetrics::SetIdentityFailures(std::map<std::string, uint64_t> failures) {
  std::lock_guard<std::mutex> lock(mu_);
  identity_failures_ = std::move(failures);
}

void ServeMetrics::CaptureAnalyses(uint64_t analyses) {
  std::lock_guard<std::mutex> lock(mu_);
  capture_analyses_ += analyses;
  if (analyses == 0) ++capture_cache_hits_;
}

void ServeMetrics::WorkerRestarted(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++worker_restarts_[reason];
}

void ServeMetrics::MemoryStatsRead(const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++memory_stats_reads_[outcome];
}

void ServeMetrics::RequestServed(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[status];
}

std::string ServeMetrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  PrometheusFamily(out, "goheap2pprof_captures_total", "counter",
                   "Profile requests answered, by outcome of the capture.");
  // Every outcome is listed, so a series exists before its first event.
  std::map<std::string, uint64_t> captures = captures_;
  for (const char* o : {"ok", "sampling_off", "not_found", "forbidden", "gone", "busy",
                        "worker_crash", "worker_timeout", "error"}) {
    captures.emplace(o, 0);
  }
  for (const auto& [outcome, n] : captures) {
    out += "goheap2pprof_captures_total{outcome=\"" + PrometheusLabelValue(outcome) + "\"} " +
           std::to_string(n) + "\n";
  }
  PrometheusFamily(out, "goheap2pprof_memory_stats_reads_total", "counter",
                   "Reads of a process's Go memory statistics (/pid/N/metrics), by outcome.");
  std::map<std::string, uint64_t> reads = memory_stats_reads_;
  reads.emplace("ok", 0);
  for (const auto& [outcome, n] : reads) {
    out += "goheap2pprof_memory_stats_reads_total{outcome=\"" + PrometheusLabelValue(outcome) +
           "\"} " + std::to_string(n) + "\n";
  }
  PrometheusFamily(out, "goheap2pprof_capture_duration_seconds", "histogram",
                   "Wall time of captures, from the request to the finished profile.");
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    out += "goheap2pprof_capture_duration_seconds_bucket{le=\"" + PrometheusFloat(kBuckets[i]) +
           "\"} " + std::to_string(duration_counts_[i]) + "\n";
  }
  out += "goheap2pprof_capture_duration_seconds_bucket{le=\"+Inf\"} " +
         std::to_string(duration_count_) + "\n";
  out += "goheap2pprof_capture_duration_seconds_sum " + PrometheusFloat(duration_sum_) + "\n";
  out += "goheap2pprof_capture_duration_seconds_count " + std::to_string(duration_count_) + "\n";
  PrometheusFamily(out, "goheap2pprof_target_bytes_read_total", "counter",
                   "Bytes of target memory read by captures.");
  out += "goheap2pprof_target_bytes_read_total " + std::to_string(bytes_read_) + "\n";
  PrometheusFamily(out, "goheap2pprof_processes_discovered", "gauge",
                   "Go processes found by the last discovery scan.");
  out += "goheap2pprof_processes_discovered " + std::to_string(processes_) + "\n";
  PrometheusFamily(out, "goheap2pprof_discovery_scans_total", "counter",
                   "Completed scans of /proc.");
  out += "goheap2pprof_discovery_scans_total " + std::to_string(scans_) + "\n";
  PrometheusFamily(
      out, "goheap2pprof_discovery_scan_errors_total", "counter",
      "Scans of /proc that failed (e.g. out of file descriptors); the processes found by the "
      "last good scan are kept.");
  out += "goheap2pprof_discovery_scan_errors_total " + std::to_string(scan_errors_) + "\n";
  PrometheusFamily(
      out, "goheap2pprof_discovery_last_success_timestamp_seconds", "gauge",
      "When the last successful scan of /proc ended, in seconds since the epoch (0: none yet).");
  out += "goheap2pprof_discovery_last_success_timestamp_seconds " +
         PrometheusFloat(last_scan_success_seconds_) + "\n";
  PrometheusFamily(
      out, "goheap2pprof_pod_identity_failures_total", "counter",
      "Go processes of a pod or a containerd/cri-o container whose names (namespace, pod, "
      "container) could not be read from the runtime's bundle, by reason: no_bundle, "
      "unreadable, malformed (they keep their other labels), cgroup_mismatch (not in the "
      "cgroup the bundle names: no pod or container labels at all).");
  for (const char* reason : {"cgroup_mismatch", "malformed", "no_bundle", "unreadable"}) {
    auto it = identity_failures_.find(reason);
    out += std::string("goheap2pprof_pod_identity_failures_total{reason=\"") + reason + "\"} " +
           std::to_string(it == identity_failures_.end() ? 0 : it->second) + "\n";
  }
  PrometheusFamily(
      out, "goheap2pprof_executable_analyses_total", "counter",
      "Analyses of executable files (Go version, build ID, runtime tables), by who needed "
      "them: discovery (once per executable) or a capture.");
  out += "goheap2pprof_executable_analyses_total{phase=\"discovery\"} " +
         std::to_string(discovery_analyses_) + "\n";
  out += "goheap2pprof_executable_analyses_total{phase=\"capture\"} " +
         std::to_string(capture_analyses_) + "\n";
  PrometheusFamily(out, "goheap2pprof_analysis_cache_hits_total", "counter",
                   "Processes or captures served from an executable analysis made earlier.");
  out += "goheap2pprof_analysis_cache_hits_total{phase=\"discovery\"} " +
         std::to_string(discovery_cache_hits_) + "\n";
  out += "goheap2pprof_analysis_cache_hits_total{phase=\"capture\"} " +
         std::to_string(capture_cache_hits_) + "\n";
  PrometheusFamily(out, "goheap2pprof_worker_restarts_total", "counter",
                   "Capture workers replaced after a crash or a timeout.");
  std::map<std::string, uint64_t> restarts = worker_restarts_;
  restarts.emplace("crash", 0);
  restarts.emplace("timeout", 0);
  for (const auto& [reason, n] : restarts) {
    out += "goheap2pprof_worker_restarts_total{reason=\"" + PrometheusLabelValue(reason) + "\"} " +
           std::to_string(n) + "\n";
  }
  PrometheusFamily(out, "goheap2pprof_http_requests_total", "counter",
                   "HTTP requests by status code.");
  for (const auto& [code, n] : requests_) {
    out += "goheap2pprof_http_requests_total{code=\"" + std::to_string(code) + "\"} " +
           std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace goheap2pprof
