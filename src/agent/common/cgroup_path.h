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
  std::string path;          // the cgroup path this identity was read from

  bool operator==(const CgroupIdentity&) const = default;
};

// The identity of one cgroup path (a line's third field). Elements of ".."
// (a path outside the reader's cgroup namespace) are skipped.
//
// Container ids are world-readable (/proc/*/cgroup), and a user may name a
// cgroup of their own after one (systemd-run --user --scope -u
// cri-containerd-<id>), so a container element counts only where a runtime
// puts it: below a kubepods element (or the pod slice that carries one), or
// directly under a runtime's top-level cgroup (/docker, /system.slice,
// /machine.slice, /libpod_parent); never below user.slice or a user@.service,
// which is where systemd delegates cgroups to unprivileged users. A path seen
// from inside a cgroup namespace ("/../..") that starts at a pod, a QoS class
// or a container element counts as under kubepods: a user's cgroup diverges
// from ours at user.slice.
CgroupIdentity ParseCgroupPath(std::string_view path);

// Whether a process whose cgroup says `id` is in the cgroup a container's OCI
// bundle names (its linux.cgroupsPath): the cgroupfs form
// "/kubepods/burstable/pod<uid>/<id>", or the systemd form
// "kubepods-burstable-pod<uid>.slice:cri-containerd:<id>" (the slice expanded
// into its parents, then "<prefix>-<name>.scope"; or, on cgroup v1, that text
// as one element). An absolute path must be that path exactly, up to the
// container's element (cri-o's "/container" below it is inside it); a path
// from inside a cgroup namespace ("/../..") must be its tail. An empty
// cgroups_path matches nothing.
bool CgroupPathMatchesBundle(const CgroupIdentity& id, std::string_view cgroups_path);

// The identity of a whole /proc/<pid>/cgroup text (v1 lines such as
// "4:memory:/a", the v2 line "0::/a"): the line that says most (a container
// over a pod over a service), the v2 line first among equals.
CgroupIdentity ParseCgroupIdentity(std::string_view proc_cgroup_text);

// A systemd unit name with its "\xHH" escapes decoded: "pay\x2dments" is
// "pay-ments". Malformed escapes stay as they are.
std::string UnescapeSystemdName(std::string_view name);

}  // namespace goheap2pprof
