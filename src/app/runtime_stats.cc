#include "app/runtime_stats.h"

#include <chrono>
#include <set>

#include "base/error.h"
#include "elf/load_bias.h"
#include "memstats/memstats_reader.h"

namespace goheap2pprof {

namespace {

MemstatsAddresses Addresses(const MemstatsVariables& v, uint64_t bias) {
  MemstatsAddresses at;
  at.memstats = v.memstats.addr + bias;
  at.gc_controller = v.gc_controller.addr + bias;
  at.mheap = v.mheap.addr + bias;
  at.allp = v.allp.addr + bias;
  at.allglen = v.allglen.addr + bias;
  at.allm = v.allm.addr + bias;
  at.sched = v.sched.addr + bias;
  at.gomaxprocs = v.gomaxprocs.addr + bias;
  at.emptymspan = v.emptymspan.addr + bias;
  if (v.starting_stack_size) at.starting_stack_size = v.starting_stack_size->addr + bias;
  if (v.gc_cpu_limiter) at.gc_cpu_limiter = v.gc_cpu_limiter->addr + bias;
  return at;
}

// Forwards to the source's reader (keeping ReadMany's batches, on which the
// protocol's ordering rests) and counts the distinct 4 KiB pages read, for
// -v and bench/memstats_read.sh: the read must not grow with the heap.
class PageCountingReader : public MemoryReader {
 public:
  explicit PageCountingReader(MemoryReader& inner) : inner_(inner) {}
  bool TryRead(uint64_t addr, std::span<uint8_t> dst) override {
    Count(addr, dst.size());
    return inner_.TryRead(addr, dst);
  }
  void ReadMany(std::span<ReadRequest> requests) override {
    for (const ReadRequest& r : requests) Count(r.addr, r.dst.size());
    inner_.ReadMany(requests);
  }
  ReadStats stats() const override { return inner_.stats(); }
  size_t pages() const { return pages_.size(); }

 private:
  void Count(uint64_t addr, uint64_t len) {
    // Bounded by the reads' own bounds; a huge bogus length counts its ends.
    if (len == 0) return;
    if (len > (uint64_t{1} << 24)) {
      pages_.insert(addr >> 12);
      pages_.insert((addr + len - 1) >> 12);
      return;
    }
    for (uint64_t p = addr >> 12; p <= (addr + len - 1) >> 12; ++p) pages_.insert(p);
  }
  MemoryReader& inner_;
  std::set<uint64_t> pages_;
};

}  // namespace

GoRuntimeStats ReadGoRuntimeStats(CaptureSource& source, const ExecutableAnalysis& analysis) {
  const MemstatsAnalysis& ms = analysis.memstats();
  const auto started = std::chrono::steady_clock::now();
  const uint64_t bias =
      ComputeLoadBias(analysis.elf(), source.mappings(), source.executable().running);
  const MemstatsAddresses at = Addresses(ms.variables, bias);
  PageCountingReader mem(source.memory());
  const ReadStats before = mem.stats();
  const RawMemstats raw = ReadRawMemstats(mem, at, ms.layout.layout, analysis.traits(),
                                          {.snapshot = source.is_snapshot()});
  source.CheckSameProcess();
  GoRuntimeStats out = ComputeGoRuntimeStats(raw, analysis.traits());
  const ReadStats after = mem.stats();
  out.notes = ms.layout.notes;
  if (!raw.torn.empty()) {
    out.warnings.push_back(
        Concat("the core was written while the runtime was updating its heap "
               "statistics (",
               raw.torn, "): the figures may miss that one update"));
  }
  out.notes.push_back(Concat("runtime.memstats at ", Hex(at.memstats), " (",
                             ms.variables.memstats.source, "), gcController at ",
                             Hex(at.gc_controller), ", mheap_ at ", Hex(at.mheap), ", load bias ",
                             Hex(bias)));
  out.notes.push_back(Concat(
      "memory statistics read in ", raw.attempts, " attempt(s), ", after.syscalls - before.syscalls,
      " read calls, ", after.bytes_read - before.bytes_read, " bytes, ", mem.pages(), " pages, ",
      raw.flush.cached_spans, " cached spans, ",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count(),
      " ms"));
  return out;
}

OptionalRuntimeStats ReadOptionalGoRuntimeStats(CaptureSource& source,
                                                const ExecutableAnalysis& analysis) {
  try {
    return {.stats = ReadGoRuntimeStats(source, analysis), .absent_reason = ""};
  } catch (const Error& e) {
    // Boundary: the optional part of a capture. Statistics that cannot be
    // read are absent, with why; a process gone or forbidden is the whole
    // capture's error.
    if (e.kind() == ErrorKind::kNoSuchProcess || e.kind() == ErrorKind::kPermission) throw;
    return {.stats = std::nullopt, .absent_reason = e.what()};
  }
}

}  // namespace goheap2pprof
