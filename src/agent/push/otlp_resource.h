// What every OTLP export of `goheap2pprof push` shares, whatever the signal
// (profiles here, metrics beside it): the resource of one Go process, with
// its attributes named as OpenTelemetry's semantic conventions and its eBPF
// profiler name them, from what discovery already knows (the pod identity
// of agent/common/pod_identity.h, the executable, the Go version); the
// serialized Resource (proto/otlp_common.proto); and how a refusal of our
// OTLP profiles version is explained once.
//
//   std::vector<OtlpAttribute> a = OtlpResourceAttributes(process, "svc", HostName());
//   std::string resource = EncodeOtlpResource(a);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "agent/common/discovery.h"
#include "agent/push/labels.h"
#include "agent/push/sender.h"
#include "agent/worker/otel_identity.h"

namespace goheap2pprof {

struct OtlpAttribute {
  std::string key;
  std::variant<std::string, int64_t> value;
  bool operator==(const OtlpAttribute&) const = default;
};

// service.name, process.pid, process.executable.name/.path,
// process.executable.build_id.go, process.runtime.name/.version,
// container.id, k8s.namespace.name, k8s.pod.name, k8s.pod.uid,
// k8s.container.name, k8s.node.name and host.name, each when known (an
// empty value is left out), then the --label extras as they are; strings
// made valid UTF-8. The names the process gives itself (OTEL_CTX, `own`)
// win: its service.name over `service_name`, and its service.instance.id.
std::vector<OtlpAttribute> OtlpResourceAttributes(const GoProcess& process,
                                                  const std::string& service_name,
                                                  const std::string& host_name,
                                                  const std::vector<PushLabel>& extras = {},
                                                  const OtelProcessIdentity& own = {});

// A serialized opentelemetry.proto.resource.v1.Resource.
std::string EncodeOtlpResource(const std::vector<OtlpAttribute>& attributes);

// This machine's host name (uname's nodename), or "".
std::string HostName();

// For BackendOptions::explain_rejection of OTLP profiles: a 400 (over
// gRPC: grpc-status 3, INVALID_ARGUMENT) that names the version header is
// a server that speaks another protocol version than
// `version`: every request will be rejected the same way until one side is
// upgraded. "" for any other rejection.
std::string ExplainOtlpProfilesRejection(const std::string& why, std::string_view header,
                                         std::string_view version, std::string_view release);

}  // namespace goheap2pprof
