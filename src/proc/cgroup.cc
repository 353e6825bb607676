#include "proc/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>

#include "base/unique_fd.h"

namespace goheap2pprof {
namespace {

// Files we read are a few kilobytes (memory.stat is the largest); anything
// longer is not a cgroup file and is cut here.
constexpr size_t kMaxFileBytes = 256 * 1024;
// Bounds on foreign text: lines of /proc/<pid>/cgroup and mounts considered.
constexpr size_t kMaxLines = 4096;
// v1 reports "no limit" as LONG_MAX rounded down to a page.
constexpr uint64_t kUnlimitedV1 = uint64_t{1} << 62;

std::vector<std::string_view> Split(std::string_view text, char sep, size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    size_t at = text.find(sep);
    if (at == std::string_view::npos) break;
    parts.push_back(text.substr(0, at));
    text = text.substr(at + 1);
  }
  parts.push_back(text);
  return parts;
}

std::optional<uint64_t> ParseU64(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' && field[i + 1] <= '3' &&
        field[i + 2] >= '0' && field[i + 2] <= '7' && field[i + 3] >= '0' && field[i + 3] <= '7') {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                               (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

bool Contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// "/a/b" + "/c" with "/" handled.
std::string JoinPath(std::string_view dir, std::string_view rest) {
  std::string out(dir);
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (!rest.empty() && rest.front() != '/') out += '/';
  out += rest;
  if (out.empty()) out = "/";
  return out;
}

std::string Parent(const std::string& dir) {
  size_t slash = dir.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return dir.substr(0, slash);
}

// Removes the leading "/.." elements of path (a cgroup above our cgroup
// namespace's root) and says how many there were.
size_t StripDotDots(std::string_view& path) {
  size_t n = 0;
  while (path.starts_with("/..") && (path.size() == 3 || path[3] == '/')) {
    path.remove_prefix(3);
    ++n;
  }
  return n;
}

// Bounds the search for our namespace's root in a mount of the whole
// hierarchy: a node has some thousands of cgroups at most.
constexpr size_t kMaxCgroupsSearched = 100000;

// The names, `depth` levels below top, of the directory whose inode is
// (dev, ino); nullopt if there is none. Breadth first, not through symlinks.
std::optional<std::vector<std::string>> FindDirByInode(const std::string& top, size_t depth,
                                                       dev_t dev, ino_t ino) {
  std::vector<std::vector<std::string>> level = {{}};
  size_t seen = 0;
  for (size_t d = 1; d <= depth && !level.empty(); ++d) {
    std::vector<std::vector<std::string>> next;
    for (const std::vector<std::string>& names : level) {
      std::string dir = top;
      for (const std::string& n : names) dir += "/" + n;
      std::unique_ptr<DIR, int (*)(DIR*)> dp(::opendir(dir.c_str()), ::closedir);
      while (dp && seen < kMaxCgroupsSearched) {
        const dirent* e = ::readdir(dp.get());
        if (e == nullptr) break;
        const std::string name = e->d_name;
        if (e->d_type != DT_DIR || name == "." || name == "..") continue;
        ++seen;
        std::vector<std::string> child = names;
        child.push_back(name);
        struct stat st;
        if (d == depth && ::lstat((dir + "/" + name).c_str(), &st) == 0 && st.st_dev == dev &&
            st.st_ino == ino) {
          return child;
        }
        if (d < depth) next.push_back(std::move(child));
      }
    }
    level = std::move(next);
  }
  return std::nullopt;
}

}  // namespace

std::string_view CgroupVersionName(CgroupVersion v) {
  return v == CgroupVersion::kV1 ? "v1" : "v2";
}

std::vector<ProcCgroupLine> ParseProcCgroup(std::string_view text) {
  std::vector<ProcCgroupLine> lines;
  for (std::string_view line : Split(text, '\n', kMaxLines)) {
    if (line.empty()) continue;
    // The path may itself contain ':', so split into three at most.
    std::vector<std::string_view> f = Split(line, ':', 3);
    if (f.size() != 3) continue;
    std::optional<uint64_t> id = ParseU64(f[0]);
    if (!id || *id > 1u << 20 || f[2].empty() || f[2][0] != '/') continue;
    ProcCgroupLine out;
    out.hierarchy_id = static_cast<int>(*id);
    if (!f[1].empty()) {
      for (std::string_view c : Split(f[1], ',', 64)) out.controllers.emplace_back(c);
    }
    out.path = std::string(f[2]);
    lines.push_back(std::move(out));
  }
  return lines;
}

std::string ProcessCgroupPath(std::string_view text) {
  std::vector<ProcCgroupLine> lines = ParseProcCgroup(text);
  for (ProcCgroupLine& line : lines) {
    if (line.hierarchy_id == 0 && line.controllers.empty()) return std::move(line.path);
  }
  return lines.empty() ? "" : std::move(lines.front().path);
}

std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo) {
  std::vector<CgroupMount> mounts;
  for (std::string_view line : Split(mountinfo, '\n', kMaxLines)) {
    // id parent maj:min root mount-point options [optional...] - fstype source super-options
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::vector<std::string_view> left = Split(line.substr(0, dash), ' ', 64);
    std::vector<std::string_view> right = Split(line.substr(dash + 3), ' ', 3);
    if (left.size() < 6 || right.size() < 3) continue;
    CgroupMount m;
    if (right[0] == "cgroup2") {
      m.version = CgroupVersion::kV2;
    } else if (right[0] == "cgroup") {
      m.version = CgroupVersion::kV1;
    } else {
      continue;
    }
    m.root = Unescape(left[3]);
    m.mount_point = Unescape(left[4]);
    for (std::string_view o : Split(right[2], ',', 256)) m.options.emplace_back(o);
    mounts.push_back(std::move(m));
  }
  return mounts;
}

std::optional<std::string> PathBelowMountRoot(std::string_view path, std::string_view root) {
  std::string_view r = root;
  while (!r.empty() && r.back() == '/') r.remove_suffix(1);
  if (path.substr(0, r.size()) != r) return std::nullopt;
  std::string_view rest = path.substr(r.size());
  if (!rest.empty() && rest.front() != '/') return std::nullopt;  // "/ab" is not below "/a"
  // "/.." components mean the cgroup lies outside the reader's namespace.
  std::string_view check = rest;
  while (!check.empty()) {
    size_t start = check.find_first_not_of('/');
    if (start == std::string_view::npos) break;
    check = check.substr(start);
    size_t end = check.find('/');
    std::string_view component = check.substr(0, end);
    if (component == "..") return std::nullopt;
    check = end == std::string_view::npos ? std::string_view() : check.substr(end);
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  return std::string(rest);
}

std::optional<uint64_t> ParseMemoryLimit(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text == "max") return std::nullopt;
  std::optional<uint64_t> v = ParseU64(text);
  if (!v || *v >= kUnlimitedV1) return std::nullopt;
  return v;
}

std::optional<uint64_t> FlatKeyedValue(std::string_view text, std::string_view key) {
  for (std::string_view line : Split(text, '\n', kMaxLines)) {
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ') {
      return ParseU64(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> MemoryReading::WorkingSet() const {
  if (!usage) return std::nullopt;
  uint64_t inactive = inactive_file.value_or(0);
  return *usage > inactive ? *usage - inactive : 0;
}

std::optional<std::string> CgroupFs::ReadSmallFile(const std::string& path) const {
  return goheap2pprof::ReadSmallFile(Path(path), kMaxFileBytes);
}

std::optional<CgroupFs::Resolved> CgroupFs::Resolve(pid_t pid, CgroupVersion version,
                                                    std::string_view path,
                                                    std::string_view required_file) const {
  const std::string target_root = "/proc/" + std::to_string(pid) + "/root";
  // Our own mounts first; then the target's, reached through its root, for
  // a cgroup outside our namespace (its path then starts with "/..", and the
  // target's mount root is shown to us the same way).
  const std::pair<std::string, std::string> views[] = {
      {"/proc/self/mountinfo", ""},
      {"/proc/" + std::to_string(pid) + "/mountinfo", target_root},
  };
  for (const auto& [mountinfo_path, prefix] : views) {
    if (!prefix.empty() && target_root_ == TargetRoot::kRefuse) break;
    std::optional<std::string> mountinfo = ReadSmallFile(mountinfo_path);
    if (!mountinfo) continue;
    const std::vector<CgroupMount> mounts = ParseCgroupMounts(*mountinfo);
    for (const CgroupMount& m : mounts) {
      if (m.version != version) continue;
      if (version == CgroupVersion::kV1 && !Contains(m.options, "memory")) continue;
      std::optional<std::string> rest = PathBelowMountRoot(path, m.root);
      if (!rest && prefix.empty()) rest = BelowAncestorMount(mounts, m, path);
      if (!rest) continue;
      Resolved r;
      r.top_dir = prefix + m.mount_point;
      r.dir = JoinPath(r.top_dir, *rest);
      r.via_target_root = !prefix.empty();
      struct stat st;
      if (::lstat(Path(JoinPath(r.dir, required_file)).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        continue;
      }
      return r;
    }
  }
  return std::nullopt;
}

std::optional<std::string> CgroupFs::BelowAncestorMount(const std::vector<CgroupMount>& mounts,
                                                        const CgroupMount& m,
                                                        std::string_view path) const {
  std::string_view root = m.root;
  const size_t k = StripDotDots(root);
  std::string_view rest = path;
  const size_t j = StripDotDots(rest);
  if (k == 0 || !(root.empty() || root == "/") || j == 0 || j > k) return std::nullopt;
  std::optional<std::string> below = PathBelowMountRoot(rest.empty() ? "/" : rest, "/");
  const std::vector<std::string>* own = OwnRootIn(mounts, m, k);
  if (!below || own == nullptr) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < k - j; ++i) out += "/" + (*own)[i];
  return out + *below;
}

const std::vector<std::string>* CgroupFs::OwnRootIn(const std::vector<CgroupMount>& mounts,
                                                    const CgroupMount& m, size_t depth) const {
  auto [it, added] = own_roots_.try_emplace(m.mount_point);
  if (!added) return it->second ? &*it->second : nullptr;
  for (const CgroupMount& own : mounts) {
    struct stat st;
    if (own.version != m.version || own.root != "/" || own.options != m.options ||
        ::stat(Path(own.mount_point).c_str(), &st) != 0) {
      continue;
    }
    it->second = FindDirByInode(Path(m.mount_point), depth, st.st_dev, st.st_ino);
    if (it->second) break;
  }
  return it->second ? &*it->second : nullptr;
}

std::optional<MemoryCgroup> CgroupFs::FindMemoryCgroup(pid_t pid) const {
  std::optional<std::string> text = ReadSmallFile("/proc/" + std::to_string(pid) + "/cgroup");
  if (!text) return std::nullopt;
  std::vector<ProcCgroupLine> lines = ParseProcCgroup(*text);
  MemoryCgroup cg;
  std::optional<Resolved> where;
  // A v1 memory line means the controller lives on v1 (hybrid or legacy),
  // whatever the v2 line says.
  for (const ProcCgroupLine& line : lines) {
    if (line.hierarchy_id != 0 && Contains(line.controllers, "memory")) {
      where = Resolve(pid, CgroupVersion::kV1, line.path, "memory.usage_in_bytes");
      cg.version = CgroupVersion::kV1;
      cg.hierarchy_path = line.path;
      break;
    }
  }
  if (!where && cg.hierarchy_path.empty()) {
    for (const ProcCgroupLine& line : lines) {
      if (line.hierarchy_id == 0 && line.controllers.empty()) {
        // memory.current exists where the memory controller is enabled; the
        // root cgroup has none but memory.stat.
        where = Resolve(pid, CgroupVersion::kV2, line.path,
                        line.path == "/" ? "memory.stat" : "memory.current");
        cg.version = CgroupVersion::kV2;
        cg.hierarchy_path = line.path;
        break;
      }
    }
  }
  if (!where) return std::nullopt;
  cg.dir = where->dir;
  cg.top_dir = where->top_dir;
  cg.via_target_root = where->via_target_root;
  // The nearest limit is the one the OOM killer enforces first; the walk
  // stops at the top of what we can see.
  for (std::string d = cg.dir;; d = Parent(d)) {
    if (LimitOf(cg.version, d)) {
      cg.limit_dir = d;
      break;
    }
    if (d.size() <= cg.top_dir.size() || d == "/") break;
  }
  return cg;
}

std::optional<uint64_t> CgroupFs::LimitOf(CgroupVersion v, const std::string& dir) const {
  std::optional<std::string> text = ReadSmallFile(
      JoinPath(dir, v == CgroupVersion::kV1 ? "memory.limit_in_bytes" : "memory.max"));
  if (!text) return std::nullopt;
  return ParseMemoryLimit(*text);
}

MemoryReading CgroupFs::Read(const MemoryCgroup& cg) const {
  MemoryReading r;
  const std::string& at = cg.limit_dir ? *cg.limit_dir : cg.dir;
  const bool v1 = cg.version == CgroupVersion::kV1;
  if (std::optional<std::string> t =
          ReadSmallFile(JoinPath(at, v1 ? "memory.usage_in_bytes" : "memory.current"))) {
    r.usage = ParseU64(*t);
  }
  if (cg.limit_dir) r.limit = LimitOf(cg.version, *cg.limit_dir);
  if (std::optional<std::string> stat = ReadSmallFile(JoinPath(at, "memory.stat"))) {
    // v1 keeps the hierarchical figure under total_*, as the kubelet reads it.
    r.inactive_file = FlatKeyedValue(*stat, v1 ? "total_inactive_file" : "inactive_file");
  }
  if (v1) {
    if (std::optional<std::string> t = ReadSmallFile(JoinPath(cg.dir, "memory.oom_control"))) {
      r.oom_kills = FlatKeyedValue(*t, "oom_kill");
    }
  } else {
    if (std::optional<std::string> t = ReadSmallFile(JoinPath(at, "memory.events"))) {
      r.max_events = FlatKeyedValue(*t, "max");
      r.oom_events = FlatKeyedValue(*t, "oom");
    }
    if (std::optional<std::string> t = ReadSmallFile(JoinPath(cg.dir, "memory.events"))) {
      r.oom_kills = FlatKeyedValue(*t, "oom_kill");
    }
  }
  return r;
}

std::optional<std::string> CgroupFs::EventsFile(const MemoryCgroup& cg) const {
  if (cg.version != CgroupVersion::kV2) return std::nullopt;
  return JoinPath(cg.limit_dir ? *cg.limit_dir : cg.dir, "memory.events");
}

std::optional<std::string> CgroupFs::PressureFile(pid_t pid) const {
  std::optional<std::string> text = ReadSmallFile("/proc/" + std::to_string(pid) + "/cgroup");
  if (!text) return std::nullopt;
  for (const ProcCgroupLine& line : ParseProcCgroup(*text)) {
    if (line.hierarchy_id != 0 || !line.controllers.empty()) continue;
    std::optional<Resolved> r = Resolve(pid, CgroupVersion::kV2, line.path, "memory.pressure");
    if (r) return JoinPath(r->dir, "memory.pressure");
  }
  return std::nullopt;
}

}  // namespace goheap2pprof
