// Locating the Go runtime's heap-profile variables in an executable:
// runtime.mbuckets, runtime.MemProfileRate, the profile cycle and
// runtime.disableMemoryProfiling. Addresses are link-time; add the load bias.
//
//   RuntimeVariables v = LocateRuntimeVariables(bin, traits.variables);
//   uint64_t head_addr = v.mbuckets.addr + bias;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gobin/go_binary.h"
#include "gobin/moduledata.h"

namespace goheap2pprof {

struct RuntimeVariable {
  uint64_t addr = 0;   // link-time address
  std::string source;  // how it was found, for -v: "symbol table", ...
};

// How one Go release names the heap profile's cycle variable and where its
// linker puts each variable (the section follows from the declaration: a
// pointer to a //go:notinheap type, as runtime.mbuckets is in 1.18, is no GC
// pointer and lands in .noptrbss). Chosen per version in runtime/
// (RuntimeTraits::variables); the recovery from machine code accepts an
// address only in the section given here.
struct RuntimeVariableLayout {
  std::string_view cycle_symbol = "runtime.mProfCycle";  // or "runtime.mProf" (1.18)
  // The flush function that reads the cycle word itself: mProf_Flush
  // (mProfCycle.setFlushed); in 1.18 it touches only mProf.flushed, so
  // mProf_FlushLocked (c := mProf.cycle).
  std::string_view cycle_flush_function = "runtime.mProf_Flush";
  // MemProfile (memProfileInternal from 1.23) reads the cycle too (1.19+;
  // 1.18's calls mProf_FlushLocked instead).
  bool mem_profile_reads_cycle = true;
  DataSection mbuckets = DataSection::kBss;
  DataSection cycle = DataSection::kNoptrbss;
  // kNoptrdata: statically 512 KiB in the file (1.20+); else zeroed data
  // that an initializer sets.
  DataSection mem_profile_rate = DataSection::kNoptrdata;
  DataSection disable_memory_profiling = DataSection::kNoptrbss;
};

struct RuntimeVariables {
  RuntimeVariable mbuckets;
  RuntimeVariable mem_profile_rate;
  RuntimeVariable cycle;  // runtime.mProfCycle (1.19+) or runtime.mProf (1.18)
  std::optional<RuntimeVariable> disable_memory_profiling;
};

// Throws Error(kUnsupported) naming the missing variable. Without .symtab the addresses are
// recovered from the machine code of runtime functions found through the pclntab (see
// runtime_variables.cc), each cross-checked against several functions and the moduledata ranges;
// source then says "recovered from runtime.mProf_FlushLocked, ...".
RuntimeVariables LocateRuntimeVariables(const GoBinary& bin, const RuntimeVariableLayout& layout);

}  // namespace goheap2pprof
