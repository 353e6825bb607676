#include "proc/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>

#include "base/error.h"
#include "base/unique_fd.h"

namespace goheap2pprof {

namespace {

std::string_view NextField(std::string_view* rest) {
  size_t start = rest->find_first_not_of(' ');
  if (start == std::string_view::npos) {
    *rest = {};
    return {};
  }
  size_t end = rest->find(' ', start);
  if (end == std::string_view::npos) end = rest->size();
  std::string_view field = rest->substr(start, end - start);
  *rest = rest->substr(end);
  return field;
}

template <typename T>
bool ParseNumber(std::string_view s, T* out, int base = 10) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::optional<pid_t> ParsePid(std::string_view text) {
  pid_t pid = 0;
  if (text.empty() || text.size() > 10 || text[0] == '0') return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9') return std::nullopt;
  if (!ParseNumber(text, &pid) || pid <= 0) return std::nullopt;
  return pid;
}

ProcStat ParseProcStat(std::string_view text) { return TryParseProcStat(text).value(); }

std::vector<MapsEntry> ParseProcMaps(std::string_view text) {
  std::vector<MapsEntry> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    std::string_view rest = line;
    std::string_view range = NextField(&rest);
    std::string_view perms = NextField(&rest);
    std::string_view offset = NextField(&rest);
    std::string_view dev = NextField(&rest);
    std::string_view inode = NextField(&rest);
    MapsEntry e;
    size_t dash = range.find('-');
    if (dash == std::string_view::npos || !ParseNumber(range.substr(0, dash), &e.start, 16) ||
        !ParseNumber(range.substr(dash + 1), &e.end, 16) || e.end < e.start || perms.size() != 4 ||
        !ParseNumber(offset, &e.offset, 16) || dev.empty() || !ParseNumber(inode, &e.inode)) {
      throw Error(ErrorKind::kMalformed, "/proc maps: cannot parse line \"", line.substr(0, 200),
                  "\"");
    }
    e.perms = std::string(perms);
    e.dev = std::string(dev);
    size_t path_start = rest.find_first_not_of(' ');
    if (path_start != std::string_view::npos) e.path = std::string(rest.substr(path_start));
    out.push_back(std::move(e));
  }
  return out;
}

std::string ProcPath(pid_t pid, std::string_view rest) {
  return "/proc/" + std::to_string(pid) + "/" + std::string(rest);
}

std::string ReadProcFile(pid_t pid, std::string_view name) {
  std::optional<std::string> text = ReadProcFileIfPresent(pid, name);
  if (!text) {
    throw Error(ErrorKind::kNoSuchProcess, "no process with pid ", pid, " (", ProcPath(pid, name),
                ")");
  }
  return std::move(*text);
}

std::optional<std::string> ReadProcFileIfPresent(pid_t pid, std::string_view name) {
  std::string path = ProcPath(pid, name);
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    if (err == ENOENT || err == ESRCH) return std::nullopt;
    if (err == EACCES || err == EPERM) {
      throw Error(ErrorKind::kPermission, "not permitted to inspect process ", pid, " (opening ",
                  path, ": ", std::strerror(err), ")");
    }
    throw Error(ErrorKind::kIo, "cannot open ", path, ": ", std::strerror(err));
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      if (err == ESRCH) return std::nullopt;  // exited while we read
      if (err == EACCES || err == EPERM) {
        throw Error(ErrorKind::kPermission, "not permitted to inspect process ", pid, " (reading ",
                    path, ": ", std::strerror(err), ")");
      }
      throw Error(ErrorKind::kIo, "cannot read ", path, ": ", std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (256u << 20)) {
      throw Error(ErrorKind::kMalformed, path, " is larger than 256 MiB");
    }
  }
  return out;
}

ProcStat ReadProcStat(pid_t pid) { return ParseProcStat(ReadProcFile(pid, "stat")); }

std::vector<MapsEntry> ReadProcMaps(pid_t pid) { return ParseProcMaps(ReadProcFile(pid, "maps")); }

namespace {
constexpr uint64_t kPfKthread = 0x00200000;  // PF_KTHREAD in /proc/<pid>/stat flags
}  // namespace

ProcStat IdentifyProcess(pid_t pid) {
  ProcStat st = ReadProcStat(pid);
  if (st.state == 'Z' || st.state == 'X') {
    throw Error(ErrorKind::kNoSuchProcess, "process ", pid, " (", st.comm,
                ") is a zombie: it has exited and has no memory left to read");
  }
  if (st.flags & kPfKthread) {
    throw Error(ErrorKind::kNotGo, "process ", pid, " (", st.comm,
                ") is a kernel thread, not a Go program");
  }
  return st;
}

void CheckSameProcess(pid_t pid, const ProcStat& at_start) {
  std::optional<std::string> text = ReadProcFileIfPresent(pid, "stat");
  if (!text) throw Error(ErrorKind::kNoSuchProcess, "process ", pid, " exited during the capture");
  const ProcStat now = ParseProcStat(*text);
  if (now.start_time != at_start.start_time) {
    throw Error(ErrorKind::kNoSuchProcess, "pid ", pid,
                " now belongs to another process (start time changed from ", at_start.start_time,
                " to ", now.start_time, "): the target exited during the capture");
  }
  if (now.state == 'Z' || now.state == 'X') {
    throw Error(ErrorKind::kNoSuchProcess, "process ", pid, " exited during the capture");
  }
}

FileIdentity ExecutableIdentity(pid_t pid) {
  struct stat st;
  std::string path = ProcPath(pid, "exe");
  if (stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == EACCES || err == EPERM)
      throw Error(ErrorKind::kPermission, "cannot stat ", path, ": ", std::strerror(err));
    throw Error(ErrorKind::kNoSuchProcess, "cannot stat ", path, ": ", std::strerror(err));
  }
  char target[4096];
  ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  if (n < 0) {
    throw Error(ErrorKind::kNoSuchProcess, "cannot read ", path, ": ", std::strerror(errno));
  }
  return {st.st_ino, std::string(target, static_cast<size_t>(n))};
}

bool MapsEntryIsFile(const MapsEntry& e, const FileIdentity& id) {
  // Device numbers in maps differ from stat's on overlay filesystems, so the
  // inode plus the path the kernel prints for both identifies the file.
  return e.inode != 0 && e.inode == id.inode && e.path == id.path;
}

std::string StripDeleted(std::string path) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  return path;
}

std::vector<std::string> MappedFilePaths(pid_t pid, const MapsEntry& e) {
  char range[64];
  std::snprintf(range, sizeof(range), "%llx-%llx", static_cast<unsigned long long>(e.start),
                static_cast<unsigned long long>(e.end));
  return {ProcPath(pid, "map_files/") + range, ProcPath(pid, "root") + StripDeleted(e.path)};
}

namespace {

// A "Key:\t  123 kB" line of a status text, in bytes.
std::optional<uint64_t> StatusBytes(std::string_view status, std::string_view key) {
  for (size_t at = 0; at < status.size();) {
    size_t nl = status.find('\n', at);
    std::string_view line = status.substr(at, nl == std::string_view::npos ? nl : nl - at);
    at = nl == std::string_view::npos ? status.size() : nl + 1;
    if (!line.starts_with(key) || line.substr(key.size(), 1) != ":") continue;
    line.remove_prefix(key.size() + 1);
    line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
    uint64_t kib = 0;
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), kib);
    if (ec != std::errc() || std::string_view(ptr, line.data() + line.size() - ptr) != " kB" ||
        kib > (UINT64_MAX >> 10)) {
      return std::nullopt;
    }
    return kib << 10;
  }
  return std::nullopt;
}

}  // namespace

ProcStatusMemory ParseProcStatusMemory(std::string_view status) {
  return {.vm_rss = StatusBytes(status, "VmRSS"),
          .rss_anon = StatusBytes(status, "RssAnon"),
          .rss_file = StatusBytes(status, "RssFile"),
          .rss_shmem = StatusBytes(status, "RssShmem"),
          .vm_hwm = StatusBytes(status, "VmHWM")};
}

std::optional<ProcStatusMemory> ReadProcStatusMemory(pid_t pid) {
  std::optional<std::string> status = ReadProcFileIfPresent(pid, "status");
  if (!status) return std::nullopt;
  return ParseProcStatusMemory(*status);
}

uint64_t BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  std::string key;
  uint64_t value = 0;
  while (in >> key) {
    if (key == "btime" && (in >> value)) return value;
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

// --- Process facts for the agent's scans.

Expected<ProcStat> TryParseProcStat(std::string_view text) {
  // "pid (comm) state ppid ..." where comm may contain anything, so the comm
  // ends at the LAST ')'.
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return Error(ErrorKind::kMalformed, "/proc stat line has no (comm)");
  }
  ProcStat st;
  std::string_view pid_text = text.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  if (!ParseNumber(pid_text, &st.pid)) return Error(ErrorKind::kMalformed, "/proc stat: bad pid");
  st.comm = std::string(text.substr(open + 1, close - open - 1));
  std::string_view rest = text.substr(close + 1);
  // Fields after comm, numbered as in proc(5): 3 state, 4 ppid, ... 9 flags,
  // ... 22 starttime.
  std::string_view state = NextField(&rest);
  if (state.size() != 1) return Error(ErrorKind::kMalformed, "/proc stat: bad state");
  st.state = state[0];
  for (int field = 4; field <= 22; ++field) {
    std::string_view f = NextField(&rest);
    if (f.empty()) return Error(ErrorKind::kMalformed, "/proc stat: only ", field - 1, " fields");
    if (field == 9 && !ParseNumber(f, &st.flags))
      return Error(ErrorKind::kMalformed, "/proc stat: bad flags");
    if (field == 22 && !ParseNumber(f, &st.start_time))
      return Error(ErrorKind::kMalformed, "/proc stat: bad starttime");
  }
  return st;
}

std::optional<ProcStat> ReadLiveProcStat(pid_t pid) {
  std::optional<std::string> text = ReadProcSmallFile(pid, "stat", 4096);
  if (!text) return std::nullopt;
  Expected<ProcStat> st = TryParseProcStat(*text);
  if (!st || st->state == 'Z' || st->state == 'X' || (st->flags & kPfKthread) != 0) {
    return std::nullopt;  // unparsable, zombie, dead, or a kernel thread
  }
  return std::move(st).value();
}

UniqueFd OpenRegularFile(const std::string& path, bool read_write) {
  UniqueFd fd(::open(path.c_str(), (read_write ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW |
                                       O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return fd;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return UniqueFd();
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return UniqueFd();
  }
  return fd;
}

std::optional<std::string> ReadSmallFile(const std::string& path, size_t max, int* error) {
  if (error) *error = 0;
  UniqueFd fd = OpenRegularFile(path);
  if (!fd.valid()) {
    if (error) *error = errno;
    return std::nullopt;
  }
  std::string out;
  char buf[8192];
  while (out.size() < max) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (error) *error = errno;
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  if (out.size() > max) out.resize(max);
  return out;
}

bool IsResourceError(int err) { return err == EMFILE || err == ENFILE || err == ENOMEM; }

namespace {

[[noreturn]] void ThrowReadError(const std::string& what, int err) {
  throw Error(ErrorKind::kIo, "cannot read ", what, ": ", std::strerror(err));
}

}  // namespace

std::optional<std::string> ReadProcSmallFile(pid_t pid, std::string_view name, size_t max,
                                             const std::string& root) {
  const std::string path = root + ProcPath(pid, name);
  int err = 0;
  std::optional<std::string> text = ReadSmallFile(path, max, &err);
  if (!text && IsResourceError(err)) ThrowReadError(path, err);
  return text;
}

std::optional<uid_t> ProcessUid(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (IsResourceError(errno)) ThrowReadError(dir, errno);
    return std::nullopt;
  }
  return st.st_uid;
}

std::optional<std::string> ReadExeLink(pid_t pid, bool* denied, const std::string& root) {
  if (denied) *denied = false;
  char exe[4096];
  const ssize_t n = ::readlink((root + ProcPath(pid, "exe")).c_str(), exe, sizeof(exe) - 1);
  if (n <= 0) {
    // EACCES/EPERM: ptrace access mode denied; ENOENT: a kernel thread.
    if (denied) *denied = errno == EACCES || errno == EPERM;
    return std::nullopt;
  }
  return std::string(exe, static_cast<size_t>(n));
}

std::optional<struct stat> StatProcExe(pid_t pid) {
  struct stat st;
  if (::stat(ProcPath(pid, "exe").c_str(), &st) != 0) return std::nullopt;
  return st;
}

void ForEachProcess(const std::function<void(pid_t, const struct stat* exe)>& visit) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir("/proc"), closedir);
  if (!d) ThrowReadError("/proc", errno);
  while (true) {
    errno = 0;
    dirent* e = readdir(d.get());
    if (!e) {
      if (errno != 0) ThrowReadError("/proc", errno);
      return;
    }
    std::optional<pid_t> pid = ParsePid(e->d_name);
    if (!pid || *pid == getpid()) continue;
    // Relative to /proc's descriptor: the lookup starts at the pid.
    struct stat st;
    const std::string exe = std::string(e->d_name) + "/exe";
    const bool have = fstatat(dirfd(d.get()), exe.c_str(), &st, 0) == 0;
    visit(*pid, have ? &st : nullptr);
  }
}

std::map<std::string, std::string> ParseEnviron(std::string_view text,
                                                const std::vector<std::string>& wanted) {
  std::map<std::string, std::string> found;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view kv = text.substr(start, end - start);
    size_t eq = kv.find('=');
    if (eq != std::string_view::npos) {
      std::string key(kv.substr(0, eq));
      if (std::find(wanted.begin(), wanted.end(), key) != wanted.end()) {
        found.emplace(key, std::string(kv.substr(eq + 1)));
      }
    }
    start = end + 1;
  }
  return found;
}

uint64_t OwnEffectiveCapabilities() {
  std::optional<std::string> status = ReadSmallFile("/proc/self/status");
  if (!status) return 0;
  constexpr std::string_view kKey = "\nCapEff:";
  const size_t at = status->find(kKey);
  if (at == std::string::npos) return 0;
  std::string_view value(*status);
  value.remove_prefix(at + kKey.size());
  value.remove_prefix(std::min(value.find_first_not_of(" \t"), value.size()));
  value = value.substr(0, value.find('\n'));
  uint64_t caps = 0;
  return ParseNumber(value, &caps, 16) ? caps : 0;
}

}  // namespace goheap2pprof
