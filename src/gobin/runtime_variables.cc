#include "gobin/runtime_variables.h"

#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "gobin/moduledata.h"
#include "gobin/variable_recovery.h"

namespace goheap2pprof {

namespace {

// Value of `var MemProfileRate int = 512 * 1024` in the file (Go 1.20+).
constexpr uint64_t kDefaultMemProfileRate = 512 * 1024;

RuntimeVariable ProfilerSymbol(const GoBinary& bin, std::string_view name) {
  std::optional<uint64_t> addr = bin.SymbolAddress(name);
  if (!addr) {
    throw Error(ErrorKind::kUnsupported, bin.elf().name(), " has no symbol ", name,
                "; this Go runtime's heap profiler cannot be located")
        .WithHint(
            "goheap2pprof reads Go 1.18+ programs; check the Go version with "
            "'go version <binary>'");
  }
  return {*addr, "symbol table"};
}

RuntimeVariable RecoverMbuckets(const GoBinary& bin, RuntimeCode& code, const ModuleData& md,
                                const RuntimeVariableLayout& layout) {
  // mbuckets: the list head walked by mProf_FlushLocked (its only data
  // reference), prepended to by stkbucket and read by MemProfile. A pointer,
  // so in .bss (.noptrbss in 1.18, see RuntimeVariableLayout), and aligned.
  return RecoverVariable(
      bin, code, "runtime.mbuckets",
      {{{"runtime.mProf_FlushLocked"}, true, std::nullopt},
       {{"runtime.stkbucket"}, true, std::nullopt},
       {{"runtime.memProfileInternal", "runtime.MemProfile"}, false, std::nullopt}},
      0, [&](uint64_t a) -> std::string {
        if (std::string why = CheckSection(md, layout.mbuckets, a); !why.empty()) return why;
        if (a % 8 != 0) return "is not 8-byte aligned";
        return "";
      });
}

RuntimeVariable RecoverCycle(const GoBinary& bin, RuntimeCode& code, const ModuleData& md,
                             const RuntimeVariableLayout& layout) {
  // The heap profile cycle (mProfCycle, or mProf whose first field is the
  // cycle in 1.18): read as a 4-byte word by mProf_Free, and referenced by
  // the flush (layout.cycle_flush_function) and mProf_Malloc. The profMemFutureLock array they also
  // share is only ever address-taken, which the access size rules out.
  return RecoverVariable(
      bin, code, layout.cycle_symbol,
      {{{"runtime.mProf_Free"}, true, 4},
       {{layout.cycle_flush_function}, true, std::nullopt},
       {{"runtime.mProf_Malloc"}, true, std::nullopt},
       {layout.mem_profile_reads_cycle
            ? std::initializer_list<std::string_view>{"runtime.memProfileInternal",
                                                      "runtime.MemProfile"}
            : std::initializer_list<std::string_view>{},
        false, std::nullopt}},
      0, [&](uint64_t a) -> std::string {
        if (std::string why = CheckSection(md, layout.cycle, a); !why.empty()) {
          return why;
        }
        if (a % 4 != 0) return "is not 4-byte aligned";
        return "";
      });
}

RuntimeVariable RecoverMemProfileRate(const GoBinary& bin, RuntimeCode& code, const ModuleData& md,
                                      const RuntimeVariableLayout& layout) {
  // MemProfileRate: an 8-byte int read by profilealloc and allocmcache
  // (nextSample). Static data holding 512 KiB since 1.20; zeroed data set by
  // an initializer in 1.18/1.19.
  return RecoverVariable(bin, code, "runtime.MemProfileRate",
                         {{{"runtime.profilealloc"}, true, 8}, {{"runtime.allocmcache"}, true, 8}},
                         0, [&](uint64_t a) -> std::string {
                           if (a % 8 != 0) return "is not 8-byte aligned";
                           if (std::string why = CheckSection(md, layout.mem_profile_rate, a);
                               !why.empty()) {
                             return why;
                           }
                           if (layout.mem_profile_rate == DataSection::kNoptrdata &&
                               bin.ReadPointer(a) != kDefaultMemProfileRate) {
                             return "does not hold 524288 in the file";
                           }
                           return "";
                         });
}

std::optional<RuntimeVariable> RecoverDisableMemoryProfiling(const GoBinary& bin, RuntimeCode& code,
                                                             const ModuleData& md,
                                                             const RuntimeVariableLayout& layout,
                                                             uint64_t mem_profile_rate) {
  // disableMemoryProfiling: the bool tested right before `MemProfileRate = 0`
  // in schedinit (1.20+) or in runtime's package initializer (1.18/1.19,
  // defaultMemProfileRate inlined). Zeroed data as declared; but when the
  // linker sets it (cmd/link's lib.go: SNOPTRDATA holding 1), initialized
  // data holding 1 in the file, which is where it matters most: inside
  // .noptrdata from 1.24, and up to 1.23 placed after it, at the start of
  // .data (runtime.enoptrdata), measured on every toolchain.
  const auto flag_where = [&](uint64_t a) {
    if (md.In(layout.disable_memory_profiling, a)) return true;
    const std::optional<Bytes> byte = bin.elf().ReadVaddr(a, 1);
    return (md.In(DataSection::kNoptrdata, a) || md.In(DataSection::kData, a)) && byte &&
           byte->size() == 1 && (*byte)[0] == 1;
  };
  for (std::string_view fn : {"runtime.schedinit", "runtime.init"}) {
    std::string which;
    const std::vector<DataRef>* refs = code.Refs({fn}, &which);
    if (!refs) continue;
    std::set<uint64_t> found;
    for (size_t i = 1; i < refs->size(); ++i) {
      const DataRef& store = (*refs)[i];
      const DataRef& test = (*refs)[i - 1];
      if (store.write && store.target == mem_profile_rate && test.size == 1 && !test.write &&
          flag_where(test.target)) {
        found.insert(test.target);
      }
    }
    if (found.size() == 1) {
      return RuntimeVariable{*found.begin(), "recovered from " + which};
    }
  }
  return std::nullopt;
}

// Stripped binaries: each variable is found through the data references
// of the runtime functions that use it, and checked against where it must be.
RuntimeVariables RecoverFromCode(const GoBinary& bin, const RuntimeVariableLayout& layout) {
  const PclntabLocation loc = bin.LocatePclntab();
  const ModuleData& md = ModuleDataOrRefuse(bin, loc, "runtime.mbuckets");
  RuntimeCode code(bin);
  RuntimeVariables v;
  v.mbuckets = RecoverMbuckets(bin, code, md, layout);
  v.cycle = RecoverCycle(bin, code, md, layout);
  v.mem_profile_rate = RecoverMemProfileRate(bin, code, md, layout);
  v.disable_memory_profiling =
      RecoverDisableMemoryProfiling(bin, code, md, layout, v.mem_profile_rate.addr);
  return v;
}

}  // namespace

RuntimeVariables LocateRuntimeVariables(const GoBinary& bin, const RuntimeVariableLayout& layout) {
  if (!bin.elf().HasSymtab()) return RecoverFromCode(bin, layout);
  RuntimeVariables v;
  v.mbuckets = ProfilerSymbol(bin, "runtime.mbuckets");
  v.mem_profile_rate = ProfilerSymbol(bin, "runtime.MemProfileRate");
  v.cycle = ProfilerSymbol(bin, layout.cycle_symbol);
  if (std::optional<uint64_t> a = bin.SymbolAddress("runtime.disableMemoryProfiling")) {
    v.disable_memory_profiling = RuntimeVariable{*a, "symbol table"};
  }
  return v;
}

}  // namespace goheap2pprof
