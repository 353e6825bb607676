// Locating the Go runtime's heap-profile variables in an executable:
// runtime.mbuckets, runtime.MemProfileRate, the profile cycle and
// runtime.disableMemoryProfiling. Addresses are link-time; add the load bias.
//
//   RuntimeVariables v = LocateRuntimeVariables(bin, "runtime.mProfCycle");
//   uint64_t head_addr = v.mbuckets.addr + bias;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gobin/go_binary.h"

namespace goheap2pprof {

struct RuntimeVariable {
  uint64_t addr = 0;   // link-time address
  std::string source;  // how it was found, for -v: "symbol table", ...
};

struct RuntimeVariables {
  RuntimeVariable mbuckets;
  RuntimeVariable mem_profile_rate;
  RuntimeVariable cycle;  // runtime.mProfCycle (1.19+) or runtime.mProf (1.18)
  std::optional<RuntimeVariable> disable_memory_profiling;
};

// Throws Error(kUnsupported) naming the missing variable. Without .symtab the addresses are recovered from the machine code of
// runtime functions found through the pclntab (see runtime_variables.cc),
// each cross-checked against several functions and the moduledata ranges;
// source then says "recovered from runtime.mProf_FlushLocked, ...".
RuntimeVariables LocateRuntimeVariables(const GoBinary& bin, std::string_view cycle_symbol);

}  // namespace goheap2pprof
