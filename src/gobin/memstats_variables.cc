#include "gobin/memstats_variables.h"

#include <string>

#include "base/error.h"

namespace goheap2pprof {
namespace {

RuntimeVariable FromSymbol(const GoBinary& bin, std::string_view name) {
  std::optional<uint64_t> addr = bin.SymbolAddress(name);
  if (!addr) {
    throw Error(ErrorKind::kUnsupported, bin.elf().name(), " has no symbol ", name,
                "; this Go runtime's memory statistics cannot be located")
        .WithHint("memory statistics are read from Go 1.18+ programs");
  }
  return {*addr, "symbol table"};
}

}  // namespace

MemstatsVariables LocateMemstatsVariables(const GoBinary& bin,
                                          const MemstatsVariableLayout& layout) {
  if (!bin.elf().HasSymtab()) {
    throw Error(ErrorKind::kUnsupported, bin.elf().name(),
                " is stripped (no .symtab): the memory-statistics variables are not yet recovered "
                "from machine code")
        .WithHint("read an unstripped build of the same program");
  }
  MemstatsVariables v;
  v.memstats = FromSymbol(bin, "runtime.memstats");
  v.gc_controller = FromSymbol(bin, "runtime.gcController");
  v.mheap = FromSymbol(bin, "runtime.mheap_");
  v.allp = FromSymbol(bin, "runtime.allp");
  v.allglen = FromSymbol(bin, "runtime.allglen");
  v.allm = FromSymbol(bin, "runtime.allm");
  v.sched = FromSymbol(bin, "runtime.sched");
  v.gomaxprocs = FromSymbol(bin, "runtime.gomaxprocs");
  v.emptymspan = FromSymbol(bin, "runtime.emptymspan");
  if (layout.has_limiter_and_stack_size) {
    v.starting_stack_size = FromSymbol(bin, "runtime.startingStackSize");
    v.gc_cpu_limiter = FromSymbol(bin, "runtime.gcCPULimiter");
  }
  return v;
}

}  // namespace goheap2pprof
