// The goroutine profile as runtime/pprof's printCountProfile writes it at
// debug=0 (go-goroutine-facts.md §6.4): one sample per distinct stack and
// label set with its count, sample type goroutine/count, period 1, the
// goroutines' pprof labels as string labels, and locations, functions and
// mappings built exactly as the heap profile's (pprof/heap_profile_builder.h,
// without hideRuntime).
//
//   std::vector<GoroutineStack> stacks = CountGoroutineStacks(snapshot.goroutines);
//   pb::Profile p = BuildGoroutineProfile(sym, traits, mappings, bias, now_ns, stacks, notes);
//   std::string text = GoroutineDebugText(sym, traits, bias, stacks);   // ?debug=1
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "goroutine/goroutine_reader.h"
#include "pprof/heap_profile_builder.h"
#include "proto/profile.pb.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

// Goroutines with one stack and one label set.
struct GoroutineStack {
  std::vector<uint64_t> pcs;  // runtime addresses, innermost first
  Labels labels;              // sorted by key
  int64_t count = 0;
  // printCountProfile's key: "@ 0x.. 0x.." and, with labels,
  // "\n# labels: {...}"; the order of the samples is by count, then key.
  std::string key;
};

// Go's labelMap.String(): {"k":"v", ...} with %q quoting, sorted.
std::string LabelsText(const Labels& labels);

// The goroutines counted per stack and labels, in printCountProfile's order.
std::vector<GoroutineStack> CountGoroutineStacks(std::span<const Goroutine> goroutines);

// The profile of those stacks. bias: runtime - link-time address of the
// executable whose pclntab the symbolizer decodes. comments: written as the
// profile's comments (what was dropped, how the layout was proven).
pb::Profile BuildGoroutineProfile(Symbolizer& symbolizer, const RuntimeTraits& traits,
                                  std::vector<ProfileMapping> mappings, uint64_t bias,
                                  int64_t time_nanos, std::span<const GoroutineStack> stacks,
                                  std::span<const std::string> comments);

// The debug=1 text of those stacks (printCountProfile): "goroutine profile:
// total N", then per stack its count and key and its frames, laid out by
// text/tabwriter as Go does.
std::string GoroutineDebugText(Symbolizer& symbolizer, const RuntimeTraits& traits, uint64_t bias,
                               std::span<const GoroutineStack> stacks);

}  // namespace goheap2pprof
