// What `goheap2pprof push` sends to Grafana Pyroscope, made in a capture
// worker (op kPush, agent/worker/push_wire.h) from the cumulative heap
// profile it captured (the runtime's /debug/pprof/heap), so that the
// privileged agent never parses a profile: alloc_objects and alloc_space as deltas against the
// previous push of the same process, inuse_objects and inuse_space as they
// are, samples whose four values are all zero dropped, then trimmed to the
// server's limits. The delta follows godeltaprof (pyroscope-go), which is
// what Pyroscope's Go SDK sends: samples are keyed by stack (the location
// addresses) and object size (the numeric `bytes` label), and a key whose
// alloc values went down is a reset: its sample is skipped and the new
// values become the baseline.
//
//   AllocDeltaState state(/*from_zero=*/true);   // one per process
//   PyroscopeProfile p = MakePyroscopeProfile(cumulative, state, PushLimits{});
//   if (p.profile.sample_size() > 0) send(EncodeProfile(p.profile));
//
// The input comes from a worker, so every id and string index is checked
// (Error kMalformed). The output has mapping, location and function ids
// 1..N in order and only the strings it uses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/profile.pb.h"

namespace goheap2pprof {

// Pyroscope's default per-profile limits (validation.max-profile-
// stacktrace-samples and max-profile-size-bytes, uncompressed): a profile
// over either is rejected whole, so it is trimmed before it is sent.
struct PushLimits {
  size_t max_samples = 16000;
  size_t max_bytes = size_t{4} << 20;
};

// The alloc values last pushed for one process, per (stack, object size).
class AllocDeltaState {
 public:
  // from_zero: the process started while the agent was running, so its
  // first profile's alloc values are all new since then and are pushed as
  // they are. Otherwise (the process is older than the agent, e.g. after an
  // agent restart) the first profile is only the baseline of alloc_*: its
  // alloc deltas are zero, so no allocation is ever pushed twice.
  explicit AllocDeltaState(bool from_zero) : primed_(from_zero) {}

  bool primed() const { return primed_; }
  size_t keys() const { return prev_.size(); }

 private:
  friend struct PyroscopeProfileMaker;
  friend std::string EncodeAllocDeltaState(const AllocDeltaState& state);
  friend AllocDeltaState DecodeAllocDeltaState(std::string_view bytes, size_t max_bytes);
  struct AllocValues {
    int64_t objects = 0, bytes = 0;
  };
  bool primed_;
  std::unordered_map<std::string, AllocValues> prev_;
};

// The state as bytes (gzipped), which the agent keeps between pushes
// without reading them: the worker that makes the next push decodes them.
// Decoding treats them as untrusted (another worker wrote them): at most
// max_bytes once gunzipped, every length checked; Error(kMalformed).
std::string EncodeAllocDeltaState(const AllocDeltaState& state);
AllocDeltaState DecodeAllocDeltaState(std::string_view bytes, size_t max_bytes);

struct PyroscopeProfile {
  pb::Profile profile;
  uint64_t samples_in = 0;  // samples of the cumulative profile
  uint64_t nonzero = 0;     // samples left after the delta and the zero drop
  uint64_t trimmed = 0;     // of those, dropped to fit the limits
  uint64_t resets = 0;      // keys whose alloc values decreased
  bool baseline = false;    // the first profile of a process older than the agent
};

// Computes the profile to push and advances `state`. Samples trimmed away
// keep their old baseline, so their allocations are pushed later, not lost.
PyroscopeProfile MakePyroscopeProfile(const pb::Profile& cumulative, AllocDeltaState& state,
                                      const PushLimits& limits);

struct TrimmedProfile {
  pb::Profile profile;
  uint64_t trimmed = 0;  // samples dropped to fit the limits
};

// A profile of one gauge (a goroutine profile's counts) that fits the
// limits: the samples with the largest first values are kept, in their
// order in `in`, and a comment says how many were dropped. Ids are
// renumbered 1..N as CompactProfile does.
TrimmedProfile TrimToLimits(const pb::Profile& in, const PushLimits& limits);

// A copy of `source` that keeps only `samples` (which refer to source's
// ids and strings) and the mappings, locations, functions and strings they
// use, renumbered 1..N in their order in source; string 0 is "".
pb::Profile CompactProfile(const pb::Profile& source, const std::vector<pb::Sample>& samples);

}  // namespace goheap2pprof
