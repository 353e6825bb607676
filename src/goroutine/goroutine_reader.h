// Reads every goroutine of a live Go process (or a core) from outside, without
// stopping it: the lock-free walk of runtime.allgs that the runtime itself
// documents (load allglen, then allgptr, then the array; goroutines created
// meanwhile may be missed), each g read, filtered as runtime/pprof's
// goroutine profile filters (dead and system goroutines out), its stack
// copied and unwound (goroutine/unwind.h), its labels read, and the g read
// again: a goroutine whose status, id, saved registers, stack bounds or
// labels changed meanwhile is read again, up to a bound, then dropped and
// counted. Reads are batched: one ReadMany for a batch of g's, one for their
// stacks, one for the re-reads.
//
//   GoroutineSnapshot s = ReadGoroutines(mem, ctx, limits);
//   for (const Goroutine& g : s.goroutines) use(g.pcs, g.labels);
//   report(s.stats.retried, s.stats.dropped);
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gobin/pclntab.h"
#include "goroutine/labels.h"
#include "proc/memory_reader.h"
#include "runtime/goroutine_layout.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

// Bounds of one read. The defaults fit 1,000,000 goroutines of usual depth;
// past a bound the read stops with Error(kUnsupported) naming it.
struct GoroutineLimits {
  uint64_t max_goroutines = 10'000'000;           // allglen above this is refused
  uint64_t max_stack_bytes = 256 * 1024;          // copied per goroutine, from its SP up
  uint64_t max_total_bytes = uint64_t{16} << 30;  // over the whole read
  int max_attempts = 5;                           // reads of a goroutine that moves
  // Before each new round of reads of the goroutines that moved, a pause,
  // four times longer each round (1, 4, 16, 64 ms): a GC scan or a stack
  // copy lasts microseconds, so a goroutine it caught is still by then.
  std::chrono::microseconds retry_pause{1000};
  size_t batch = 4096;  // goroutines per ReadMany
};

// Where the runtime's goroutine variables are in this process (runtime
// addresses), and what the walk needs of the executable.
struct GoroutineContext {
  uint64_t allglen = 0;
  uint64_t allgptr = 0;
  // runtime.fingStatus (1.20+, bit 2: running a finalizer) or
  // runtime.fingRunning (bool, up to 1.19); 0 if absent (the finalizer
  // goroutine is then taken as idle, i.e. a system goroutine).
  uint64_t fing = 0;
  bool fing_is_bool = false;
  const Pclntab* pclntab = nullptr;  // link-time addresses
  uint64_t bias = 0;
  GoroutineLayout layout;
  FuncIds func_ids;
  size_t profile_depth = 32;  // logical frames kept: 32 before 1.23, 128 from it
  // Keep goroutines on a CPU too, without a stack (Goroutine::on_cpu): the
  // debug=2 dump lists them, the profile does not.
  bool keep_running = false;
  bool async_preempt_traps = true;  // 1.21+ (goroutine/unwind.h)
};

struct Goroutine {
  uint64_t g = 0;  // address of the runtime.g
  uint64_t goid = 0;
  uint32_t status = 0;
  uint8_t wait_reason = 0;
  int64_t wait_since = 0;
  uint64_t gopc = 0;
  uint64_t startpc = 0;
  uint64_t parent_goid = 0;
  std::vector<uint64_t> pcs;  // logical frames, runtime addresses, innermost first
  Labels labels;
  uint64_t allgs_index = 0;       // where allgs lists it: the dump's order
  bool locked_to_thread = false;  // g.lockedm != 0
  // Running on a CPU (GoroutineContext::keep_running): no pcs, no labels.
  bool on_cpu = false;
  // g.stack: the bounds of its stack, [lo, hi), as the read saw them (the
  // stack `mem` sums per creation site).
  uint64_t stack_lo = 0;
  uint64_t stack_hi = 0;
};

struct GoroutineReadStats {
  uint64_t allglen = 0;    // entries of allgs walked
  uint64_t dead = 0;       // dead, idle (or 1.26+ deadextra)
  uint64_t system = 0;     // left out as runtime/pprof does
  uint64_t running = 0;    // on a CPU: no stable registers (left out unless keep_running)
  uint64_t retried = 0;    // goroutines read again because they moved
  uint64_t dropped = 0;    // still moving after max_attempts reads
  uint64_t truncated = 0;  // stacks cut by the depth or the copy bound
  uint64_t bytes_read = 0;
};

struct GoroutineSnapshot {
  std::vector<Goroutine> goroutines;  // in allgs order (allgs_index)
  GoroutineReadStats stats;
};

// Throws Error(kMalformed) when allglen/allgptr make no sense and
// Error(kUnsupported) past a limit; throws what the reader throws when the
// process goes away. A single goroutine that cannot be read is dropped and
// counted, never fatal.
GoroutineSnapshot ReadGoroutines(MemoryReader& mem, const GoroutineContext& ctx,
                                 const GoroutineLimits& limits);

}  // namespace goheap2pprof
