// Locating the Go runtime's memory-statistics variables in an executable:
// runtime.memstats, gcController, mheap_, allp, allglen, allm, sched,
// gomaxprocs, emptymspan and, from Go 1.19, startingStackSize and
// gcCPULimiter (go-memstats-facts.md, section 2). Addresses are link-time;
// add the load bias.
//
//   MemstatsVariables v = LocateMemstatsVariables(bin, traits.memstats_variables);
//   uint64_t memstats = v.memstats.addr + bias;
#pragma once

#include <optional>

#include "gobin/go_binary.h"
#include "gobin/moduledata.h"
#include "gobin/runtime_variables.h"

namespace goheap2pprof {

// What differs between Go releases in where the variables are (chosen per
// version in runtime/). A recovery from machine code accepts an address only
// in the section given here, and finds the two structs whose code references
// no field at offset 0 through the field offsets given here.
struct MemstatsVariableLayout {
  bool has_limiter_and_stack_size = true;      // 1.19+
  DataSection emptymspan = DataSection::kBss;  // .noptrbss in 1.18-1.21
  // Offset of memstats.heapStats, whose address the span allocator passes
  // to acquire/release: 5960 in 1.18, 0 from 1.19 (go-memstats-facts.md 3.1).
  uint64_t memstats_heap_stats = 0;
  // Offset of sched.lock: 24 up to 1.24, 32 from 1.25 (pollingNet before it).
  uint64_t sched_lock = 24;
};

struct MemstatsVariables {
  RuntimeVariable memstats;                            // runtime.memstats (runtime.mstats)
  RuntimeVariable gc_controller;                       // runtime.gcController
  RuntimeVariable mheap;                               // runtime.mheap_
  RuntimeVariable allp;                                // []*runtime.p
  RuntimeVariable allglen;                             // uintptr
  RuntimeVariable allm;                                // *runtime.m, head of the list of Ms
  RuntimeVariable sched;                               // runtime.schedt
  RuntimeVariable gomaxprocs;                          // int32
  RuntimeVariable emptymspan;                          // the mcache's empty-span sentinel
  std::optional<RuntimeVariable> starting_stack_size;  // 1.19+
  std::optional<RuntimeVariable> gc_cpu_limiter;       // 1.19+
};

// Throws Error(kUnsupported) naming the missing variable. Without .symtab
// the addresses are recovered from the machine code of runtime functions
// found through the pclntab, as LocateRuntimeVariables does: only functions
// that every Go program links (the scheduler, allocator and GC; never
// ReadMemStats or runtime/metrics), two or more agreeing on each variable,
// the result in the variable's section; anything else is Error(kUnsupported),
// never a guess. source then says which functions gave each address.
MemstatsVariables LocateMemstatsVariables(const GoBinary& bin,
                                          const MemstatsVariableLayout& layout);

}  // namespace goheap2pprof
