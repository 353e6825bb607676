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
  std::string comm;   // without the parentheses
  char state = '?';   // R, S, D, Z, X, ...
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
};

std::vector<MapsEntry> ParseProcMaps(std::string_view text);
std::vector<MapsEntry> ReadProcMaps(pid_t pid);

// Reads a whole /proc file; throws kNoSuchProcess / kPermission / kIo.
std::string ReadProcFile(pid_t pid, std::string_view name);

// Parses a pid argument strictly ("123", no sign, no junk).
std::optional<pid_t> ParsePid(std::string_view text);

}  // namespace goheap2pprof
