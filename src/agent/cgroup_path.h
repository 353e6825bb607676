// What a process's cgroup path says about where it runs, without any I/O:
// the container runtime and container id, the Kubernetes pod uid and QoS
// class, or the systemd service. These are the shapes the node agents users
// run already parse (Alloy, parca-agent, coroot, the OpenTelemetry eBPF
// profiler), for cgroup v1 and v2, the systemd and cgroupfs drivers, and
// nested cgroup namespaces, plus podman's libpod-<id>.scope, which none of
// them parses. The pod's names come later, from the runtime's bundle
// (pod_identity.h).
//
//   CgroupIdentity id = ParseCgroupIdentity(proc_pid_cgroup_text);
//   if (id.runtime == ContainerRuntime::kContainerd) ... id.container_id ...
#pragma once

#include <string>
#include <string_view>

namespace goheap2pprof {

enum class ContainerRuntime {
  kNone,
  // A container id in a kubepods cgroupfs path ("/kubepods/burstable/pod<uid>/<id>"),
  // which does not name its runtime: containerd, or cri-o with cgroupfs.
  kUnknown,
  kContainerd,
  kCrio,
  kDocker,
  kPodman,
  kSystemdService,
};

// "containerd", "cri-o", "docker", "podman", "systemd-service", "unknown", "none".
std::string_view ContainerRuntimeName(ContainerRuntime r);
// The prefix Kubernetes gives a container id in a pod's status (and Alloy's
// joins expect): "containerd://", "cri-o://", "docker://"; "" for the others.
std::string_view ContainerIdPrefix(ContainerRuntime r);

struct CgroupIdentity {
  ContainerRuntime runtime = ContainerRuntime::kNone;
  std::string container_id;  // 64 lowercase hex digits, or ""
  std::string pod_uid;       // with dashes (the systemd driver's "_" restored), or 32 hex
  std::string qos;           // "guaranteed", "burstable", "besteffort" for a pod, else ""
  std::string systemd_unit;  // unescaped, without ".service" (runtime kSystemdService)

  bool operator==(const CgroupIdentity&) const = default;
};

// The identity of one cgroup path (a line's third field). Elements of ".."
// (a path outside the reader's cgroup namespace) are skipped.
CgroupIdentity ParseCgroupPath(std::string_view path);

// The identity of a whole /proc/<pid>/cgroup text (v1 lines such as
// "4:memory:/a", the v2 line "0::/a"): the line that says most (a container
// over a pod over a service), the v2 line first among equals.
CgroupIdentity ParseCgroupIdentity(std::string_view proc_cgroup_text);

// A systemd unit name with its "\xHH" escapes decoded: "pay\x2dments" is
// "pay-ments". Malformed escapes stay as they are.
std::string UnescapeSystemdName(std::string_view name);

}  // namespace goheap2pprof
