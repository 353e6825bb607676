// Parsing of /proc/<pid>/{stat,maps,status} and checks on the process itself,
// and the process facts the agent's scans ask for (owner, executable,
// environ), with the one bounded small-file reader for /proc and cgroupfs. The
// parsers take text so they can be unit tested and fuzzed; the Read*
// functions fetch the text for a live pid.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "base/unique_fd.h"

namespace goheap2pprof {

struct ProcStat {
  pid_t pid = 0;
  std::string comm;  // without the parentheses
  char state = '?';  // R, S, D, Z, X, ...
  uint64_t flags = 0;
  uint64_t start_time = 0;  // clock ticks after boot: with pid, identifies the process
};

// Parses the single line of /proc/<pid>/stat. comm may contain spaces and ')'.
ProcStat ParseProcStat(std::string_view text);
ProcStat ReadProcStat(pid_t pid);

struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  std::string perms;  // "r-xp"
  uint64_t offset = 0;
  std::string dev;
  uint64_t inode = 0;
  std::string path;  // as printed, possibly with " (deleted)"; may be empty

  bool readable() const { return perms.size() >= 1 && perms[0] == 'r'; }
  bool executable() const { return perms.size() >= 3 && perms[2] == 'x'; }
};

std::vector<MapsEntry> ParseProcMaps(std::string_view text);
std::vector<MapsEntry> ReadProcMaps(pid_t pid);

// "/proc/<pid>/<rest>".
std::string ProcPath(pid_t pid, std::string_view rest);

// Reads a whole /proc file; throws kNoSuchProcess / kPermission / kIo.
std::string ReadProcFile(pid_t pid, std::string_view name);
// The same, but nullopt when the process does not exist (any more): for
// callers to whom that is an expected outcome rather than a failure.
std::optional<std::string> ReadProcFileIfPresent(pid_t pid, std::string_view name);

// Checks that pid names a live user process and returns its stat. Throws
// kNoSuchProcess (absent, zombie), kNotGo (kernel thread) or kPermission.
ProcStat IdentifyProcess(pid_t pid);

// Throws kNoSuchProcess if pid now names another process (or none) than the
// one whose stat was at_start.
void CheckSameProcess(pid_t pid, const ProcStat& at_start);

// A mapped file as /proc shows it: inode plus the path the kernel prints.
struct FileIdentity {
  uint64_t inode = 0;
  std::string path;  // as in maps / readlink of /proc/<pid>/exe, maybe with " (deleted)"
};
// Inode and path of the executable behind /proc/<pid>/exe. Throws
// kPermission, or kNoSuchProcess when it cannot be read.
FileIdentity ExecutableIdentity(pid_t pid);

// True if a maps line maps the file with this identity.
bool MapsEntryIsFile(const MapsEntry& e, const FileIdentity& id);

// A maps path without the " (deleted)" the kernel appends to unlinked files.
std::string StripDeleted(std::string path);

// The paths through which the file behind a maps entry can be opened from
// outside the target: /proc/<pid>/map_files/<range> (exactly what is mapped,
// even if deleted) and /proc/<pid>/root/<path> (the target's mount
// namespace), in that order.
std::vector<std::string> MappedFilePaths(pid_t pid, const MapsEntry& e);

// The memory lines of /proc/<pid>/status, in bytes (the kernel prints kB,
// meaning KiB). Absent when the line is missing or malformed: RssAnon and
// friends appeared in Linux 4.5.
struct ProcStatusMemory {
  std::optional<uint64_t> vm_rss;     // VmRSS: resident, = anon + file + shmem
  std::optional<uint64_t> rss_anon;   // RssAnon
  std::optional<uint64_t> rss_file;   // RssFile
  std::optional<uint64_t> rss_shmem;  // RssShmem
  std::optional<uint64_t> vm_hwm;     // VmHWM: peak resident set
};
ProcStatusMemory ParseProcStatusMemory(std::string_view status);
// The same for a live pid; nullopt when the process does not exist (any
// more). Throws as ReadProcFile for anything else.
std::optional<ProcStatusMemory> ReadProcStatusMemory(pid_t pid);

// Parses a pid argument strictly ("123", no sign, no junk).
std::optional<pid_t> ParsePid(std::string_view text);

// Seconds since the epoch at which the system booted (btime of /proc/stat),
// to turn a process's start time in clock ticks into a date; 0 if unknown.
uint64_t BootTimeSeconds();

// --- Process facts for the agent's scans (discovery, watch, liveness):
// reads whose failures a scan expects come back as nullopt or an Error
// value, so one odd process is skipped without an exception.

// ParseProcStat, with the Error returned rather than thrown.
Expected<ProcStat> TryParseProcStat(std::string_view text);

// The stat of a live user process, nullopt when it is gone, a zombie, a
// kernel thread, unreadable or unparsable. Throws kIo as ReadSmallFile.
std::optional<ProcStat> ReadLiveProcStat(pid_t pid);

// Opens path for reading (read_write: and writing, for a PSI trigger) the way
// every /proc and cgroup file is opened: O_NOFOLLOW (a symlink as the last
// component is refused), O_NONBLOCK (a FIFO cannot block the open or the
// read), and then fstat must say a regular file (procfs and cgroupfs files
// are). An invalid fd with errno set (ELOOP, ENXIO, EINVAL for a file that is
// not regular...) otherwise.
UniqueFd OpenRegularFile(const std::string& path, bool read_write = false);

// /proc text files and cgroupfs files are small; bound them anyway (a
// cgroup path is at most a few KiB, environ at most an ARG_MAX-sized area).
inline constexpr size_t kSmallFileMax = size_t{1} << 20;

// At most max bytes of a small regular file (OpenRegularFile); nullopt if it
// cannot be opened or read, with the errno in *error when given (0 on
// success).
std::optional<std::string> ReadSmallFile(const std::string& path, size_t max = kSmallFileMax,
                                         int* error = nullptr);

// Out of descriptors or memory: the failure is the reader's, not the file's.
bool IsResourceError(int err);

// ReadSmallFile of /proc/<pid>/<name> under root ("" is the real /proc),
// for a scan: nullopt if the process is gone or the file is not ours to
// read; throws kIo when it fails for want of descriptors or memory.
std::optional<std::string> ReadProcSmallFile(pid_t pid, std::string_view name,
                                             size_t max = kSmallFileMax,
                                             const std::string& root = "");

// The owner of /proc/<pid> (the process's uid); nullopt if it is gone.
// Throws kIo as ReadProcSmallFile.
std::optional<uid_t> ProcessUid(pid_t pid);

// Where /proc/<pid>/exe (under root) links to; nullopt if it cannot be read,
// with *denied (when given) saying whether ptrace access was refused
// (EACCES/EPERM) rather than the link missing (a kernel thread, gone).
std::optional<std::string> ReadExeLink(pid_t pid, bool* denied = nullptr,
                                       const std::string& root = "");

// The stat of the executable behind /proc/<pid>/exe; nullopt if it cannot
// be stat'ed (gone, a kernel thread, not ours to read).
std::optional<struct stat> StatProcExe(pid_t pid);

// Calls visit with every pid in /proc but our own, in directory order, and
// the stat of its executable (nullptr when it cannot be stat'ed), taken
// relative to /proc's descriptor. Throws kIo when /proc cannot be listed.
void ForEachProcess(const std::function<void(pid_t, const struct stat* exe)>& visit);

// The values of the wanted variables in an environ text (NUL-separated
// NAME=value entries).
std::map<std::string, std::string> ParseEnviron(std::string_view text,
                                                const std::vector<std::string>& wanted);

// CapEff of /proc/self/status: the effective capabilities of this process;
// 0 when unreadable.
uint64_t OwnEffectiveCapabilities();

}  // namespace goheap2pprof
