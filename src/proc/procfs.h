// Parsing of /proc/<pid>/{stat,maps} and checks on the process itself. The
// parsers take text so they can be unit tested and fuzzed; the Read*
// functions fetch the text for a live pid.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace goheap2pprof
