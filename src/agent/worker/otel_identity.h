// The names a Go process gives itself through the OpenTelemetry process
// context (OTEP 4719, proc/otel_context.h): its own service.name and
// service.instance.id, read from its memory by the confined push worker and
// returned to the agent in PushMade (agent/worker/push_wire.h), which puts
// them on the process's OTLP resource (agent/push/otlp_resource.h).
//
//   OtelProcessIdentity own = ReadOtelProcessIdentity(source);  // worker
//   own.service_name;  // "" when the process publishes no context
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "app/source.h"

namespace goheap2pprof {

// Longer values are cut (at a character boundary): a name, not a payload.
inline constexpr size_t kMaxOtelIdentityValue = 256;

struct OtelProcessIdentity {
  std::string service_name;         // "" when not published
  std::string service_instance_id;  // "" when not published
  bool operator==(const OtelProcessIdentity&) const = default;
};

// The two attributes of a serialized opentelemetry.proto.resource.v1.Resource
// (untrusted bytes): string values only, the first of each key, made valid
// UTF-8 and cut to kMaxOtelIdentityValue bytes. Bytes that do not parse as
// a Resource mean no context: both empty.
OtelProcessIdentity DecodeOtelContextResource(std::string_view resource);

// The identity the live process behind `source` publishes, or both empty.
OtelProcessIdentity ReadOtelProcessIdentity(CaptureSource& source);

}  // namespace goheap2pprof
