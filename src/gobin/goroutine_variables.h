// Locating the runtime variables the goroutine reader (goroutine/) needs in
// an executable: runtime.allglen and runtime.allgptr (the lock-free view of
// allgs), the finalizer goroutine's state (runtime.fingRunning up to Go
// 1.19, runtime.fingStatus from 1.20) and runtime.waitReasonStrings. From
// the symbol table when there is one; in a stripped binary from the machine
// code of the runtime functions that use them, as the heap profile's are
// (variable_recovery.h). Addresses are link-time; add the load bias.
//
//   GoroutineVariables v = LocateGoroutineVariables(bin, layout);
//   uint64_t allglen = v.allglen.addr + bias;
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "gobin/go_binary.h"
#include "gobin/runtime_variables.h"
#include "gobin/variable_recovery.h"

namespace goheap2pprof {

// What differs between Go releases (chosen per version in runtime/).
struct GoroutineVariableLayout {
  // fingRunning is a bool up to 1.19; fingStatus an atomic uint32 from 1.20.
  bool fing_is_bool = false;
  // The finalizer goroutine's function: runtime.runfinq, runtime.runFinalizers from 1.25.
  std::string_view finalizer_function = "runtime.runfinq";
};

struct GoroutineVariables {
  RuntimeVariable allglen;  // uintptr
  RuntimeVariable allgptr;  // **g
  // Absent when the program links no finalizer goroutine (then none runs a
  // finalizer).
  std::optional<RuntimeVariable> fing;
  // The [N]string of wait reasons and N; absent when neither the symbol
  // table nor the code gives it (wait reasons then print as unknown). A
  // recovered N counts the strings the file holds there, so it may run past
  // the array into a neighbour: the runtime never stores a reason >= the
  // real N.
  std::optional<RuntimeVariable> wait_reasons;
  uint64_t wait_reason_count = 0;
};

// Throws Error(kUnsupported) when allglen or allgptr cannot be located (or,
// stripped, when the code gives no single answer for the finalizer state).
GoroutineVariables LocateGoroutineVariables(const GoBinary& bin,
                                            const GoroutineVariableLayout& layout);

// runtime.allglen of a stripped binary: the uintptr (.noptrbss) that
// allgadd stores and forEachGRace loads. Also the memory statistics'
// (memstats_variables.cc).
RuntimeVariable RecoverAllglen(const GoBinary& bin, RuntimeCode& code, const ModuleData& md);

}  // namespace goheap2pprof
