// What differs between Go runtime versions for a remote heap-profile reader,
// as data chosen once from the target's Go version. Code below the app layer
// reads these fields and never compares version numbers itself.
//
//   RuntimeTraits t = TraitsForVersion({1, 22, 0});
//   if (t.cycle_encoding == CycleEncoding::kMProfCycle) ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gobin/buildinfo.h"
#include "gobin/memstats_variables.h"
#include "gobin/runtime_variables.h"

namespace goheap2pprof {

enum class CycleEncoding {
  kMProfStruct,  // 1.18: runtime.mProf {cycle uint32; flushed bool}
  kMProfCycle,   // 1.19+: runtime.mProfCycle, uint32 value = cycle<<1 | flushed
};

// runtime.memRecordCycle, the ring of per-cycle counters after a bucket's
// stack: {allocs, frees, alloc_bytes, free_bytes} up to Go 1.26 (memRecord of
// 128 bytes); {allocs, frees} from Go 1.27, where bytes are objects x the
// bucket's size (64 bytes).
enum class MemRecordLayout { kCountsAndBytes, kCountsOnly };

// FuncIDs needed for expandFinalInlineFrame's wrapper elision.
struct FuncIds {
  uint8_t gopanic = 0;
  uint8_t panicwrap = 0;
  uint8_t sigpanic = 0;
  uint8_t wrapper = 0;
};

// How Go's memory statistics differ between versions (go-memstats-facts.md,
// sections 1, 4-7), for the outside read of memstats/. Offsets are not here
// but in runtime/memstats_layout.h.
struct MemstatsTraits {
  MemstatsVariableLayout variables;
  // 1.18: heap_sys/heap_inuse/heap_released are mstats fields and
  // gcController.heapGoal is a field; 1.19+ moved them to gcController and
  // compute the goal (heapGoal()).
  bool heap_in_mstats = false;
  // heapStatsDelta.inPtrScalarBits exists (1.18-1.24).
  bool has_ptr_scalar_bits = true;
  // heapGoal()'s memory-limit headroom: 1 MiB (1.19-1.20) or max(3 %,
  // 1 MiB) (1.21+). Unused with heap_in_mstats.
  bool goal_headroom_percent = true;
  // ReadMemStats's mcache flush: 1.18 subtracts a cached span's unused
  // slots (counted when cached); 1.19+ adds the slots used while cached.
  bool flush_adds_used_slots = true;
  // noPLock is the spinbit mutex (1.24+): locked when key & 1; else the
  // futex mutex, locked when key != 0.
  bool spinbit_mutex = true;
  // sched.gFree has two lists (stack, noStack) from 1.25, one before.
  bool sched_two_free_lists = true;
  // /sched/goroutines:goroutines counts system goroutines (gcount(true),
  // 1.26+); before it equals NumGoroutine.
  bool goroutines_metric_counts_system = true;
  // Metrics added after 1.18: /sched/gomaxprocs, /gc/stack/starting-size,
  // /gc/limiter/last-enabled (1.19); /gc/gogc, /gc/gomemlimit,
  // /gc/heap/live, /gc/scan/* (1.21).
  bool metrics_1_19 = true;
  bool metrics_1_21 = true;
};

struct RuntimeTraits {
  GoVersion version;
  // True for the Go minor versions the project's tests verify end to end
  // (every patch release of them: patch releases carry fixes only, and the
  // one patch-level change of the heap profile known, go1.21.6's, is a
  // field below with both sides tested); others are read with a warning,
  // and a newer one only when its bucket layout is proven
  // (runtime/bucket_layout.h).
  bool verified = false;
  bool newer_than_verified = false;  // newer than every verified version

  // --- the heap profiler's variables (runtime/mprof.go) ---
  // The cycle's name (runtime.mProfCycle or runtime.mProf) and the section
  // each variable is in.
  RuntimeVariableLayout variables;
  CycleEncoding cycle_encoding = CycleEncoding::kMProfCycle;
  // Largest nstk a heap bucket can have: 32 before 1.23, the 1024 cap of
  // debug.profstackdepth from 1.23, plus the 2 extra words recorded from 1.26.
  uint64_t max_stack_words = 32;
  // memRecordCycle holds bytes up to 1.26, only object counts from 1.27.
  MemRecordLayout record_layout = MemRecordLayout::kCountsAndBytes;

  // --- runtime/pprof's heap writer (protomem.go, proto.go) ---
  // hideRuntime drops leading frames whose FuncForPC name has one of these.
  std::vector<std::string_view> hidden_prefixes;
  bool writes_start_line = false;  // Function.start_line, 1.20+
  // 1.27+: the "bytes" label is the bucket's object size on every sample;
  // before, AllocBytes/AllocObjects and only when that is non-zero.
  bool bytes_label_is_object_size = false;
  // runtime.Frame.Function is funcNameForPrint's: generic shapes shown as
  // "[...]" (1.21+); before, the symbol name itself.
  bool frame_function_elides_shapes = false;
  // emitLocation keys Functions by Frame.Function instead of the symbol
  // name, so generic instances share the first one's Function: go1.21.0 to
  // go1.21.5 (fixed in go1.21.6, "runtime/pprof: fix generics function
  // names"). Before 1.21 the two names are the same.
  bool dedup_by_printed_name = false;
  // ?debug=1 (writeHeapInternal) orders records by in-use bytes: largest
  // first with sort.Slice up to 1.22, smallest first with
  // slices.SortFunc(cmp.Compare) from 1.23 (read in each toolchain's
  // runtime/pprof/pprof.go). Ties are unordered in both.
  bool debug_text_sorts_ascending = false;
  bool deck_compares_printed_name = false;  // 1.18-1.21 compare Frame.Function
  bool cached_location_deck_retry = false;  // 1.19+: fake-PC retry on cache hit
  FuncIds func_ids;

  // --- the memory statistics (mstats.go, metrics.go, mgcpacer.go) ---
  MemstatsTraits memstats;
};

// Throws Error(kUnsupported) for Go older than 1.18 (other bucket and
// pclntab formats). Versions newer than the newest verified one get the
// newest known traits with verified = false.
RuntimeTraits TraitsForVersion(const GoVersion& version);

// Every Go release the tests verify ("Go 1.18.10, 1.19.8, ..."), for
// messages.
std::string VerifiedVersionsText();

// The warning for a version whose layout the tests do not verify (newer or
// not among the verified minors), or nullopt for a verified one.
std::optional<std::string> UnverifiedVersionWarning(const RuntimeTraits& traits);

// The newest verified Go version ({1, 27, 0}): a newer one is read with its
// traits, and so with its heap-bucket layout.
GoVersion NewestVerifiedVersion();

}  // namespace goheap2pprof
