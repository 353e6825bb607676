// GoRuntimeStats between a confined worker (agent/worker/worker.h, op
// kRuntimeStats) and the privileged agent. The worker computed the value
// from a target's memory, so the agent decodes the bytes as untrusted input:
// every count and length is bounded, the whole buffer must be consumed, and
// anything else fails the one request with Error(kMalformed).
//
// Private to one build of the binary (the agent execs itself): a magic,
// then fixed little-endian fields in the order of the struct.
//
//   std::string bytes = EncodeRuntimeStats(stats, otel);  // in the worker
//   GoRuntimeStats back = DecodeRuntimeStats(bytes, &otel);  // in the agent
//
// The reply also carries the names the process gives itself through the
// OTel process context (agent/worker/otel_identity.h), read in the same
// confined worker, for push's OTLP metrics of a process whose profiles are
// not pushed (which would carry them otherwise).
#pragma once

#include <string>
#include <string_view>

#include "agent/worker/otel_identity.h"
#include "base/expected.h"
#include "memstats/go_runtime_stats.h"

namespace goheap2pprof {

// Bounds of a decoded value (a Go version has about 70 scalar metrics).
struct RuntimeStatsWireLimits {
  static constexpr size_t kMaxMetrics = 512;
  static constexpr size_t kMaxNameBytes = 256;
  static constexpr size_t kMaxNotes = 64;
  static constexpr size_t kMaxNoteBytes = 4096;
  static constexpr size_t kMaxVersionBytes = 64;
};

std::string EncodeRuntimeStats(const GoRuntimeStats& stats, const OtelProcessIdentity& otel = {});
// Throws Error(kMalformed) naming what is wrong; the OTel names go to *otel
// when it is given (each at most kMaxOtelIdentityValue bytes).
GoRuntimeStats DecodeRuntimeStats(std::string_view bytes, OtelProcessIdentity* otel = nullptr);
// The same with the Error returned: for the roles, to whom a worker's bad
// reply fails one answer or one log line, not the role.
Expected<GoRuntimeStats> TryDecodeRuntimeStats(std::string_view bytes,
                                               OtelProcessIdentity* otel = nullptr);

}  // namespace goheap2pprof
