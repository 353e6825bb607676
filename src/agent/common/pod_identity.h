// The Kubernetes identity of a process without the API server: its cgroup
// path (cgroup_path.h) gives the container id and pod uid, and the OCI
// bundle the container runtime wrote for the container on this node gives
// the names, as annotations of its config.json:
//   containerd  /run/containerd/io.containerd.runtime.v2.task/<namespace>/<id>/config.json
//               io.kubernetes.cri.sandbox-name, -namespace, -uid, container-name, image-name
//   cri-o       /run/containers/storage/overlay-containers/<id>/userdata/config.json
//               io.kubernetes.pod.name, .namespace, .uid, io.kubernetes.container.name
// A bundle is untrusted bytes (whoever controls the runtime's state writes
// it): read size-bounded, parsed without trusting its shape. Missing or
// unreadable bundles cost the names only; the reason is kept for a counter.
//
//   PodIdentityReader reader("/host", "node-a");       // --host-root, --node-name
//   PodIdentity id = reader.Read(ParseCgroupIdentity(text));
//   for (const auto& [name, value] : IdentityLabels(id)) ...
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/common/cgroup_path.h"
#include "base/expected.h"

namespace goheap2pprof {

// What a bundle's annotations say; empty strings for absent keys.
struct BundleAnnotations {
  std::string pod_namespace, pod, pod_uid, container, image;
  std::string service_name;    // pyroscope.io/service_name, when the runtime copied it
  std::string container_type;  // containerd's "container" or "sandbox"
  // Not an annotation: linux.cgroupsPath, where the runtime put the container
  // (CgroupPathMatchesBundle).
  std::string cgroups_path;
};

// Parses a config.json text. Throws Error(kMalformed) if it is not a JSON
// object; annotations that are not strings are ignored.
BundleAnnotations ParseBundleAnnotations(std::string_view config_json);
// The same, with the Error returned: for the scan, to which one malformed
// bundle is an expected outcome.
Expected<BundleAnnotations> TryParseBundleAnnotations(std::string_view config_json);

struct PodIdentity {
  CgroupIdentity cgroup;
  // The runtime the bundle was found for (a cgroupfs kubepods path does not
  // name it), else cgroup.runtime.
  ContainerRuntime runtime = ContainerRuntime::kNone;
  BundleAnnotations names;
  // Why the names are missing for a process that should have them (a pod's
  // container, or a containerd/cri-o one): "no_bundle", "unreadable",
  // "malformed", "cgroup_mismatch" (the process is not in the cgroup its
  // container's bundle names: it named a cgroup of its own after the
  // container, and gets neither names nor the ids its cgroup claims); ""
  // when found or not expected.
  std::string failure;
  std::string node;  // --node-name or $NODE_NAME, or ""

  // container_id with the runtime's prefix ("containerd://<id>"), "" if none.
  std::string PrefixedContainerId() const;
};

class PodIdentityReader {
 public:
  // host_root: where the node's filesystem is ("/" or --host-root); node:
  // the node's name for the labels.
  explicit PodIdentityReader(std::string host_root = "/", std::string node = "");
  // Reads the bundle of the container cgroup names, if any.
  PodIdentity Read(const CgroupIdentity& cgroup) const;

 private:
  // The first config.json found for id: containerd's k8s.io namespace, then
  // its other namespaces (bounded), then cri-o's; sets the runtime.
  std::string FindBundle(ContainerRuntime hint, const std::string& id,
                         ContainerRuntime* found) const;

  std::string root_;  // without a trailing '/'
  std::string node_;
};

// The identities of live processes, read once per (pid, start time) so a
// discovery scan does not re-read bundles, with the failures counted by
// reason (the agents' goheap2pprof_pod_identity_failures_total). Not
// thread-safe: its owner's lock guards it.
class PodIdentityCache {
 public:
  explicit PodIdentityCache(std::string host_root = "/", std::string node = "")
      : reader_(std::move(host_root), std::move(node)) {}

  // The identity of process (pid, start_time) whose cgroup says `cgroup`.
  const PodIdentity& Get(pid_t pid, uint64_t start_time, const CgroupIdentity& cgroup);
  // Forgets every process not in `live`.
  void Retain(const std::set<std::pair<pid_t, uint64_t>>& live);
  // Failures by reason, since the start.
  const std::map<std::string, uint64_t>& failures() const { return failures_; }

 private:
  PodIdentityReader reader_;
  std::map<std::pair<pid_t, uint64_t>, PodIdentity> cache_;
  std::map<std::string, uint64_t> failures_;
};

// The labels of an identity, in this order and only those known: namespace,
// pod, pod_uid, container, container_id (prefixed), node.
std::vector<std::pair<std::string, std::string>> IdentityLabels(const PodIdentity& id);
// The names IdentityLabels may set (which --label may not).
bool IsIdentityLabel(std::string_view name);

// The node name the agents label with: `flag` (--node-name), else
// $NODE_NAME (the downward API's usual variable), else "".
std::string NodeName(const std::string& flag);

// The default service_name (Alloy's convention): the pyroscope.io/service_name
// annotation, else <namespace>/<container>, else the systemd unit, else "".
std::string DefaultServiceName(const PodIdentity& id);

}  // namespace goheap2pprof
