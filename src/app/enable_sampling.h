// `goheap2pprof enable-sampling`: turns heap sampling on (or off) in a running
// Go program by assigning runtime.MemProfileRate from outside, as the program
// itself could. The one operation of goheap2pprof that writes to a target:
// one aligned 8-byte word, with process_vm_writev (proc/memory_writer.h),
// at an address proven from the symbol table or recovered from the runtime's
// machine code, for a Go version whose rule is proven
// (runtime/sampling_switch.h). It cannot bring back allocations made before
// it ran. docs/enable-sampling.md has the risk, the rights and the proofs.
//
//   SamplingChange c = SetSamplingRate(pid, {.rate = 512 * 1024}, log);
//   std::cout << DescribeChange(c) << "\n";
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "app/process_source.h"
#include "proc/memory_reader.h"
#include "proc/memory_writer.h"

namespace goheap2pprof {

// The runtime's own default (runtime.MemProfileRate = 512 * 1024).
inline constexpr int64_t kDefaultSamplingRate = 512 * 1024;

// How many times a write lost to the program (it assigned the rate itself
// between our write and the re-read) is tried again before giving up.
inline constexpr int kMaxRateWrites = 5;

struct EnableSamplingOptions {
  int64_t rate = kDefaultSamplingRate;  // 0: --off
  ExecutableOptions executable;
};

// What WriteRate found and did.
struct RateWrite {
  int64_t old_rate = 0;  // before the first write
  int64_t new_rate = 0;  // read back after the last write
  int writes = 0;        // 0: the rate already was the request
};

// One enable-sampling in one process.
struct SamplingChange {
  pid_t pid = 0;
  std::string go_version;
  uint64_t address = 0;  // of runtime.MemProfileRate in the process
  RateWrite write;
};

// Each write, for -v: "write runtime.MemProfileRate at 0x...: 0 -> 1".
using WriteLog = std::function<void(const std::string&)>;

// --rate: bytes, plain ("524288") or with a unit ("512KiB", "4MiB", "1"
// = every allocation). Throws Error(kUsage) for anything else, 0 and
// negatives (--off turns sampling off).
int64_t ParseSamplingRate(std::string_view text);

// Reads the word at addr; if it is not rate, writes rate and reads it back.
// A re-read that is not rate means the program assigned the rate itself in
// between (a lost write, never a torn one: see docs/enable-sampling.md):
// tried again, kMaxRateWrites writes at most, then Error(kMalformed) naming
// the values seen. Each write is passed to log. Throws as mem and writer do.
RateWrite WriteRate(MemoryReader& mem, WordWriter& writer, uint64_t addr, int64_t rate,
                    const WriteLog& log);

// Opens pid as a capture does (a qemu-user emulator's guest too), analyses
// its executable, proves where runtime.MemProfileRate is and that this Go
// version needs nothing but it, and sets it to options.rate. Throws Error:
// kUnsupported (a Go version whose rule is not proven, an address not
// proven writable, a variable that cannot be recovered from a stripped
// binary), and what opening, reading and writing the process throw.
SamplingChange SetSamplingRate(pid_t pid, const EnableSamplingOptions& options,
                               const WriteLog& log);

// The line printed for a change: what changed, and what that means.
std::string DescribeChange(const SamplingChange& change);

}  // namespace goheap2pprof
