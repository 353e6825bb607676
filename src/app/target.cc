#include "app/target.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "base/error.h"

namespace goheap2pprof {

namespace {
constexpr uint64_t kPfKthread = 0x00200000;  // PF_KTHREAD in /proc/<pid>/stat flags
constexpr uint64_t kPageMask = ~uint64_t{0xfff};

std::string ProcPath(pid_t pid, const std::string& rest) {
  return "/proc/" + std::to_string(pid) + "/" + rest;
}
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
  ProcStat now;
  try {
    now = ReadProcStat(pid);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kNoSuchProcess) throw;
    throw Error(ErrorKind::kNoSuchProcess, "process ", pid, " exited during the capture");
  }
  if (now.start_time != at_start.start_time) {
    throw Error(ErrorKind::kNoSuchProcess, "pid ", pid,
                " now belongs to another process (start time changed from ", at_start.start_time,
                " to ", now.start_time, "): the target exited during the capture");
  }
  if (now.state == 'Z' || now.state == 'X') {
    throw Error(ErrorKind::kNoSuchProcess, "process ", pid, " exited during the capture");
  }
}

ElfFile OpenTargetExecutable(pid_t pid) {
  std::string path = ProcPath(pid, "exe");
  char target[4096];
  ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  if (n < 0) {
    int err = errno;
    if (err == ENOENT) {
      throw Error(ErrorKind::kNotGo, "process ", pid,
                  " has no executable (", path, " is empty): it is a kernel thread or exiting");
    }
    if (err == EACCES || err == EPERM) {
      throw Error(ErrorKind::kPermission, "not permitted to inspect process ", pid, " (reading ",
                  path, ": ", std::strerror(err), ")");
    }
    throw Error(ErrorKind::kIo, "cannot read ", path, ": ", std::strerror(err));
  }
  target[n] = '\0';
  return ElfFile::Open(path, std::string(target) + " (pid " + std::to_string(pid) + ")");
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
  if (n < 0) throw Error(ErrorKind::kNoSuchProcess, "cannot read ", path, ": ", std::strerror(errno));
  return {st.st_ino, std::string(target, static_cast<size_t>(n))};
}

bool MapsEntryIsFile(const MapsEntry& e, const FileIdentity& id) {
  // Device numbers in maps differ from stat's on overlay filesystems, so the
  // inode plus the path the kernel prints for both identifies the file.
  return e.inode != 0 && e.inode == id.inode && e.path == id.path;
}

uint64_t ComputeLoadBias(const ElfFile& exe, const std::vector<MapsEntry>& maps,
                         const FileIdentity& id) {
  for (const MapsEntry& e : maps) {
    if (!MapsEntryIsFile(e, id)) continue;
    for (const ElfSegment& seg : exe.segments()) {
      if (seg.type != 1 /* PT_LOAD */) continue;
      if ((seg.offset & kPageMask) != e.offset) continue;
      uint64_t bias = e.start - (seg.vaddr & kPageMask);
      if (exe.type() == 2 /* ET_EXEC */ && bias != 0) {
        throw Error(ErrorKind::kMalformed, exe.name(), " is a fixed-address executable but is "
                    "mapped at ", Hex(e.start), " instead of ", Hex(seg.vaddr & kPageMask));
      }
      return bias;
    }
  }
  throw Error(ErrorKind::kMalformed, "no mapping of ", exe.name(),
              " in /proc/maps matches one of its PT_LOAD segments; cannot compute the load bias");
}

std::optional<ElfFile> OpenMappedFile(pid_t pid, const MapsEntry& e) {
  std::string file = e.path;
  constexpr std::string_view kDeleted = " (deleted)";
  if (file.ends_with(kDeleted)) file.resize(file.size() - kDeleted.size());
  char range[64];
  std::snprintf(range, sizeof(range), "%llx-%llx", static_cast<unsigned long long>(e.start),
                static_cast<unsigned long long>(e.end));
  for (const std::string& candidate :
       {ProcPath(pid, "map_files/") + range, ProcPath(pid, "root") + file}) {
    try {
      return ElfFile::Open(candidate, file);
    } catch (const Error&) {
      // Not readable or not an ELF we read: try the next way.
    }
  }
  return std::nullopt;
}

std::vector<ProfileMapping> ProfileMappings(pid_t pid, const std::vector<MapsEntry>& maps,
                                            const FileIdentity& exe_id,
                                            const std::string& exe_build_id) {
  std::vector<ProfileMapping> out;
  std::map<std::string, std::string> build_ids;  // by path
  constexpr std::string_view kDeleted = " (deleted)";
  for (const MapsEntry& e : maps) {
    if (e.perms.size() < 4 || e.perms[2] != 'x') continue;
    if (e.path.empty()) continue;
    std::string file = e.path;
    if (file.size() >= kDeleted.size() && file.ends_with(kDeleted)) {
      file.resize(file.size() - kDeleted.size());
    }
    ProfileMapping m{e.start, e.end, e.offset, file, "", false};
    if (MapsEntryIsFile(e, exe_id)) {
      m.build_id = exe_build_id;
    } else if (!file.empty() && file[0] == '/') {
      auto it = build_ids.find(file);
      if (it == build_ids.end()) {
        // Not readable or not ELF: runtime/pprof reports no build ID either.
        std::optional<ElfFile> elf = OpenMappedFile(pid, e);
        it = build_ids.emplace(file, elf ? elf->GnuBuildId() : std::string()).first;
      }
      m.build_id = it->second;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace goheap2pprof
