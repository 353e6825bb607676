// The memory-statistics pass: the Go runtime's MemStats and runtime/metrics
// values of a target, read from outside through the same CaptureSource as a
// heap capture (a live process, a qemu guest, a core file, test memory).
// How the read works: memstats/memstats_reader.h and
// docs/memory-statistics.md.
//
//   std::unique_ptr<CaptureSource> src = OpenProcessSource(pid, {});
//   auto analysis = ExecutableAnalysis::Create(src->executable().elf);
//   GoRuntimeStats s = ReadGoRuntimeStats(*src, *analysis);
//   uint64_t heap = s.mem.heap_alloc;
#pragma once

#include <optional>
#include <string>

#include "app/executable_analysis.h"
#include "app/source.h"
#include "memstats/go_runtime_stats.h"

namespace goheap2pprof {

// Throws Error: kUnsupported (a variable or layout that cannot be found or
// proven), kMalformed (unreadable or impossible target memory, or no
// consistent read within the bounded retries), kNoSuchProcess/kPermission
// as the source's memory does. `notes` of the result say, for -v, where each
// variable was found, where the layout came from and what the read cost.
GoRuntimeStats ReadGoRuntimeStats(CaptureSource& source, const ExecutableAnalysis& analysis);

// Beside a heap capture, memory statistics are optional: the records are
// worth having without them (the debug=1 text then ends where the records
// end, growth leaves /gc/heap/live:bytes out). The one rule for when they
// are absent rather than failing the caller: kNoSuchProcess and kPermission
// propagate, since they say the target is gone or closed to us and the
// capture beside would fail the same way; every other kind (kUnsupported: a
// layout or variable not proven for this Go; kMalformed: no consistent read;
// anything else the read throws) makes them absent, with the reason.
struct OptionalRuntimeStats {
  std::optional<GoRuntimeStats> stats;
  std::string absent_reason;  // without stats: the error's message
};
OptionalRuntimeStats ReadOptionalGoRuntimeStats(CaptureSource& source,
                                                const ExecutableAnalysis& analysis);

}  // namespace goheap2pprof
