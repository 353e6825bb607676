#include "proc/otel_context.h"

#include <array>
#include <chrono>
#include <string_view>
#include <thread>

#include "base/bytes.h"

namespace goheap2pprof {
namespace {

constexpr std::string_view kSignature = "OTEL_CTX";
constexpr size_t kHeaderSize = 32;
// An update is two stores and a payload swap in the publisher; a handful of
// re-reads outlasts it, and a process stuck mid-update has no context to give.
constexpr int kMaxAttempts = 4;

struct Header {
  uint32_t version = 0;
  uint32_t payload_size = 0;
  uint64_t published_at_ns = 0;
  uint64_t payload_addr = 0;
};

// The header at addr if it is mapped, signed and of a version we read.
std::optional<Header> ReadHeader(MemoryReader& mem, uint64_t addr) {
  std::array<uint8_t, kHeaderSize> raw{};
  if (!mem.TryRead(addr, raw)) return std::nullopt;
  if (std::string_view(reinterpret_cast<const char*>(raw.data()), kSignature.size()) != kSignature)
    return std::nullopt;
  Header h{LoadU32(&raw[8]), LoadU32(&raw[12]), LoadU64(&raw[16]), LoadU64(&raw[24])};
  if (h.version != kOtelContextVersion && h.version != kOtelContextDevVersion) return std::nullopt;
  return h;
}

}  // namespace

bool IsOtelContextMapping(const MapsEntry& e) {
  // memfd_create("OTEL_CTX") shows as "/memfd:OTEL_CTX (deleted)"; the
  // fallback anonymous mapping named with PR_SET_VMA_ANON_NAME shows as
  // "[anon_shmem:OTEL_CTX]" when shared and "[anon:OTEL_CTX]" when private.
  for (std::string_view prefix : {"/memfd:OTEL_CTX", "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]"}) {
    if (std::string_view(e.path).starts_with(prefix)) return e.readable();
  }
  return false;
}

std::optional<OtelContextPayload> ReadOtelContextAt(MemoryReader& mem, uint64_t header_addr) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::optional<Header> before = ReadHeader(mem, header_addr);
    if (!before) return std::nullopt;
    if (before->published_at_ns == 0) continue;  // an update is under way
    if (before->payload_size == 0 || before->payload_size > kMaxOtelContextPayload)
      return std::nullopt;
    OtelContextPayload out{before->version, before->published_at_ns,
                           std::string(before->payload_size, '\0')};
    std::span<uint8_t> dst(reinterpret_cast<uint8_t*>(out.resource.data()), out.resource.size());
    if (!mem.TryRead(before->payload_addr, dst)) return std::nullopt;
    std::optional<Header> after = ReadHeader(mem, header_addr);
    if (!after) return std::nullopt;
    if (after->published_at_ns == before->published_at_ns) return out;
  }
  return std::nullopt;
}

std::optional<OtelContextPayload> ReadOtelContext(MemoryReader& mem,
                                                  const std::vector<MapsEntry>& maps) {
  for (const MapsEntry& e : maps) {
    if (!IsOtelContextMapping(e) || e.end - e.start < kHeaderSize) continue;
    if (auto ctx = ReadOtelContextAt(mem, e.start)) return ctx;
  }
  return std::nullopt;
}

}  // namespace goheap2pprof
