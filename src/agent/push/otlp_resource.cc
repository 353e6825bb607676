#include "agent/push/otlp_resource.h"

#include <sys/utsname.h>

#include "base/utf8.h"
#include "proto/otlp_common.pb.h"

namespace goheap2pprof {

std::vector<OtlpAttribute> OtlpResourceAttributes(const GoProcess& process,
                                                  const std::string& service_name,
                                                  const std::string& host_name,
                                                  const std::vector<PushLabel>& extras,
                                                  const OtelProcessIdentity& own) {
  const ProcessFacts& f = process.facts;
  const PodIdentity& id = f.identity;
  std::vector<OtlpAttribute> out;
  auto add = [&out](const char* key, const std::string& value) {
    if (!value.empty()) out.push_back({key, ValidUtf8(value)});
  };
  add("service.name", own.service_name.empty() ? service_name : own.service_name);
  add("service.instance.id", own.service_instance_id);
  out.push_back({"process.pid", int64_t{f.pid}});
  // readlink's " (deleted)" for an executable replaced since it started
  // is no part of its path.
  std::string path = f.exe;
  if (path.ends_with(" (deleted)"))
    path.resize(path.size() - std::string_view(" (deleted)").size());
  add("process.executable.name", path.substr(path.rfind('/') + 1));
  add("process.executable.path", path);
  add("process.executable.build_id.go", process.exe.build_id);
  add("process.runtime.name", "go");
  add("process.runtime.version", process.exe.go_version);
  // The id alone: the semantic conventions' container.id has no runtime
  // prefix (Kubernetes' containerStatuses have one).
  add("container.id", id.cgroup.container_id);
  add("k8s.namespace.name", id.names.pod_namespace);
  add("k8s.pod.name", id.names.pod);
  add("k8s.pod.uid", id.names.pod_uid.empty() ? id.cgroup.pod_uid : id.names.pod_uid);
  add("k8s.container.name", id.names.container);
  add("k8s.node.name", id.node);
  add("host.name", host_name);
  for (const PushLabel& l : extras) add(l.first.c_str(), l.second);
  return out;
}

std::string EncodeOtlpResource(const std::vector<OtlpAttribute>& attributes) {
  otlp::common::Resource resource;
  for (const OtlpAttribute& a : attributes) {
    otlp::common::KeyValue* kv = resource.add_attributes();
    kv->set_key(a.key);
    if (const auto* s = std::get_if<std::string>(&a.value)) {
      kv->mutable_value()->set_string_value(*s);
    } else {
      kv->mutable_value()->set_int_value(std::get<int64_t>(a.value));
    }
  }
  return resource.SerializeAsString();
}

std::string HostName() {
  struct utsname u {};
  if (uname(&u) != 0) return "";
  return u.nodename;
}

std::string ExplainOtlpProfilesRejection(const std::string& why, std::string_view header,
                                         std::string_view version, std::string_view release) {
  // The Collector refuses over HTTP with 400, over gRPC with
  // INVALID_ARGUMENT (3) before it reads the message; both name the header.
  const bool invalid = why.starts_with("HTTP 400") || why.starts_with("grpc-status 3:");
  if (!invalid || why.find(header) == std::string::npos) return "";
  return "the server does not speak our OTLP profiles protocol version " + std::string(version) +
         " (" + std::string(header) + ": " + std::string(version) + ", " + std::string(release) +
         "): upgrade the one that is behind";
}

}  // namespace goheap2pprof
