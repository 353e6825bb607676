// What a capture worker makes for `goheap2pprof push` (ops kPush and
// kPushConvert, agent/worker/worker.h), so that the privileged agent never
// decodes a profile (issue 38, finding 8): the worker captures, computes
// Pyroscope's delta and trims it (agent/worker/push_profile.h), and returns
// both backends' raw profiles gzipped, ready to be sent as they are, with
// the process's next delta state, which the agent keeps as opaque bytes
// and hands to the next push's worker. The agent reads only this
// envelope: a few counters and seven byte strings, each bounded.
//
//   PushWork work{.limits = limits, .from_zero = true, .state = kept};
//   request.payload = EncodePushWork(work);                       // agent
//   PushMade made = MakePushProfiles(capture, DecodePushWork(p)); // worker
//   reply.body = EncodePushMade(made);                            // worker
//   PushMade got = DecodePushMade(reply.body);                    // agent
//
// Private to one build of the binary (the agent execs itself).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/worker/otel_identity.h"
#include "agent/worker/push_profile.h"
#include "proto/profile.pb.h"

namespace goheap2pprof {

// The request's payload.
struct PushWork {
  PushLimits limits;
  bool pyroscope = true;  // make Pyroscope's delta profile
  bool parca = true;      // make Parca's cumulative profile
  // Make OTLP profiles (pprof/otlp_profile.h) of Pyroscope's delta
  // profile: alloc_* as deltas, the same state.
  bool otlp = false;
  // The process's state after its last push (EncodeAllocDeltaState, kept by
  // the agent), or empty: a fresh state, from zero or a baseline.
  bool from_zero = false;
  std::string state;
  // kPushConvert only: the gzipped cumulative profile to make the pushes
  // of (a watch trigger's capture) instead of a capture.
  std::string profile_gz;
};

// The reply's body.
struct PushMade {
  std::string pyroscope;  // gzipped; empty: nothing to push to Pyroscope
  std::string parca;      // gzipped
  std::string state;      // the state after this push, for the next one
  // OTLP: the ResourceProfiles without its resource and the dictionary
  // (OtlpProfileParts), serialized; empty: nothing to push.
  std::string otlp_resource_profiles, otlp_dictionary;
  uint64_t otlp_samples = 0;
  uint64_t pyroscope_samples = 0, parca_samples = 0;
  uint64_t nonzero = 0, trimmed = 0, resets = 0;
  bool baseline = false;
  // What the live process names itself (OTEL_CTX), read by the worker of a
  // capture (ops kPush, kPushGoroutine); each at most kMaxOtelIdentityValue.
  OtelProcessIdentity otel;
};

std::string EncodePushWork(const PushWork& work);
// In the worker; throws Error(kMalformed). Bytes are at most max_bytes.
PushWork DecodePushWork(std::string_view bytes, size_t max_bytes);
std::string EncodePushMade(const PushMade& made);
// In the agent; throws Error(kMalformed). Byte strings are at most
// max_bytes each (the reply limit bounds them all together anyway).
PushMade DecodePushMade(std::string_view bytes, size_t max_bytes);

// In the worker: the pushes of `cumulative` (duration_nanos set to 0, as
// the runtime leaves it and as Parca reads a snapshot; the profile cycle,
// if known, as a comment). Reads work.state as untrusted.
PushMade MakePushProfiles(pb::Profile cumulative, const PushWork& work,
                          std::optional<uint32_t> cycle, size_t max_state_bytes);

// In the worker: the pushes of a goroutine profile (op kPushGoroutine). A
// goroutine count is a gauge, so both backends get the profile as it is,
// Pyroscope's trimmed to its limits (TrimToLimits); no state is kept.
PushMade MakeGoroutinePushProfiles(const pb::Profile& profile, const PushWork& work);

}  // namespace goheap2pprof
