// Fuzz target: the agent's decoder of a worker's memory-statistics reply
// (agent/worker/runtime_stats_wire.h), and the exposition serve writes from what
// it accepts: whatever a compromised worker sends, the decoder either
// refuses it with Error or yields a value whose /pid/N/metrics text is
// line-for-line well formed (no forged line, no family without its HELP).
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/serve/go_metrics_text.h"
#include "agent/worker/runtime_stats_wire.h"
#include "base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  GoRuntimeStats stats;
  OtelProcessIdentity otel;
  try {
    stats = DecodeRuntimeStats(bytes, &otel);
  } catch (const Error&) {
    return 0;
  }
  if (stats.metrics.size() > RuntimeStatsWireLimits::kMaxMetrics) __builtin_trap();
  // What was accepted encodes back to the same bytes.
  if (otel.service_name.size() > kMaxOtelIdentityValue) __builtin_trap();
  if (EncodeRuntimeStats(stats, otel) != bytes) __builtin_trap();
  const std::string text = GoCollectorText(stats);
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    if (end == std::string::npos) __builtin_trap();  // every line ends
    const std::string_view line(text.data() + at, end - at);
    if (!line.starts_with("# HELP go_") && !line.starts_with("# TYPE go_") &&
        !line.starts_with("go_")) {
      __builtin_trap();
    }
    at = end + 1;
  }
  return 0;
}
