// The legacy text form of the heap profile that a Go program serves for
// /debug/pprof/heap?debug=1 (runtime/pprof's writeHeapInternal): a
// "heap profile:" header with the totals and 2*MemProfileRate, then one
// record per bucket with its unscaled counters and raw stack, followed by
// its frames as "#\t<pc>\t<func>+<off>\t<file>:<line>" lines, laid out by
// text/tabwriter exactly as Go does. The runtime.MemStats block that ends
// the runtime's text is pprof/memstats_text.h's: the callers that read the
// target's statistics (serve's worker, --format debug1) append it.
//
//   std::string text = HeapDebugText(records, rate, traits, symbolizer, bias);
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "heap/buckets.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

// records as runtime.MemProfile returns them; rate is runtime.MemProfileRate.
// The symbolizer works in addresses `symbolizer_bias` below the target's
// (0 when it was built with the load bias applied).
std::string HeapDebugText(std::span<const MemProfileRecord> records, int64_t rate,
                          const RuntimeTraits& traits, Symbolizer& symbolizer,
                          uint64_t symbolizer_bias);

// runtime/pprof's printStackRecord (shared by the heap's and the goroutine
// profile's debug=1 text): a "#\t<pc>\t<func>+<off>\t<file>:<line>" line per
// frame of CallersFrames over the stack, hiding runtime frames at the start
// (and runtime.goexit anywhere), all frames if that hides all; then an empty
// line. Before GoTabwriter lays the text out.
void AppendStackRecord(std::string& out, std::span<const uint64_t> stack,
                       const RuntimeTraits& traits, Symbolizer& sym, uint64_t bias,
                       bool all_frames);

// Go's text/tabwriter with NewWriter(w, minwidth 1, tabwidth 8, padding 1,
// padchar '\t', flags 0), applied to a whole text: cells are tab-terminated,
// and each column of a run of lines that have a cell there is padded with
// tabs to a common width.
std::string GoTabwriter(std::string_view text);

}  // namespace goheap2pprof
