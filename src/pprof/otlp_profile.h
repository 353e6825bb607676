// A pprof profile as OTLP profiles (OpenTelemetry's profiles/v1development,
// proto/otlp_profiles.proto): one Profile per pprof sample type (OTLP has
// one value per sample), all in one ScopeProfiles and one dictionary, so
// that the heap profile's four types share their stacks, functions and
// strings. What pprof has and OTLP has no field for goes into the pprof
// attributes of the semantic conventions, so that the way back to pprof
// loses nothing:
// - scope: pprof.scope.sample_type_order (the types' order) and
//   pprof.scope.default_sample_type;
// - profile: pprof.profile.comment, .drop_frames, .keep_frames, .doc_url;
// - mapping: pprof.mapping.has_functions/_filenames/_line_numbers/
//   _inline_frames, and the build id as process.executable.build_id.gnu
//   (the ELF note, which is what pprof's build_id holds for Go);
// - location: pprof.location.is_folded; inline frames are several lines,
//   innermost first, as in pprof;
// - sample labels: attributes, a numeric label with its unit (the heap's
//   `bytes` label gets unit "bytes", which pprof implies for it).
// Every pprof sample is in every Profile, in the same order (values of 0
// included), so that the profiles zip back into one pprof sample list.
//
// The request's resource is the caller's (it knows the process): the
// result is the ResourceProfiles without it and the dictionary, each
// serialized, which JoinOtlpProfilesRequest joins around a resource
// without decoding either.
//
//   OtlpProfileParts parts = PprofToOtlp(profile, {"goheap2pprof", "0.1.0"});
//   std::string body = JoinOtlpProfilesRequest(resource_bytes, parts);
#pragma once

#include <string>
#include <string_view>

#include "proto/profile.pb.h"

namespace goheap2pprof {

// The version of OTLP profiles/v1development we speak, in the form of the
// Collector's `otlp-profiles-development-version` header (sent with every
// request). The one place it is named: to move it, see
// proto/otlp_profiles.proto.
inline constexpr std::string_view kOtlpProfilesVersion = "1";
inline constexpr std::string_view kOtlpProfilesVersionHeader = "otlp-profiles-development-version";
// The release whose field numbers proto/otlp_profiles.proto has, for
// messages and docs.
inline constexpr std::string_view kOtlpProfilesRelease =
    "opentelemetry-proto profiles/v1development as the OpenTelemetry Collector v0.165.0 decodes "
    "it (go.opentelemetry.io/proto/slim/otlp/profiles/v1development v0.4.1)";

struct OtlpScope {
  std::string name, version;
};

struct OtlpProfileParts {
  std::string resource_profiles;  // ResourceProfiles, its resource unset
  std::string dictionary;         // ProfilesDictionary
  size_t samples = 0;             // OTLP samples, all profiles together
};

// Throws Error(kMalformed) for an id or string index out of range (the
// profile comes from a worker's builder, but is checked anyway).
OtlpProfileParts PprofToOtlp(const pb::Profile& profile, const OtlpScope& scope);

// An ExportProfilesServiceRequest from a serialized Resource and the
// parts: protobuf merges a message given in pieces, so the resource is
// written as a ResourceProfiles of its own in front of the parts' one.
std::string JoinOtlpProfilesRequest(const std::string& resource, const OtlpProfileParts& parts);

}  // namespace goheap2pprof
