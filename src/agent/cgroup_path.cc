#include "agent/cgroup_path.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace goheap2pprof {
namespace {

constexpr size_t kIdDigits = 64;
// Bounds the walk over one path: a real one has fewer than 20 elements.
constexpr size_t kMaxElements = 256;

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool IsContainerId(std::string_view s) {
  return s.size() == kIdDigits && std::all_of(s.begin(), s.end(), IsLowerHex);
}

// 32 hex digits, or the 8-4-4-4-12 form with dashes.
bool IsPodUid(std::string_view s) {
  if (s.size() == 32) return std::all_of(s.begin(), s.end(), IsLowerHex);
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !IsLowerHex(s[i])) return false;
  }
  return true;
}

bool StripPrefix(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

bool StripSuffix(std::string_view& s, std::string_view suffix) {
  if (!s.ends_with(suffix)) return false;
  s.remove_suffix(suffix.size());
  return true;
}

std::vector<std::string_view> Elements(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty() && out.size() < kMaxElements) {
    const size_t slash = path.find('/');
    std::string_view e = path.substr(0, slash);
    if (!e.empty() && e != "..") out.push_back(e);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

// The runtime a scope or directory prefix names: "cri-containerd-<id>.scope",
// "crio-<id>.scope", "docker-<id>.scope", "libpod-<id>.scope", and the
// cgroupfs forms without ".scope" ("crio-<id>", "libpod-<id>").
struct Prefix {
  std::string_view text;
  ContainerRuntime runtime;
};
constexpr Prefix kPrefixes[] = {
    {"cri-containerd-", ContainerRuntime::kContainerd},
    {"crio-", ContainerRuntime::kCrio},
    {"docker-", ContainerRuntime::kDocker},
    {"libpod-", ContainerRuntime::kPodman},
};

// containerd with the systemd driver on cgroup v1 names the container's
// cgroup "<pod slice>:cri-containerd:<id>" (the runtime's own form of
// slice:prefix:name), under containerd.service.
bool ParseColonForm(std::string_view e, CgroupIdentity& id) {
  const size_t last = e.rfind(':');
  if (last == std::string_view::npos) return false;
  const size_t mid = e.rfind(':', last == 0 ? 0 : last - 1);
  if (mid == std::string_view::npos || mid >= last) return false;
  std::string_view who = e.substr(mid + 1, last - mid - 1);
  std::string_view cid = e.substr(last + 1);
  if (!IsContainerId(cid)) return false;
  if (who == "cri-containerd")
    id.runtime = ContainerRuntime::kContainerd;
  else if (who == "crio")
    id.runtime = ContainerRuntime::kCrio;
  else if (who == "docker")
    id.runtime = ContainerRuntime::kDocker;
  else
    id.runtime = ContainerRuntime::kUnknown;
  id.container_id = std::string(cid);
  return true;
}

// One element that names a container; true if it did.
bool ParseContainerElement(std::string_view e, std::string_view parent, CgroupIdentity& id) {
  if (ParseColonForm(e, id)) return true;
  std::string_view s = e;
  StripSuffix(s, ".scope");
  for (const Prefix& p : kPrefixes) {
    std::string_view rest = s;
    // "crio-conmon-<id>" and "libpod-conmon-<id>" hold the runtime's monitor,
    // not the container: IsContainerId rejects them.
    if (StripPrefix(rest, p.text) && IsContainerId(rest)) {
      id.runtime = p.runtime;
      id.container_id = std::string(rest);
      return true;
    }
  }
  if (!IsContainerId(e)) return false;
  // A bare id: "/docker/<id>", or the kubepods cgroupfs form, which does
  // not say which runtime made it.
  id.runtime = parent == "docker" ? ContainerRuntime::kDocker : ContainerRuntime::kUnknown;
  id.container_id = std::string(e);
  return true;
}

std::string RestoreUidDashes(std::string_view uid) {
  std::string out(uid);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

// The pod's slice or directory: "pod<uid>" (cgroupfs), or
// "kubepods-<qos>-pod<uid with _>.slice" / "kubepods-pod<uid>.slice"
// (systemd, where any "<root>-kubepods" prefix may come first, as under kind).
bool ParsePodElement(std::string_view e, CgroupIdentity& id) {
  std::string_view s = e;
  if (StripSuffix(s, ".slice")) {
    const size_t at = s.rfind("-pod");
    if (at == std::string_view::npos || s.find("kubepods") == std::string_view::npos) {
      return false;
    }
    std::string uid = RestoreUidDashes(s.substr(at + 4));
    if (!IsPodUid(uid)) return false;
    id.pod_uid = std::move(uid);
    return true;
  }
  if (!StripPrefix(s, "pod") || !IsPodUid(s)) return false;
  id.pod_uid = std::string(s);
  return true;
}

// The QoS class a kubepods element names: "burstable", "besteffort"
// (cgroupfs) or "kubepods-burstable.slice" (systemd).
std::string QosOf(std::string_view e) {
  std::string_view s = e;
  if (StripSuffix(s, ".slice")) {
    const size_t at = s.rfind('-');
    if (at == std::string_view::npos || s.find("kubepods") == std::string_view::npos) return "";
    s = s.substr(at + 1);
  }
  if (s == "burstable" || s == "besteffort") return std::string(s);
  return "";
}

bool IsKubepods(std::string_view e) {
  return e == "kubepods" || e == "kubepods.slice" ||
         (e.ends_with("-kubepods.slice") && e.find('-') == e.rfind("-kubepods.slice"));
}

// A systemd service's unit ("pay\x2dments.service"); user@<uid>.service
// holds a whole login session, not one service.
std::string ServiceOf(std::string_view e) {
  std::string_view s = e;
  if (!StripSuffix(s, ".service") || s.empty() || s.starts_with("user@")) return "";
  return UnescapeSystemdName(s);
}

int Score(const CgroupIdentity& id) {
  if (!id.container_id.empty()) return 3;
  if (!id.pod_uid.empty()) return 2;
  if (!id.systemd_unit.empty()) return 1;
  return 0;
}

}  // namespace

std::string_view ContainerRuntimeName(ContainerRuntime r) {
  switch (r) {
    case ContainerRuntime::kUnknown:
      return "unknown";
    case ContainerRuntime::kContainerd:
      return "containerd";
    case ContainerRuntime::kCrio:
      return "cri-o";
    case ContainerRuntime::kDocker:
      return "docker";
    case ContainerRuntime::kPodman:
      return "podman";
    case ContainerRuntime::kSystemdService:
      return "systemd-service";
    case ContainerRuntime::kNone:
      break;
  }
  return "none";
}

std::string_view ContainerIdPrefix(ContainerRuntime r) {
  switch (r) {
    case ContainerRuntime::kContainerd:
      return "containerd://";
    case ContainerRuntime::kCrio:
      return "cri-o://";
    case ContainerRuntime::kDocker:
      return "docker://";
    default:
      return "";
  }
}

std::string UnescapeSystemdName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '\\' && i + 3 < name.size() && name[i + 1] == 'x' &&
        std::isxdigit(static_cast<unsigned char>(name[i + 2])) &&
        std::isxdigit(static_cast<unsigned char>(name[i + 3]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(name.substr(i + 2, 2)), nullptr, 16)));
      i += 3;
      continue;
    }
    out.push_back(name[i]);
  }
  return out;
}

namespace {

// Walks one path element by element, keeping what it has seen.
class PathWalk {
 public:
  void Visit(std::string_view e) {
    // The container is the first element that names one; what follows it
    // (cri-o's "/container", podman's split "/container") is inside it.
    if (id_.container_id.empty()) {
      const size_t colon = e.find(':');
      if (colon != std::string_view::npos) VisitPlain(e.substr(0, colon));
      if (ParseContainerElement(e, parent_, id_)) {
        parent_ = e;
        return;
      }
    }
    VisitPlain(e);
    parent_ = e;
  }

  CgroupIdentity Finish() {
    if (!id_.container_id.empty() || !id_.pod_uid.empty()) {
      id_.systemd_unit.clear();  // containerd.service is the runtime's, not the process's
    } else if (!id_.systemd_unit.empty()) {
      id_.runtime = ContainerRuntime::kSystemdService;
    }
    if (id_.pod_uid.empty()) id_.qos.clear();
    return std::move(id_);
  }

 private:
  void VisitPlain(std::string_view e) {
    if (IsKubepods(e)) {
      in_kubepods_ = true;
    } else if (in_kubepods_ && id_.pod_uid.empty() && ParsePodElement(e, id_)) {
      if (id_.qos.empty()) id_.qos = "guaranteed";  // directly under kubepods
    } else if (in_kubepods_ && id_.pod_uid.empty() && id_.qos.empty()) {
      id_.qos = QosOf(e);
    } else if (!in_kubepods_ && id_.pod_uid.empty() && e.starts_with("kubepods-") &&
               ParsePodElement(e, id_)) {
      // The systemd driver's pod slice alone ("kubepods-burstable-pod<uid>.slice"):
      // under containerd.service on cgroup v1, or below a cgroup namespace.
      in_kubepods_ = true;
      id_.qos = QosOf(std::string(e.substr(0, e.rfind("-pod"))) + ".slice");
      if (id_.qos.empty()) id_.qos = "guaranteed";
    } else if (id_.container_id.empty()) {
      std::string unit = ServiceOf(e);
      if (!unit.empty()) id_.systemd_unit = std::move(unit);
    }
  }

  CgroupIdentity id_;
  bool in_kubepods_ = false;
  std::string_view parent_;
};

}  // namespace

CgroupIdentity ParseCgroupPath(std::string_view path) {
  PathWalk walk;
  for (std::string_view e : Elements(path)) walk.Visit(e);
  return walk.Finish();
}

CgroupIdentity ParseCgroupIdentity(std::string_view text) {
  CgroupIdentity best;
  bool best_v2 = false;
  size_t lines = 0;
  while (!text.empty() && lines++ < kMaxElements) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const bool v2 = line.starts_with("0::");
    CgroupIdentity id = ParseCgroupPath(line.substr(b + 1));
    const int score = Score(id);
    if (score > Score(best) || (score == Score(best) && score > 0 && v2 && !best_v2)) {
      best = std::move(id);
      best_v2 = v2;
    }
  }
  return best;
}

}  // namespace goheap2pprof
