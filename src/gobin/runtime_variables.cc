#include "gobin/runtime_variables.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "gobin/moduledata.h"

namespace goheap2pprof {

namespace {

// Value of `var MemProfileRate int = 512 * 1024` in the file (Go 1.20+).
constexpr uint64_t kDefaultMemProfileRate = 512 * 1024;

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

Error Unrecoverable(const GoBinary& bin, std::string_view variable, std::string why) {
  Error e(ErrorKind::kUnsupported, bin.elf().name(), " is stripped (no .symtab) and ", variable,
          " could not be recovered from the runtime's machine code: ", why,
          "; refusing to guess");
  e.WithHint("capture from an unstripped build of the same program (built without "
             "-ldflags=-s), or report this Go version/build mode as unsupported");
  return e;
}

// Code of the runtime functions the recovery reads, decoded once.
class RuntimeCode {
 public:
  explicit RuntimeCode(const GoBinary& bin) : bin_(bin) {}

  // Refs of the first of `names` that is in the pclntab; *which* names it.
  const std::vector<DataRef>* Refs(std::initializer_list<std::string_view> names,
                                   std::string* which = nullptr) {
    for (std::string_view name : names) {
      auto it = cache_.find(std::string(name));
      if (it == cache_.end()) {
        it = cache_.emplace(std::string(name), bin_.FunctionDataRefs(name)).first;
      }
      if (it->second) {
        if (which) *which = name;
        return &*it->second;
      }
    }
    return nullptr;
  }

 private:
  const GoBinary& bin_;
  std::map<std::string, std::optional<std::vector<DataRef>>> cache_;
};

// Targets referenced by refs, optionally only those accessed with `size`.
std::set<uint64_t> Targets(const std::vector<DataRef>& refs, std::optional<uint8_t> size = {}) {
  std::set<uint64_t> out;
  for (const DataRef& r : refs) {
    if (!size || r.size == *size) out.insert(r.target);
  }
  return out;
}

std::set<uint64_t> Intersect(const std::set<uint64_t>& a, const std::set<uint64_t>& b) {
  std::set<uint64_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

std::string List(const std::set<uint64_t>& s) {
  std::string out;
  for (uint64_t a : s) out += (out.empty() ? "" : ", ") + Hex(a);
  return out.empty() ? "none" : out;
}

// Intersects the data references of every function group (the first present
// name of each group; a group marked optional may be absent), keeping only
// addresses `accept` allows. Exactly one address must remain.
struct Group {
  std::initializer_list<std::string_view> names;
  bool required = true;
  std::optional<uint8_t> size;  // only references with this access size
};

RuntimeVariable Recover(const GoBinary& bin, RuntimeCode& code, std::string_view variable,
                        std::initializer_list<Group> groups,
                        const std::function<std::string(uint64_t)>& check) {
  std::optional<std::set<uint64_t>> common;
  std::string used;
  for (const Group& g : groups) {
    std::string which;
    const std::vector<DataRef>* refs = code.Refs(g.names, &which);
    if (!refs) {
      if (!g.required) continue;
      throw Unrecoverable(bin, variable,
                          "the pclntab has no function " + std::string(*g.names.begin()));
    }
    std::set<uint64_t> t = Targets(*refs, g.size);
    common = common ? Intersect(*common, t) : t;
    used += (used.empty() ? "" : ", ") + which;
  }
  std::set<uint64_t> accepted;
  std::string rejected;
  for (uint64_t a : *common) {
    std::string why = check(a);
    if (why.empty()) {
      accepted.insert(a);
    } else {
      rejected += "; " + Hex(a) + " " + why;
    }
  }
  if (accepted.size() != 1) {
    throw Unrecoverable(bin, variable,
                        "the addresses referenced by all of " + used + " are {" + List(*common) +
                            "}, of which " + std::to_string(accepted.size()) +
                            " pass the checks" + rejected);
  }
  return {*accepted.begin(), "recovered from " + used};
}

RuntimeVariables RecoverFromCode(const GoBinary& bin, std::string_view cycle_symbol) {
  const PclntabLocation loc = bin.LocatePclntab();
  if (!loc.moduledata) {
    throw Unrecoverable(bin, "runtime.mbuckets", "no moduledata was found");
  }
  const ModuleData& md = *loc.moduledata;
  const bool go120 = md.layout != ModuleDataLayout::kGo118;
  RuntimeCode code(bin);
  RuntimeVariables v;

  // mbuckets: the list head walked by mProf_FlushLocked (its only data
  // reference), prepended to by stkbucket and read by MemProfile. A pointer,
  // so in .bss, and pointer-aligned.
  v.mbuckets = Recover(
      bin, code, "runtime.mbuckets",
      {{{"runtime.mProf_FlushLocked"}, true, std::nullopt},
       {{"runtime.stkbucket"}, true, std::nullopt},
       {{"runtime.memProfileInternal", "runtime.MemProfile"}, false, std::nullopt}},
      [&](uint64_t a) -> std::string {
        if (!md.InBss(a)) return "is not in .bss";
        if (a % 8 != 0) return "is not 8-byte aligned";
        return "";
      });

  // The heap profile cycle (mProfCycle, or mProf whose first field is the
  // cycle in 1.18): read as a 4-byte word by mProf_Free, and referenced by
  // mProf_Flush and mProf_Malloc. The profMemFutureLock array they also share
  // is only ever address-taken, which the access size rules out.
  v.cycle = Recover(bin, code, cycle_symbol,
                    {{{"runtime.mProf_Free"}, true, 4},
                     {{"runtime.mProf_Flush"}, true, std::nullopt},
                     {{"runtime.mProf_Malloc"}, true, std::nullopt},
                     {{"runtime.memProfileInternal", "runtime.MemProfile"}, false, std::nullopt}},
                    [&](uint64_t a) -> std::string {
                      if (!md.InBss(a) && !md.InNoptrbss(a)) return "is not zero-initialized data";
                      if (a % 4 != 0) return "is not 4-byte aligned";
                      return "";
                    });

  // MemProfileRate: an 8-byte int read by profilealloc and allocmcache
  // (nextSample). Static data holding 512 KiB since 1.20; zeroed data set by
  // an initializer in 1.18/1.19.
  v.mem_profile_rate = Recover(
      bin, code, "runtime.MemProfileRate",
      {{{"runtime.profilealloc"}, true, 8}, {{"runtime.allocmcache"}, true, 8}},
      [&](uint64_t a) -> std::string {
        if (a % 8 != 0) return "is not 8-byte aligned";
        if (go120) {
          if (!md.InNoptrdata(a)) return "is not in .noptrdata";
          std::optional<uint64_t> value = bin.ReadPointer(a);
          if (value != kDefaultMemProfileRate) return "does not hold 524288 in the file";
        } else if (!md.InBss(a) && !md.InNoptrbss(a)) {
          return "is not zero-initialized data";
        }
        return "";
      });

  // disableMemoryProfiling (diagnostics only): the bool tested right before
  // `MemProfileRate = 0` in schedinit (1.20+) or in runtime's package
  // initializer (1.18/1.19, defaultMemProfileRate inlined).
  for (std::string_view fn : {"runtime.schedinit", "runtime.init"}) {
    std::string which;
    const std::vector<DataRef>* refs = code.Refs({fn}, &which);
    if (!refs) continue;
    std::set<uint64_t> found;
    for (size_t i = 1; i < refs->size(); ++i) {
      const DataRef& store = (*refs)[i];
      const DataRef& test = (*refs)[i - 1];
      if (store.write && store.target == v.mem_profile_rate.addr && test.size == 1 &&
          !test.write && md.InAnyData(test.target)) {
        found.insert(test.target);
      }
    }
    if (found.size() == 1) {
      v.disable_memory_profiling = RuntimeVariable{*found.begin(), "recovered from " + which};
      break;
    }
  }
  return v;
}

}  // namespace

RuntimeVariables LocateRuntimeVariables(const GoBinary& bin, std::string_view cycle_symbol) {
  if (!bin.elf().HasSymtab()) return RecoverFromCode(bin, cycle_symbol);
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
