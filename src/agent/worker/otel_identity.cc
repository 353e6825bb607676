#include "agent/worker/otel_identity.h"

#include <optional>

#include "base/utf8.h"
#include "proc/otel_context.h"
#include "proto/otlp_common.pb.h"

namespace goheap2pprof {
namespace {

// Valid UTF-8, then cut so that no character is split.
std::string Bounded(std::string_view raw) {
  std::string s = ValidUtf8(raw);
  if (s.size() <= kMaxOtelIdentityValue) return s;
  size_t n = kMaxOtelIdentityValue;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

}  // namespace

OtelProcessIdentity DecodeOtelContextResource(std::string_view resource) {
  otlp::common::Resource r;
  if (!r.ParseFromArray(resource.data(), static_cast<int>(resource.size()))) return {};
  OtelProcessIdentity out;
  bool have_name = false, have_instance = false;
  for (const otlp::common::KeyValue& kv : r.attributes()) {
    if (!kv.has_value() || !kv.value().has_string_value()) continue;
    if (kv.key() == "service.name" && !have_name) {
      out.service_name = Bounded(kv.value().string_value());
      have_name = true;
    } else if (kv.key() == "service.instance.id" && !have_instance) {
      out.service_instance_id = Bounded(kv.value().string_value());
      have_instance = true;
    }
  }
  return out;
}

OtelProcessIdentity ReadOtelProcessIdentity(CaptureSource& source) {
  std::optional<OtelContextPayload> ctx = ReadOtelContext(source.memory(), source.mappings());
  return ctx ? DecodeOtelContextResource(ctx->resource) : OtelProcessIdentity{};
}

}  // namespace goheap2pprof
