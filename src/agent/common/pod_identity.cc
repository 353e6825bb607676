#include "agent/common/pod_identity.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"

namespace goheap2pprof {
namespace {

// A config.json with the runtime's default seccomp profile is some 30 KiB;
// anything past this is not a bundle we want to parse.
constexpr size_t kMaxBundleBytes = 4 << 20;
// containerd's namespaces on a node: k8s.io, moby, a few more at most.
constexpr int kMaxNamespaces = 64;

constexpr std::string_view kContainerdTasks = "/run/containerd/io.containerd.runtime.v2.task/";
constexpr std::string_view kCrioContainers = "/run/containers/storage/overlay-containers/";

enum class ReadResult { kOk, kMissing, kUnreadable };

// A regular file of at most kMaxBundleBytes (a FIFO or device planted in
// the state directory must not block or flood us).
ReadResult ReadBundleFile(const std::string& path, std::string* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return errno == ENOENT || errno == ENOTDIR ? ReadResult::kMissing : ReadResult::kUnreadable;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) > kMaxBundleBytes) {
    close(fd);
    return ReadResult::kUnreadable;
  }
  out->clear();
  char buf[16384];
  ssize_t n = 0;
  while (out->size() <= kMaxBundleBytes && (n = read(fd, buf, sizeof(buf))) > 0) {
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return n < 0 || out->size() > kMaxBundleBytes ? ReadResult::kUnreadable : ReadResult::kOk;
}

std::string StringAt(const nlohmann::json& annotations, const char* key) {
  auto it = annotations.find(key);
  return it != annotations.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The first non-empty value.
std::string FirstOf(std::string a, std::string b) { return a.empty() ? b : a; }

}  // namespace

BundleAnnotations ParseBundleAnnotations(std::string_view config_json) {
  return TryParseBundleAnnotations(config_json).value();
}

Expected<BundleAnnotations> TryParseBundleAnnotations(std::string_view config_json) {
  nlohmann::json doc = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    return Error(ErrorKind::kMalformed, "OCI bundle config.json is not a JSON object");
  }
  BundleAnnotations b;
  auto linux = doc.find("linux");
  if (linux != doc.end() && linux->is_object()) b.cgroups_path = StringAt(*linux, "cgroupsPath");
  auto it = doc.find("annotations");
  if (it == doc.end() || !it->is_object()) return b;
  const nlohmann::json& a = *it;
  b.pod_namespace = FirstOf(StringAt(a, "io.kubernetes.cri.sandbox-namespace"),
                            StringAt(a, "io.kubernetes.pod.namespace"));
  b.pod =
      FirstOf(StringAt(a, "io.kubernetes.cri.sandbox-name"), StringAt(a, "io.kubernetes.pod.name"));
  b.pod_uid =
      FirstOf(StringAt(a, "io.kubernetes.cri.sandbox-uid"), StringAt(a, "io.kubernetes.pod.uid"));
  b.container = FirstOf(StringAt(a, "io.kubernetes.cri.container-name"),
                        StringAt(a, "io.kubernetes.container.name"));
  b.image = FirstOf(StringAt(a, "io.kubernetes.cri.image-name"),
                    StringAt(a, "io.kubernetes.cri-o.ImageName"));
  b.service_name = StringAt(a, "pyroscope.io/service_name");
  b.container_type = StringAt(a, "io.kubernetes.cri.container-type");
  return b;
}

std::string PodIdentity::PrefixedContainerId() const {
  if (cgroup.container_id.empty()) return "";
  return std::string(ContainerIdPrefix(runtime)) + cgroup.container_id;
}

PodIdentityReader::PodIdentityReader(std::string host_root, std::string node)
    : root_(std::move(host_root)), node_(std::move(node)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string PodIdentityReader::FindBundle(ContainerRuntime hint, const std::string& id,
                                          ContainerRuntime* found) const {
  std::vector<std::pair<std::string, ContainerRuntime>> candidates;
  const std::string tasks = root_ + std::string(kContainerdTasks);
  const std::string crio = root_ + std::string(kCrioContainers) + id + "/userdata/config.json";
  if (hint != ContainerRuntime::kCrio) {
    candidates.emplace_back(tasks + "k8s.io/" + id + "/config.json", ContainerRuntime::kContainerd);
    if (DIR* dir = opendir(tasks.c_str())) {
      int seen = 0;
      while (dirent* e = readdir(dir)) {
        const std::string ns = e->d_name;
        if (ns == "." || ns == ".." || ns == "k8s.io") continue;
        if (++seen > kMaxNamespaces) break;
        candidates.emplace_back(tasks + ns + "/" + id + "/config.json",
                                ContainerRuntime::kContainerd);
      }
      closedir(dir);
    }
  }
  if (hint != ContainerRuntime::kContainerd) candidates.emplace_back(crio, ContainerRuntime::kCrio);
  for (const auto& [path, runtime] : candidates) {
    if (access(path.c_str(), F_OK) == 0) {
      *found = runtime;
      return path;
    }
  }
  return "";
}

PodIdentity PodIdentityReader::Read(const CgroupIdentity& cgroup) const {
  PodIdentity id;
  id.node = node_;
  id.cgroup = cgroup;
  id.runtime = cgroup.runtime;
  const ContainerRuntime r = cgroup.runtime;
  const bool expected =
      !cgroup.pod_uid.empty() || r == ContainerRuntime::kContainerd || r == ContainerRuntime::kCrio;
  if (cgroup.container_id.empty() || !(expected || r == ContainerRuntime::kUnknown)) {
    if (expected && cgroup.container_id.empty()) id.failure = "no_bundle";  // a pod without an id
    return id;
  }
  ContainerRuntime found = r;
  const std::string path = FindBundle(r, cgroup.container_id, &found);
  if (path.empty()) {
    id.failure = "no_bundle";
    return id;
  }
  id.runtime = found;
  std::string text;
  if (ReadBundleFile(path, &text) != ReadResult::kOk) {
    id.failure = "unreadable";
    return id;
  }
  Expected<BundleAnnotations> names = TryParseBundleAnnotations(text);
  if (!names) {
    id.failure = "malformed";  // one process's bundle: its names only
    return id;
  }
  id.names = std::move(names).value();
  if (!CgroupPathMatchesBundle(cgroup, id.names.cgroups_path)) {
    // A container id is no secret: being in the container's cgroup is the
    // proof, and only the runtime can put a process there.
    id.names = BundleAnnotations();
    id.cgroup.container_id.clear();
    id.cgroup.pod_uid.clear();
    id.cgroup.qos.clear();
    id.runtime = ContainerRuntime::kNone;
    id.failure = "cgroup_mismatch";
  }
  return id;
}

const PodIdentity& PodIdentityCache::Get(pid_t pid, uint64_t start_time,
                                         const CgroupIdentity& cgroup) {
  auto [it, added] = cache_.try_emplace({pid, start_time});
  if (added) {
    it->second = reader_.Read(cgroup);
    if (!it->second.failure.empty()) ++failures_[it->second.failure];
  }
  return it->second;
}

void PodIdentityCache::Retain(const std::set<std::pair<pid_t, uint64_t>>& live) {
  std::erase_if(cache_, [&](const auto& entry) { return !live.contains(entry.first); });
}

std::vector<std::pair<std::string, std::string>> IdentityLabels(const PodIdentity& id) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](const char* name, const std::string& value) {
    if (!value.empty()) out.emplace_back(name, value);
  };
  add("namespace", id.names.pod_namespace);
  add("pod", id.names.pod);
  add("pod_uid", id.names.pod_uid.empty() ? id.cgroup.pod_uid : id.names.pod_uid);
  add("container", id.names.container);
  add("container_id", id.PrefixedContainerId());
  add("node", id.node);
  return out;
}

bool IsIdentityLabel(std::string_view name) {
  return name == "namespace" || name == "pod" || name == "pod_uid" || name == "container" ||
         name == "container_id" || name == "node";
}

std::string NodeName(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("NODE_NAME");
  return env ? env : "";
}

std::string DefaultServiceName(const PodIdentity& id) {
  if (!id.names.service_name.empty()) return id.names.service_name;
  if (!id.names.pod_namespace.empty() && !id.names.container.empty()) {
    return id.names.pod_namespace + "/" + id.names.container;
  }
  return id.cgroup.systemd_unit;
}

}  // namespace goheap2pprof
