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
        .WithHint(
            "goheap2pprof reads Go 1.18+ programs; check the Go version with "
            "'go version <binary>'");
  }
  return {*addr, "symbol table"};
}

Error Unrecoverable(const GoBinary& bin, std::string_view variable, std::string why) {
  Error e(ErrorKind::kUnsupported, bin.elf().name(), " is stripped (no .symtab) and ", variable,
          " could not be recovered from the runtime's machine code: ", why, "; refusing to guess");
  e.WithHint(
      "capture from an unstripped build of the same program (built without "
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
                            "}, of which " + std::to_string(accepted.size()) + " pass the checks" +
                            rejected);
  }
  return {*accepted.begin(), "recovered from " + used};
}

// "" if a is in the section, else why not.
std::string CheckSection(const ModuleData& md, DataSection section, uint64_t a) {
  if (md.In(section, a)) return "";
  return "is not in " + std::string(DataSectionName(section));
}

RuntimeVariables RecoverFromCode(const GoBinary& bin, const RuntimeVariableLayout& layout) {
  const PclntabLocation loc = bin.LocatePclntab();
  if (!loc.moduledata) {
    throw Unrecoverable(bin, "runtime.mbuckets", "no moduledata was found");
  }
  const ModuleData& md = *loc.moduledata;
  RuntimeCode code(bin);
  RuntimeVariables v;

  // mbuckets: the list head walked by mProf_FlushLocked (its only data
  // reference), prepended to by stkbucket and read by MemProfile. A pointer,
  // so in .bss (.noptrbss in 1.18, see RuntimeVariableLayout), and aligned.
  v.mbuckets =
      Recover(bin, code, "runtime.mbuckets",
              {{{"runtime.mProf_FlushLocked"}, true, std::nullopt},
               {{"runtime.stkbucket"}, true, std::nullopt},
               {{"runtime.memProfileInternal", "runtime.MemProfile"}, false, std::nullopt}},
              [&](uint64_t a) -> std::string {
                if (std::string why = CheckSection(md, layout.mbuckets, a); !why.empty())
                  return why;
                if (a % 8 != 0) return "is not 8-byte aligned";
                return "";
              });

  // The heap profile cycle (mProfCycle, or mProf whose first field is the
  // cycle in 1.18): read as a 4-byte word by mProf_Free, and referenced by
  // the flush (layout.cycle_flush_function) and mProf_Malloc. The profMemFutureLock array they also
  // share is only ever address-taken, which the access size rules out.
  v.cycle = Recover(bin, code, layout.cycle_symbol,
                    {{{"runtime.mProf_Free"}, true, 4},
                     {{layout.cycle_flush_function}, true, std::nullopt},
                     {{"runtime.mProf_Malloc"}, true, std::nullopt},
                     {layout.mem_profile_reads_cycle
                          ? std::initializer_list<std::string_view>{"runtime.memProfileInternal",
                                                                    "runtime.MemProfile"}
                          : std::initializer_list<std::string_view>{},
                      false, std::nullopt}},
                    [&](uint64_t a) -> std::string {
                      if (std::string why = CheckSection(md, layout.cycle, a); !why.empty()) {
                        return why;
                      }
                      if (a % 4 != 0) return "is not 4-byte aligned";
                      return "";
                    });

  // MemProfileRate: an 8-byte int read by profilealloc and allocmcache
  // (nextSample). Static data holding 512 KiB since 1.20; zeroed data set by
  // an initializer in 1.18/1.19.
  v.mem_profile_rate =
      Recover(bin, code, "runtime.MemProfileRate",
              {{{"runtime.profilealloc"}, true, 8}, {{"runtime.allocmcache"}, true, 8}},
              [&](uint64_t a) -> std::string {
                if (a % 8 != 0) return "is not 8-byte aligned";
                if (std::string why = CheckSection(md, layout.mem_profile_rate, a); !why.empty()) {
                  return why;
                }
                if (layout.mem_profile_rate == DataSection::kNoptrdata &&
                    bin.ReadPointer(a) != kDefaultMemProfileRate) {
                  return "does not hold 524288 in the file";
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
      if (store.write && store.target == v.mem_profile_rate.addr && test.size == 1 && !test.write &&
          md.In(layout.disable_memory_profiling, test.target)) {
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

RuntimeVariables LocateRuntimeVariables(const GoBinary& bin, const RuntimeVariableLayout& layout) {
  if (!bin.elf().HasSymtab()) return RecoverFromCode(bin, layout);
  RuntimeVariables v;
  v.mbuckets = FromSymbol(bin, "runtime.mbuckets");
  v.mem_profile_rate = FromSymbol(bin, "runtime.MemProfileRate");
  v.cycle = FromSymbol(bin, layout.cycle_symbol);
  if (std::optional<uint64_t> a = bin.SymbolAddress("runtime.disableMemoryProfiling")) {
    v.disable_memory_profiling = RuntimeVariable{*a, "symbol table"};
  }
  return v;
}

}  // namespace goheap2pprof
