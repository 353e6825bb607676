// Fuzz target: the Kubernetes identity parsers of the agents (a
// /proc/<pid>/cgroup text, one cgroup path, a systemd unit name, and an OCI
// bundle's config.json). The same bytes go to each; none may crash, and what
// they return keeps its promises.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/common/cgroup_path.h"
#include "agent/common/pod_identity.h"
#include "base/error.h"

namespace {

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

void CheckIdentity(const goheap2pprof::CgroupIdentity& id) {
  using goheap2pprof::ContainerRuntime;
  if (!id.container_id.empty() &&
      (id.container_id.size() != 64 ||
       !std::all_of(id.container_id.begin(), id.container_id.end(), IsLowerHex))) {
    __builtin_trap();  // promised: 64 lowercase hex digits
  }
  if (!id.pod_uid.empty() && id.pod_uid.size() != 32 && id.pod_uid.size() != 36) __builtin_trap();
  if (!id.qos.empty() && id.pod_uid.empty()) __builtin_trap();  // a class only for a pod
  if ((id.runtime == ContainerRuntime::kSystemdService) == id.systemd_unit.empty()) {
    __builtin_trap();  // a unit exactly for a service
  }
  // Nothing below a user's delegated cgroups names a pod or a container.
  if ((!id.container_id.empty() || !id.pod_uid.empty()) &&
      (id.path.find("/user.slice/") != std::string::npos || id.path.starts_with("user.slice/"))) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace goheap2pprof;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckIdentity(ParseCgroupIdentity(text));
  const CgroupIdentity path_id = ParseCgroupPath(text);
  CheckIdentity(path_id);
  // The first line as a process's cgroup path, the rest as a bundle's
  // cgroupsPath: a match needs a container.
  const size_t nl = text.find('\n');
  if (nl != std::string_view::npos) {
    const CgroupIdentity id = ParseCgroupPath(text.substr(0, nl));
    if (CgroupPathMatchesBundle(id, text.substr(nl + 1)) && id.container_id.empty()) {
      __builtin_trap();
    }
  }
  (void)CgroupPathMatchesBundle(path_id, text);
  if (UnescapeSystemdName(text).size() > text.size()) __builtin_trap();  // never grows
  try {
    PodIdentity id;
    id.names = ParseBundleAnnotations(text);
    (void)IdentityLabels(id);
    (void)DefaultServiceName(id);
  } catch (const Error&) {
    // malformed JSON is an expected answer
  }
  return 0;
}
