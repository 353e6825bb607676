#include "goroutine/goroutine_reader.h"

#include <algorithm>
#include <array>
#include <span>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "base/bytes.h"
#include "base/error.h"
#include "goroutine/unwind.h"

namespace goheap2pprof {

namespace {

// runtime/runtime2.go's statuses (go-goroutine-facts.md §4).
constexpr uint32_t kGidle = 0;
constexpr uint32_t kGrunning = 2;
constexpr uint32_t kGsyscall = 3;
constexpr uint32_t kGdead = 6;
constexpr uint32_t kGcopystack = 8;
constexpr uint32_t kGdeadextra = 11;
constexpr uint32_t kGscan = 0x1000;

uint64_t U64At(std::span<const uint8_t> g, uint64_t off) { return LoadU64(g.data() + off); }

// The pointers of allgs[0, allglen), read the way atomicAllG does: allglen
// first, then allgptr, then the array, then allgptr again (a grown array is
// garbage and may be reused: read again if it was replaced meanwhile).
std::vector<uint64_t> ReadAllgs(MemoryReader& mem, const GoroutineContext& ctx,
                                const GoroutineLimits& limits) {
  for (int attempt = 0; attempt < limits.max_attempts; ++attempt) {
    const uint64_t n = mem.ReadU64(ctx.allglen, "runtime.allglen");
    const uint64_t array = mem.ReadU64(ctx.allgptr, "runtime.allgptr");
    if (n == 0 || array == 0) {
      throw Error(ErrorKind::kMalformed, "runtime.allglen ", n, ", runtime.allgptr ", Hex(array),
                  ": the runtime has no goroutines yet");
    }
    if (n > limits.max_goroutines) {
      throw Error(ErrorKind::kUnsupported, "runtime.allglen is ", n, ", over the limit of ",
                  limits.max_goroutines, " goroutines")
          .WithHint("raise --max-goroutines if the target really has that many");
    }
    std::vector<uint64_t> gs(n);
    mem.Read(array, {reinterpret_cast<uint8_t*>(gs.data()), n * 8}, "runtime.allgs array");
    if (mem.ReadU64(ctx.allgptr, "runtime.allgptr") == array) return gs;
  }
  throw Error(ErrorKind::kMalformed, "runtime.allgptr changed on each of ", limits.max_attempts,
              " reads: goroutines are created faster than they can be read");
}

// What a goroutine's start function says about it (isSystemGoroutine).
enum class StartKind { kUser, kSystem, kFinalizer, kCleanups };

StartKind ClassifyStart(const GoroutineContext& ctx, uint64_t startpc) {
  std::optional<FuncRef> f = ctx.pclntab->FindFunc(startpc - ctx.bias);
  if (!f) return StartKind::kUser;
  Expected<std::string_view> name = ctx.pclntab->TryFuncName(*f);
  if (!name) return StartKind::kUser;
  if (*name == "runtime.main" || *name == "runtime.handleAsyncEvent" ||
      *name == "runtime.corostart") {
    return StartKind::kUser;
  }
  if (*name == ctx.layout.finalizer_function) return StartKind::kFinalizer;
  if (*name == "runtime.runCleanups" && ctx.layout.running_cleanups) return StartKind::kCleanups;
  return name->starts_with("runtime.") ? StartKind::kSystem : StartKind::kUser;
}

// The finalizer goroutine counts as a user goroutine only while it runs a
// finalizer; the cleanup goroutine (1.25+) while it runs cleanups.
bool IsSystemGoroutine(MemoryReader& mem, const GoroutineContext& ctx, StartKind kind,
                       std::span<const uint8_t> g) {
  switch (kind) {
    case StartKind::kUser:
      return false;
    case StartKind::kSystem:
      return true;
    case StartKind::kCleanups:
      return g[*ctx.layout.running_cleanups] == 0;
    case StartKind::kFinalizer:
      break;
  }
  if (ctx.fing == 0) return true;
  uint32_t fing = 0;
  std::span<uint8_t> dst(reinterpret_cast<uint8_t*>(&fing), ctx.fing_is_bool ? 1 : 4);
  if (!mem.TryRead(ctx.fing, dst)) return true;
  return ctx.fing_is_bool ? fing == 0 : (fing & 2) == 0;
}

// What must be equal in the two reads of a g for its stack to be the one
// the goroutine had: status, id, saved registers, stack bounds, labels, the
// wait reason, and trackingSeq. A goroutine that woke and parked again
// between the reads can have its gopark frame at the very same SP, with the
// same reason too (a sleep in a loop), its stack copied while it ran; but
// parking again bumped its trackingSeq. Only 256 moves (or a multiple) out
// of _Grunning in between, ending parked at the same place, would pass.
bool SameGoroutine(const GoroutineLayout& l, std::span<const uint8_t> a,
                   std::span<const uint8_t> b) {
  const uint64_t words[] = {l.stack_lo, l.stack_hi,  l.sched_sp,  l.sched_pc, l.sched_lr,
                            l.sched_bp, l.syscallsp, l.syscallpc, l.goid,     l.labels};
  for (uint64_t off : words) {
    if (U64At(a, off) != U64At(b, off)) return false;
  }
  return LoadU32(a.data() + l.atomicstatus) == LoadU32(b.data() + l.atomicstatus) &&
         a[l.waitreason] == b[l.waitreason] && a[l.tracking_seq] == b[l.tracking_seq];
}

// One goroutine of a batch between its reads.
struct Pending {
  uint64_t g = 0;
  size_t index = 0;  // in allgs
  int attempts = 0;
  std::vector<uint8_t> first;  // the g, first read
  std::vector<uint8_t> stack;  // from the SP up
  uint64_t sp = 0;
  uint64_t pc = 0;
  uint64_t lr = 0;      // gobuf.lr (arm64), none from the syscall registers
  bool unwind = false;  // a goroutine the profile has
  bool on_cpu = false;  // running, kept without a stack (keep_running)
};

class Walk {
 public:
  Walk(MemoryReader& mem, const GoroutineContext& ctx, const GoroutineLimits& limits,
       const std::vector<uint64_t>& allgs, GoroutineSnapshot& out)
      : allgs_(allgs),
        mem_(mem),
        ctx_(ctx),
        limits_(limits),
        out_(out),
        unwind_cache_(*ctx.pclntab, ctx.async_preempt_traps) {}

  // Reads gs in batches; goroutines that moved go again after a pause,
  // each at most max_attempts times.
  void Run() {
    std::vector<size_t> todo(allgs_.size());
    for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
    auto pause = limits_.retry_pause;
    while (!todo.empty()) {
      if (round_ != 0) {
        std::this_thread::sleep_for(pause);
        pause *= 4;
      }
      std::vector<size_t> again;
      for (size_t at = 0; at < todo.size(); at += limits_.batch) {
        const size_t n = std::min(limits_.batch, todo.size() - at);
        Batch(std::span<const size_t>(todo).subspan(at, n), again);
      }
      todo = std::move(again);
      ++round_;
    }
    if (out_.stats.retried != 0) {
      std::stable_sort(
          out_.goroutines.begin(), out_.goroutines.end(),
          [](const Goroutine& a, const Goroutine& b) { return a.allgs_index < b.allgs_index; });
    }
  }

 private:
  void Count(uint64_t bytes) {
    out_.stats.bytes_read += bytes;
    if (out_.stats.bytes_read > limits_.max_total_bytes) {
      throw Error(ErrorKind::kUnsupported, "reading goroutines passed the limit of ",
                  limits_.max_total_bytes, " bytes read")
          .WithHint("raise --max-bytes, or lower --max-stack-bytes");
    }
  }

  // Reads every g of the batch into its Pending (first), or reads again
  // those unwound and forgets the first read of each that changed (one
  // ReadMany either way).
  void ReadGs(std::vector<Pending>& batch, bool first) {
    std::vector<ReadRequest> reqs;
    std::vector<size_t> which;
    std::vector<std::vector<uint8_t>> again(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!first && (!batch[i].unwind || batch[i].first.empty())) continue;
      std::vector<uint8_t>& dst = first ? batch[i].first : again[i];
      dst.resize(ctx_.layout.read_size);
      reqs.push_back({batch[i].g, dst, false});
      which.push_back(i);
      Count(dst.size());
    }
    mem_.ReadMany(reqs);
    for (size_t k = 0; k < reqs.size(); ++k) {
      Pending& p = batch[which[k]];
      if (!reqs[k].ok || (!first && !SameGoroutine(ctx_.layout, p.first, again[which[k]]))) {
        p.first.clear();
      }
    }
  }

  // From a first read: whether the goroutine is one to unwind, and where
  // from. Counts the ones left out.
  void Classify(Pending& p) {
    const GoroutineLayout& l = ctx_.layout;
    std::span<const uint8_t> g = p.first;
    const uint32_t status = LoadU32(g.data() + l.atomicstatus);
    if (status == kGidle || status == kGdead || (l.has_leaked_status && status == kGdeadextra)) {
      ++out_.stats.dead;
      return;
    }
    if ((status & kGscan) != 0 || status == kGcopystack) {
      p.first.clear();  // being scanned or moved: read it again
      return;
    }
    const uint64_t startpc = U64At(g, l.startpc);
    auto [kind, inserted] = start_kinds_.try_emplace(startpc, StartKind::kUser);
    if (inserted) kind->second = ClassifyStart(ctx_, startpc);
    if (IsSystemGoroutine(mem_, ctx_, kind->second, g)) {
      ++out_.stats.system;
      return;
    }
    const uint64_t syscallsp = U64At(g, l.syscallsp);
    if (status == kGrunning && syscallsp == 0) {
      ++out_.stats.running;
      p.on_cpu = ctx_.keep_running;
      return;
    }
    const bool in_syscall = syscallsp != 0 || status == kGsyscall;
    p.sp = in_syscall ? syscallsp : U64At(g, l.sched_sp);
    p.pc = in_syscall ? U64At(g, l.syscallpc) : U64At(g, l.sched_pc);
    p.lr = in_syscall ? 0 : U64At(g, l.sched_lr);
    const uint64_t lo = U64At(g, l.stack_lo);
    const uint64_t hi = U64At(g, l.stack_hi);
    if (p.sp < lo || p.sp >= hi) {
      p.first.clear();  // registers of another stack: a goroutine in transition
      return;
    }
    p.stack.resize(std::min(hi - p.sp, limits_.max_stack_bytes));
    p.unwind = true;
  }

  void ReadStacks(std::vector<Pending>& batch) {
    std::vector<ReadRequest> reqs;
    std::vector<size_t> which;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i].unwind) continue;
      reqs.push_back({batch[i].sp, batch[i].stack, false});
      which.push_back(i);
      Count(batch[i].stack.size());
    }
    mem_.ReadMany(reqs);
    for (size_t k = 0; k < reqs.size(); ++k) {
      if (!reqs[k].ok) batch[which[k]].first.clear();
    }
  }

  // What the g itself says, from its first read.
  Goroutine Describe(const Pending& p) const {
    const GoroutineLayout& l = ctx_.layout;
    std::span<const uint8_t> g = p.first;
    return Goroutine{.g = p.g,
                     .goid = U64At(g, l.goid),
                     .status = LoadU32(g.data() + l.atomicstatus),
                     .wait_reason = g[l.waitreason],
                     .wait_since = static_cast<int64_t>(U64At(g, l.waitsince)),
                     .gopc = U64At(g, l.gopc),
                     .startpc = U64At(g, l.startpc),
                     .parent_goid = l.parent_goid ? U64At(g, *l.parent_goid) : 0,
                     .pcs = {},
                     .labels = {},
                     .allgs_index = p.index,
                     .locked_to_thread = U64At(g, l.lockedm) != 0,
                     .on_cpu = p.on_cpu,
                     .stack_lo = U64At(g, l.stack_lo),
                     .stack_hi = U64At(g, l.stack_hi)};
  }

  std::optional<Goroutine> Unwind(const Pending& p) {
    const GoroutineLayout& l = ctx_.layout;
    std::span<const uint8_t> g = p.first;
    Goroutine out = Describe(p);
    UnwindResult r = UnwindGoroutine(unwind_cache_, ctx_.func_ids, ctx_.bias, ctx_.call_arch,
                                     {p.pc, p.sp, p.lr}, {p.sp, p.stack}, ctx_.profile_depth);
    // A stack that ends anywhere but at its top frame or the depth came from
    // a stale copy, or was cut by the copy's bound.
    if (r.end == UnwindEnd::kUnknownPc || r.end == UnwindEnd::kMalformed) return std::nullopt;
    if (r.end == UnwindEnd::kOffStack) {
      if (p.stack.size() < limits_.max_stack_bytes) return std::nullopt;
      ++out_.stats.truncated;
    }
    if (r.end == UnwindEnd::kDepth) ++out_.stats.truncated;
    out.pcs = std::move(r.pcs);
    if (const uint64_t labels = U64At(g, l.labels); labels != 0) {
      std::optional<Labels> read = ReadLabels(mem_, labels, l.labels_encoding);
      if (!read) return std::nullopt;
      out.labels = std::move(*read);
    }
    return out;
  }

  void Batch(std::span<const size_t> todo, std::vector<size_t>& again) {
    std::vector<Pending> batch(todo.size());
    for (size_t i = 0; i < todo.size(); ++i) {
      batch[i].index = todo[i];
      batch[i].g = allgs_[todo[i]];
    }
    ReadGs(batch, true);
    for (Pending& p : batch) {
      if (!p.first.empty()) Classify(p);
    }
    ReadStacks(batch);
    std::vector<std::optional<Goroutine>> results(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].unwind && !batch[i].first.empty()) results[i] = Unwind(batch[i]);
      if (batch[i].unwind && !results[i]) batch[i].first.clear();
      if (batch[i].on_cpu && !batch[i].first.empty()) results[i] = Describe(batch[i]);
    }
    ReadGs(batch, false);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].first.empty()) {
        Moved(batch[i].index, again);
      } else if (results[i]) {
        out_.goroutines.push_back(std::move(*results[i]));
      }
    }
  }

  void Moved(size_t index, std::vector<size_t>& again) {
    if (round_ + 1 >= limits_.max_attempts) {
      ++out_.stats.dropped;
      return;
    }
    if (round_ == 0) ++out_.stats.retried;
    again.push_back(index);
  }

  const std::vector<uint64_t>& allgs_;
  MemoryReader& mem_;
  const GoroutineContext& ctx_;
  const GoroutineLimits& limits_;
  GoroutineSnapshot& out_;
  UnwindCache unwind_cache_;
  // By start PC: a program starts its goroutines from few functions (the
  // map holds one entry per distinct startpc read, at most allglen).
  std::unordered_map<uint64_t, StartKind> start_kinds_;
  int round_ = 0;
};

}  // namespace

GoroutineSnapshot ReadGoroutines(MemoryReader& mem, const GoroutineContext& ctx,
                                 const GoroutineLimits& limits) {
  GoroutineSnapshot out;
  const std::vector<uint64_t> gs = ReadAllgs(mem, ctx, limits);
  out.stats.allglen = gs.size();
  Walk(mem, ctx, limits, gs, out).Run();
  return out;
}

}  // namespace goheap2pprof
