#include "gobin/runtime_variables.h"

#include "base/error.h"

namespace goheap2pprof {

namespace {

RuntimeVariable FromSymbol(const GoBinary& bin, std::string_view name) {
  std::optional<uint64_t> addr = bin.SymbolAddress(name);
  if (!addr) {
    throw Error(ErrorKind::kUnsupported, bin.elf().name(), " has no symbol ", name,
                "; this Go runtime's heap profiler cannot be located")
        .WithHint("goheap2pprof reads Go 1.18+ programs; check the Go version with "
                  "'go version <binary>'");
  }
  return {*addr, "symbol table"};
}

}  // namespace

RuntimeVariables LocateRuntimeVariables(const GoBinary& bin, std::string_view cycle_symbol) {
  if (!bin.elf().HasSymtab()) {
    throw Error(ErrorKind::kUnsupported, bin.elf().name(),
                " is stripped (no .symtab), so runtime.mbuckets cannot be located by name")
        .WithHint("capture from an unstripped build of the same program (built without "
                  "-ldflags=-s); support for stripped binaries is planned");
  }
  RuntimeVariables v;
  v.mbuckets = FromSymbol(bin, "runtime.mbuckets");
  v.mem_profile_rate = FromSymbol(bin, "runtime.MemProfileRate");
  v.cycle = FromSymbol(bin, cycle_symbol);
  if (std::optional<uint64_t> a = bin.SymbolAddress("runtime.disableMemoryProfiling")) {
    v.disable_memory_profiling = RuntimeVariable{*a, "symbol table"};
  }
  return v;
}

}  // namespace goheap2pprof
