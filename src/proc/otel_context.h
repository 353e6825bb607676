// The OpenTelemetry process context (OTEP 4719) of a target, read from outside:
// an SDK that publishes it keeps its resource attributes (service.name,
// service.instance.id, ...) in a small mapping named "OTEL_CTX", so a reader
// on the node learns the names the process gives itself, which no /proc file
// or Kubernetes API knows.
//
//   std::optional<OtelContextPayload> ctx =
//       ReadOtelContext(mem, ReadProcMaps(pid));   // nullopt: none published
//   // ctx->resource: the bytes of an opentelemetry.proto.resource.v1.Resource
//
// The mapping is found by name in /proc/<pid>/maps ("/memfd:OTEL_CTX" or a
// named anonymous mapping). Its header, in the target's memory:
//
//   0  char[8] signature "OTEL_CTX" (written last by the publisher)
//   8  u32     version (2; 1 for development)
//   12 u32     payload_size
//   16 u64     published_at_ns (0 while an update is under way)
//   24 u64     payload address (after the header or anywhere in the process)
//
// A read is consistent when published_at_ns is non-zero and the same before
// and after the payload was read; an update under way is waited out a bounded
// number of times. Everything read is untrusted: sizes are capped, and a
// header that does not check out means "no context", never an error, since the
// context is an optional enrichment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proc/memory_reader.h"
#include "proc/procfs.h"

namespace goheap2pprof {

inline constexpr uint32_t kOtelContextVersion = 2;
inline constexpr uint32_t kOtelContextDevVersion = 1;
// A Resource of a few dozen attributes is a few KiB; more is not a context.
inline constexpr uint32_t kMaxOtelContextPayload = 64 * 1024;

struct OtelContextPayload {
  uint32_t version = 0;
  uint64_t published_at_ns = 0;
  std::string resource;  // protobuf bytes of opentelemetry.proto.resource.v1.Resource
};

// True if a maps entry is a published process context by its name.
bool IsOtelContextMapping(const MapsEntry& e);

// Reads the context of the mapping at header_addr; nullopt when the header
// is not a valid one or stays mid-update over every attempt.
std::optional<OtelContextPayload> ReadOtelContextAt(MemoryReader& mem, uint64_t header_addr);

// The first valid context among the process's OTEL_CTX mappings, if any.
std::optional<OtelContextPayload> ReadOtelContext(MemoryReader& mem,
                                                  const std::vector<MapsEntry>& maps);

}  // namespace goheap2pprof
