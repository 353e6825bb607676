#include "agent/common/cgroup_path.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
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

// Where systemd delegates cgroups to unprivileged users: below these, any
// name may be the user's own choice.
bool IsUserDelegation(std::string_view e) {
  return e == "user.slice" || (e.starts_with("user@") && e.ends_with(".service"));
}

// The top-level cgroups under which a runtime puts its containers directly:
// docker's cgroupfs "/docker", the systemd driver's scopes of docker and
// podman, podman's cgroupfs "/libpod_parent".
bool IsRuntimeTop(std::string_view e) {
  return e == "docker" || e == "system.slice" || e == "machine.slice" || e == "libpod_parent";
}

bool IsCgroupfsPod(std::string_view e) { return e.starts_with("pod") && IsPodUid(e.substr(3)); }

// Walks one path element by element, keeping what it has seen. relative: the
// path started with ".." (seen from inside a cgroup namespace).
class PathWalk {
 public:
  explicit PathWalk(bool relative) : relative_(relative) {}

  void Visit(std::string_view e) {
    if (IsUserDelegation(e)) user_ = true;
    // Seen from a pod's cgroup namespace, a cgroupfs path may start below
    // kubepods, at a QoS class.
    if (relative_ && index_ == 0 && (e == "burstable" || e == "besteffort")) in_kubepods_ = true;
    // The container is the first element that names one; what follows it
    // (cri-o's "/container", podman's split "/container") is inside it.
    if (id_.container_id.empty() && !user_) {
      const size_t colon = e.find(':');
      if (colon != std::string_view::npos) VisitPlain(e.substr(0, colon));
      if (MayHoldContainer() && ParseContainerElement(e, parent_, id_)) {
        Next(e);
        return;
      }
    }
    VisitPlain(e);
    Next(e);
  }

  CgroupIdentity Finish(std::string_view path) {
    id_.path = std::string(path);
    if (!id_.container_id.empty() || !id_.pod_uid.empty()) {
      id_.systemd_unit.clear();  // containerd.service is the runtime's, not the process's
    } else if (!id_.systemd_unit.empty()) {
      id_.runtime = ContainerRuntime::kSystemdService;
    }
    if (id_.pod_uid.empty()) id_.qos.clear();
    return std::move(id_);
  }

 private:
  void Next(std::string_view e) {
    parent_ = e;
    ++index_;
  }

  // Whether the element being visited sits where a runtime puts containers.
  bool MayHoldContainer() const {
    if (in_kubepods_) return true;
    if (index_ == 1 && IsRuntimeTop(parent_)) return true;
    // From inside a cgroup namespace: a sibling container of our own pod, or
    // a container of a pod beside ours ("/../../pod<uid>/<id>").
    return relative_ && (index_ == 0 || (index_ == 1 && IsCgroupfsPod(parent_)));
  }

  void VisitPlain(std::string_view e) {
    // A user's own cgroups name no pod, whatever they are called.
    if (!user_ && IsKubepods(e)) {
      in_kubepods_ = true;
    } else if (in_kubepods_ && id_.pod_uid.empty() && ParsePodElement(e, id_)) {
      if (id_.qos.empty()) id_.qos = "guaranteed";  // directly under kubepods
    } else if (in_kubepods_ && id_.pod_uid.empty() && id_.qos.empty()) {
      id_.qos = QosOf(e);
    } else if (!user_ && !in_kubepods_ && id_.pod_uid.empty() && e.starts_with("kubepods-") &&
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
  bool relative_;
  bool in_kubepods_ = false;
  bool user_ = false;
  size_t index_ = 0;
  std::string_view parent_;
};

bool IsRelative(std::string_view path) {
  while (path.starts_with('/')) path.remove_prefix(1);
  return path == ".." || path.starts_with("../");
}

}  // namespace

CgroupIdentity ParseCgroupPath(std::string_view path) {
  PathWalk walk(IsRelative(path));
  for (std::string_view e : Elements(path)) walk.Visit(e);
  return walk.Finish(path);
}

namespace {

// The elements of a bundle's systemd-form cgroupsPath ("<slice>:<prefix>:<name>"):
// the slice's parents ("a-b-c.slice" lives in a.slice/a-b.slice), the slice,
// then the scope "<prefix>-<name>.scope". Empty if it is not of that form.
std::vector<std::string> ExpandSystemdCgroupsPath(std::string_view p) {
  const size_t a = p.find(':');
  const size_t b = a == std::string_view::npos ? a : p.find(':', a + 1);
  if (b == std::string_view::npos || p.find(':', b + 1) != std::string_view::npos) return {};
  std::string_view slice = p.substr(0, a);
  if (!StripSuffix(slice, ".slice") || slice.empty() || slice == "-") return {};
  std::vector<std::string> out;
  for (size_t from = 0; out.size() < kMaxElements;) {
    const size_t dash = slice.find('-', from);
    out.push_back(std::string(slice.substr(0, dash)) + ".slice");
    if (dash == std::string_view::npos) break;
    from = dash + 1;
  }
  out.push_back(std::string(p.substr(a + 1, b - a - 1)) + "-" + std::string(p.substr(b + 1)) +
                ".scope");
  return out;
}

// Whether `tail` is the whole of `all` (absolute) or its end (relative).
bool ElementsMatch(const std::vector<std::string_view>& tail, const std::vector<std::string>& all,
                   bool relative) {
  if (tail.empty() || tail.size() > all.size() || (!relative && tail.size() != all.size())) {
    return false;
  }
  return std::equal(tail.begin(), tail.end(), all.end() - static_cast<ptrdiff_t>(tail.size()));
}

}  // namespace

bool CgroupPathMatchesBundle(const CgroupIdentity& id, std::string_view cgroups_path) {
  if (id.container_id.empty() || cgroups_path.empty()) return false;
  // The process's path up to the element naming its container.
  std::vector<std::string_view> mine = Elements(id.path);
  auto at = std::find_if(mine.begin(), mine.end(), [&](std::string_view e) {
    return e.find(id.container_id) != std::string_view::npos;
  });
  if (at == mine.end()) return false;
  mine.erase(at + 1, mine.end());
  const bool relative = IsRelative(id.path);
  if (cgroups_path.starts_with('/')) {
    std::vector<std::string> theirs;
    for (std::string_view e : Elements(cgroups_path)) theirs.emplace_back(e);
    return ElementsMatch(mine, theirs, relative);
  }
  // cgroup v1 with the systemd driver: the runtime's text is one element.
  if (mine.back() == cgroups_path) return true;
  return ElementsMatch(mine, ExpandSystemdCgroupsPath(cgroups_path), relative);
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
