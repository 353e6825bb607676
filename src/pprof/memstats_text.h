// The `# runtime.MemStats` block that ends the runtime's heap?debug=1 (and
// allocs?debug=1) text, laid out as runtime/pprof's writeHeapInternal writes
// it, and Go's %v of a float64 that the block's GCCPUFraction line needs.
//
//   text += MemStatsBlock(stats.mem, /*max_rss=*/vm_hwm_kib * 1024);
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "memstats/go_runtime_stats.h"

namespace goheap2pprof {

// fmt's %v of a float64: strconv.FormatFloat(x, 'g', -1, 64), the shortest
// digits that read back as x, in e-form ("5.3e-05", "1.234567e+06") when the
// decimal exponent is below -4 or at least 6 (Go's rule for the shortest
// precision), plain otherwise; "+Inf", "-Inf", "NaN" as Go spells them.
std::string GoFormatFloat(double x);

// The block, from its leading empty line to the MaxRSS line (with its
// newline). max_rss is ru_maxrss × 1024 in the runtime; nullopt leaves the
// line out, as Go 1.20+ does when getrusage fails (a core file has no such
// figure, and 0 would be a false one).
std::string MemStatsBlock(const MemStats& m, std::optional<uint64_t> max_rss);

}  // namespace goheap2pprof
