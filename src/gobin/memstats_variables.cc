#include "gobin/memstats_variables.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "gobin/goroutine_variables.h"
#include "gobin/variable_recovery.h"

namespace goheap2pprof {
namespace {

// `var startingStackSize uint32 = fixedStack`: 2 KiB on Linux (stackSystem
// is 0 there), in the file until the first GC adjusts it.
constexpr uint32_t kFixedStack = 2048;

RuntimeVariable MemstatsSymbol(const GoBinary& bin, std::string_view name) {
  return SymbolOrRefuse(bin, name, "memory statistics");
}

// The recovery of one binary: its code, moduledata and layout.
class Recovery {
 public:
  Recovery(const GoBinary& bin, const MemstatsVariableLayout& layout)
      : bin_(bin),
        loc_(bin.LocatePclntab()),
        md_(ModuleDataOrRefuse(bin, loc_, "runtime.memstats")),
        code_(bin),
        layout_(layout) {}

  // mcache and span statistics: the span allocator and the mcache's refill
  // and large allocation all pass &memstats.heapStats to acquire/release
  // (address taken; a 1-byte load of arm64HasATOMICS that they share on
  // arm64 has another size).
  RuntimeVariable Memstats() {
    return RecoverVariable(bin_, code_, "runtime.memstats",
                           {{{"runtime.(*mheap).allocSpan"}, true, 0},
                            {{"runtime.(*mheap).freeSpanLocked"}, true, 0},
                            {{"runtime.(*mcache).refill"}, true, 0},
                            {{"runtime.(*mcache).allocLarge"}, true, 0}},
                           layout_.memstats_heap_stats, Placed(DataSection::kNoptrbss, 8));
  }

  // The receiver of gcController.update (refill, allocLarge), of
  // startCycle (gcStart) and of init (gcinit).
  RuntimeVariable GcController() {
    return RecoverVariable(bin_, code_, "runtime.gcController",
                           {{{"runtime.(*mcache).refill"}, true, std::nullopt},
                            {{"runtime.(*mcache).allocLarge"}, true, std::nullopt},
                            {{"runtime.gcStart"}, true, std::nullopt},
                            {{"runtime.gcinit"}, true, std::nullopt}},
                           0, Placed(DataSection::kNoptrbss, 8));
  }

  // &mheap_ (its lock is at 0): the receiver of allocManual (stackalloc),
  // init (mallocinit) and alloc ((*mcentral).grow, allocLarge).
  RuntimeVariable Mheap() {
    return RecoverVariable(bin_, code_, "runtime.mheap_",
                           {{{"runtime.stackalloc"}, true, std::nullopt},
                            {{"runtime.mallocinit"}, true, std::nullopt},
                            {{"runtime.(*mcentral).grow"}, true, std::nullopt},
                            {{"runtime.(*mcache).allocLarge"}, true, std::nullopt}},
                           0, Placed(DataSection::kBss, 8));
  }

  // lock(&sched.lock) in checkdead, sysmon and mcommoninit; confirmed by
  // sched.goidgen (offset 0), which newproc1 and oneNewExtraM both add to.
  // The goidgen references alone do not decide: both functions also touch
  // sched.ngsys.
  RuntimeVariable Sched() {
    return RecoverVariable(
        bin_, code_, "runtime.sched",
        {{{"runtime.checkdead"}, true, 0},
         {{"runtime.sysmon"}, true, 0},
         {{"runtime.mcommoninit"}, true, 0}},
        layout_.sched_lock, [&](uint64_t a) -> std::string {
          if (std::string why = Placed(DataSection::kBss, 8)(a); !why.empty()) {
            return why;
          }
          for (std::string_view fn : {"runtime.newproc1", "runtime.oneNewExtraM"}) {
            if (!code_.References(fn, a)) {
              return "is not referenced (goidgen) by " + std::string(fn);
            }
          }
          return "";
        });
  }

  // The []*p slice header read by procresize, checkdead, retake and gcStart.
  // Its pointer and length words are both shared; only the header's start
  // has its capacity word (+16) referenced by procresize, which grows it.
  RuntimeVariable Allp() {
    return RecoverVariable(bin_, code_, "runtime.allp",
                           {{{"runtime.procresize"}, true, std::nullopt},
                            {{"runtime.checkdead"}, true, std::nullopt},
                            {{"runtime.retake"}, true, std::nullopt},
                            {{"runtime.gcStart"}, true, std::nullopt}},
                           0, [&](uint64_t a) -> std::string {
                             if (std::string why = Placed(DataSection::kBss, 8)(a); !why.empty()) {
                               return why;
                             }
                             if (!code_.References("runtime.procresize", a + 16)) {
                               return "has no capacity word referenced by runtime.procresize";
                             }
                             return "";
                           });
  }

  // The goroutine reader's recovery (goroutine_variables.h).
  RuntimeVariable Allglen() { return RecoverAllglen(bin_, code_, md_); }

  // The head of the M list: prepended to by mcommoninit, unlinked by mexit
  // (address taken) and walked by schedtrace (an 8-byte load, which tells it
  // from &sched.lock, which all three also take).
  RuntimeVariable Allm() {
    return RecoverVariable(bin_, code_, "runtime.allm",
                           {{{"runtime.mcommoninit"}, true, std::nullopt},
                            {{"runtime.mexit"}, true, std::nullopt},
                            {{"runtime.schedtrace"}, true, 8}},
                           0, Placed(DataSection::kBss, 8));
  }

  // The int32 read by procresize, sysmon, gcStart and stopTheWorldWithSema
  // (4-byte accesses: arm64's 1-byte arm64HasATOMICS is shared too).
  RuntimeVariable Gomaxprocs() {
    return RecoverVariable(bin_, code_, "runtime.gomaxprocs",
                           {{{"runtime.procresize"}, true, 4},
                            {{"runtime.sysmon"}, true, 4},
                            {{"runtime.gcStart"}, true, 4},
                            {{"runtime.stopTheWorldWithSema"}, true, 4}},
                           0, Placed(DataSection::kNoptrbss, 4));
  }

  // &emptymspan, the sentinel that allocmcache and releaseAll store into an
  // mcache and refill compares against.
  RuntimeVariable Emptymspan() {
    return RecoverVariable(bin_, code_, "runtime.emptymspan",
                           {{{"runtime.allocmcache"}, true, std::nullopt},
                            {{"runtime.(*mcache).refill"}, true, std::nullopt},
                            {{"runtime.(*mcache).releaseAll"}, true, std::nullopt}},
                           0, Placed(layout_.emptymspan, 8));
  }

  // The uint32 that gfput and gfget compare stack sizes with and
  // gcComputeStartingStackSize sets; initialised data holding fixedStack.
  RuntimeVariable StartingStackSize() {
    return RecoverVariable(bin_, code_, "runtime.startingStackSize",
                           {{{"runtime.gfput"}, true, 4},
                            {{"runtime.gfget"}, true, 4},
                            {{"runtime.gcComputeStartingStackSize"}, true, 4}},
                           0, [&](uint64_t a) -> std::string {
                             if (std::string why = Placed(DataSection::kNoptrdata, 4)(a);
                                 !why.empty())
                               return why;
                             std::optional<Bytes> b = bin_.elf().ReadVaddr(a, 4);
                             uint32_t value = 0;
                             if (b) std::memcpy(&value, b->data(), 4);
                             if (!b || value != kFixedStack)
                               return "does not hold 2048 in the file";
                             return "";
                           });
  }

  // The receiver of the limiter's GC transitions (gcStart, gcMarkDone,
  // gcMarkTermination) and of limiting() in findRunnableGCWorker and
  // gcAssistAlloc1; the last two tell it from gcController (1.26+).
  RuntimeVariable GcCpuLimiter() {
    return RecoverVariable(bin_, code_, "runtime.gcCPULimiter",
                           {{{"runtime.gcStart"}, true, 0},
                            {{"runtime.gcMarkDone"}, true, 0},
                            {{"runtime.gcMarkTermination"}, true, 0},
                            {{"runtime.(*gcControllerState).findRunnableGCWorker"}, true, 0},
                            {{"runtime.gcAssistAlloc1"}, true, 0}},
                           0, Placed(DataSection::kNoptrbss, 8));
  }

 private:
  std::function<std::string(uint64_t)> Placed(DataSection section, uint64_t align) const {
    return [this, section, align](uint64_t a) { return CheckPlacement(md_, section, align, a); };
  }

  const GoBinary& bin_;
  const PclntabLocation loc_;
  const ModuleData& md_;
  RuntimeCode code_;
  const MemstatsVariableLayout& layout_;
};

// Distinct variables have distinct addresses: two recoveries agreeing on one
// would mean one of them is wrong.
void CheckDistinct(const GoBinary& bin, const MemstatsVariables& v) {
  std::vector<std::pair<std::string_view, const RuntimeVariable*>> all = {
      {"runtime.memstats", &v.memstats},    {"runtime.gcController", &v.gc_controller},
      {"runtime.mheap_", &v.mheap},         {"runtime.allp", &v.allp},
      {"runtime.allglen", &v.allglen},      {"runtime.allm", &v.allm},
      {"runtime.sched", &v.sched},          {"runtime.gomaxprocs", &v.gomaxprocs},
      {"runtime.emptymspan", &v.emptymspan}};
  if (v.starting_stack_size) all.push_back({"runtime.startingStackSize", &*v.starting_stack_size});
  if (v.gc_cpu_limiter) all.push_back({"runtime.gcCPULimiter", &*v.gc_cpu_limiter});
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i + 1; j < all.size(); ++j) {
      if (all[i].second->addr == all[j].second->addr) {
        throw Unrecoverable(bin, all[j].first,
                            "it came out at " + Hex(all[j].second->addr) + ", the address of " +
                                std::string(all[i].first));
      }
    }
  }
}

MemstatsVariables RecoverMemstatsVariables(const GoBinary& bin,
                                           const MemstatsVariableLayout& layout) {
  Recovery r(bin, layout);
  MemstatsVariables v;
  v.memstats = r.Memstats();
  v.gc_controller = r.GcController();
  v.mheap = r.Mheap();
  v.allp = r.Allp();
  v.allglen = r.Allglen();
  v.allm = r.Allm();
  v.sched = r.Sched();
  v.gomaxprocs = r.Gomaxprocs();
  v.emptymspan = r.Emptymspan();
  if (layout.has_limiter_and_stack_size) {
    v.starting_stack_size = r.StartingStackSize();
    v.gc_cpu_limiter = r.GcCpuLimiter();
  }
  CheckDistinct(bin, v);
  return v;
}

}  // namespace

MemstatsVariables LocateMemstatsVariables(const GoBinary& bin,
                                          const MemstatsVariableLayout& layout) {
  if (!bin.elf().HasSymtab()) return RecoverMemstatsVariables(bin, layout);
  MemstatsVariables v;
  v.memstats = MemstatsSymbol(bin, "runtime.memstats");
  v.gc_controller = MemstatsSymbol(bin, "runtime.gcController");
  v.mheap = MemstatsSymbol(bin, "runtime.mheap_");
  v.allp = MemstatsSymbol(bin, "runtime.allp");
  v.allglen = MemstatsSymbol(bin, "runtime.allglen");
  v.allm = MemstatsSymbol(bin, "runtime.allm");
  v.sched = MemstatsSymbol(bin, "runtime.sched");
  v.gomaxprocs = MemstatsSymbol(bin, "runtime.gomaxprocs");
  v.emptymspan = MemstatsSymbol(bin, "runtime.emptymspan");
  if (layout.has_limiter_and_stack_size) {
    v.starting_stack_size = MemstatsSymbol(bin, "runtime.startingStackSize");
    v.gc_cpu_limiter = MemstatsSymbol(bin, "runtime.gcCPULimiter");
  }
  return v;
}

}  // namespace goheap2pprof
