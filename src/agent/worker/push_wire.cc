#include "agent/worker/push_wire.h"

#include "agent/worker/wire_codec.h"
#include "base/error.h"
#include "pprof/otlp_profile.h"
#include "pprof/output.h"

namespace goheap2pprof {
namespace {

constexpr uint32_t kWorkMagic = 0x67327077;  // "g2pw"
constexpr uint32_t kMadeMagic = 0x6732706d;  // "g2pm"

// The OTLP profiles of `profile` (already Pyroscope's: deltas, trimmed to
// the limits, which bound an OTLP request too).
void AddOtlp(const pb::Profile& profile, PushMade& made) {
  OtlpProfileParts parts = PprofToOtlp(profile, {"goheap2pprof", GOHEAP2PPROF_VERSION});
  made.otlp_resource_profiles = std::move(parts.resource_profiles);
  made.otlp_dictionary = std::move(parts.dictionary);
  made.otlp_samples = parts.samples;
}

}  // namespace

std::string EncodePushWork(const PushWork& work) {
  WireWriter w;
  w.U32(kWorkMagic);
  w.U64(work.limits.max_samples);
  w.U64(work.limits.max_bytes);
  w.U8(work.pyroscope ? 1 : 0);
  w.U8(work.parca ? 1 : 0);
  w.U8(work.otlp ? 1 : 0);
  w.U8(work.from_zero ? 1 : 0);
  w.Str(work.state);
  w.Str(work.profile_gz);
  return w.Take();
}

PushWork DecodePushWork(std::string_view bytes, size_t max_bytes) {
  WireReader r(bytes, "push request");
  if (r.U32() != kWorkMagic) throw Error(ErrorKind::kMalformed, "push request: bad magic");
  PushWork work;
  work.limits.max_samples = r.U64();
  work.limits.max_bytes = r.U64();
  work.pyroscope = r.Bool("pyroscope");
  work.parca = r.Bool("parca");
  work.otlp = r.Bool("otlp");
  work.from_zero = r.Bool("from_zero");
  work.state = r.Str(max_bytes, "state");
  work.profile_gz = r.Str(max_bytes, "profile");
  r.End();
  return work;
}

std::string EncodePushMade(const PushMade& made) {
  WireWriter w;
  w.U32(kMadeMagic);
  w.Str(made.pyroscope);
  w.Str(made.parca);
  w.Str(made.state);
  w.Str(made.otlp_resource_profiles);
  w.Str(made.otlp_dictionary);
  for (uint64_t v : {made.pyroscope_samples, made.parca_samples, made.otlp_samples, made.nonzero,
                     made.trimmed, made.resets}) {
    w.U64(v);
  }
  w.U8(made.baseline ? 1 : 0);
  w.Str(made.otel.service_name);
  w.Str(made.otel.service_instance_id);
  return w.Take();
}

PushMade DecodePushMade(std::string_view bytes, size_t max_bytes) {
  WireReader r(bytes, "push reply from a worker");
  if (r.U32() != kMadeMagic)
    throw Error(ErrorKind::kMalformed, "push reply from a worker: bad magic");
  PushMade made;
  made.pyroscope = r.Str(max_bytes, "Pyroscope profile");
  made.parca = r.Str(max_bytes, "Parca profile");
  made.state = r.Str(max_bytes, "state");
  made.otlp_resource_profiles = r.Str(max_bytes, "OTLP profiles");
  made.otlp_dictionary = r.Str(max_bytes, "OTLP dictionary");
  for (uint64_t* v : {&made.pyroscope_samples, &made.parca_samples, &made.otlp_samples,
                      &made.nonzero, &made.trimmed, &made.resets}) {
    *v = r.U64();
  }
  made.baseline = r.Bool("baseline");
  made.otel.service_name = r.Str(kMaxOtelIdentityValue, "OTEL_CTX service.name");
  made.otel.service_instance_id = r.Str(kMaxOtelIdentityValue, "OTEL_CTX service.instance.id");
  r.End();
  return made;
}

PushMade MakePushProfiles(pb::Profile cumulative, const PushWork& work,
                          std::optional<uint32_t> cycle, size_t max_state_bytes) {
  // The runtime never sets it for heap profiles; Parca reads a non-zero one
  // as a delta profile.
  cumulative.set_duration_nanos(0);
  if (cycle) {
    cumulative.add_string_table("goheap2pprof: profile cycle " + std::to_string(*cycle));
    cumulative.add_comment(cumulative.string_table_size() - 1);
  }
  PushMade made;
  if (work.pyroscope || work.otlp) {
    AllocDeltaState state = work.state.empty() ? AllocDeltaState(work.from_zero)
                                               : DecodeAllocDeltaState(work.state, max_state_bytes);
    PyroscopeProfile out = MakePyroscopeProfile(cumulative, state, work.limits);
    made.nonzero = out.nonzero;
    made.trimmed = out.trimmed;
    made.resets = out.resets;
    made.baseline = out.baseline;
    made.pyroscope_samples = static_cast<uint64_t>(out.profile.sample_size());
    if (work.pyroscope && out.profile.sample_size() > 0)
      made.pyroscope = EncodeProfile(out.profile);
    if (work.otlp && out.profile.sample_size() > 0) AddOtlp(out.profile, made);
    made.state = EncodeAllocDeltaState(state);
  }
  if (work.parca) {
    made.parca_samples = static_cast<uint64_t>(cumulative.sample_size());
    made.parca = EncodeProfile(cumulative);
  }
  return made;
}

PushMade MakeGoroutinePushProfiles(const pb::Profile& profile, const PushWork& work) {
  PushMade made;
  made.nonzero = static_cast<uint64_t>(profile.sample_size());
  if (work.pyroscope) {
    TrimmedProfile out = TrimToLimits(profile, work.limits);
    made.trimmed = out.trimmed;
    made.pyroscope_samples = static_cast<uint64_t>(out.profile.sample_size());
    if (out.profile.sample_size() > 0) made.pyroscope = EncodeProfile(out.profile);
  }
  if (work.otlp && profile.sample_size() > 0) AddOtlp(profile, made);
  if (work.parca) {
    made.parca_samples = static_cast<uint64_t>(profile.sample_size());
    made.parca = EncodeProfile(profile);
  }
  return made;
}

}  // namespace goheap2pprof
