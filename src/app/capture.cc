#include "app/capture.h"

#include <chrono>
#include <functional>
#include <iomanip>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>

#include "base/bytes.h"
#include "base/error.h"
#include "base/huge_pages.h"
#include "elf/load_bias.h"
#include "heap/buckets.h"
#include "heap/snapshot.h"
#include "pprof/stack_warmer.h"
#include "runtime/memstats_layout.h"
#include "runtime/runtime_traits.h"

namespace goheap2pprof {

namespace {

using Clock = std::chrono::steady_clock;

// Records each pass's wall time in the report.
class PassTimer {
 public:
  explicit PassTimer(CaptureReport& report) : report_(report) {}
  void Done(std::string_view pass) {
    const Clock::time_point now = Clock::now();
    report_.phase_ms.emplace_back(std::string(pass),
                                  std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

 private:
  CaptureReport& report_;
  Clock::time_point last_ = Clock::now();
};

// A place in the report's notes and warnings: where the analysis's go (they
// are complete only once its layout check ended), where the walk's start.
struct ReportPosition {
  size_t notes = 0;
  size_t warnings = 0;
};

// Pass 1: what is captured, and what the analysis found in its executable.
ReportPosition Identify(const CaptureSource& source, const ExecutableAnalysis& analysis,
                        CaptureReport& report) {
  const TargetExecutable& exe = source.executable();
  report.go_version = analysis.go_version();
  report.notes.insert(report.notes.end(), exe.notes.begin(), exe.notes.end());
  report.warnings.insert(report.warnings.end(), exe.warnings.begin(), exe.warnings.end());
  report.notes.push_back(
      Concat("target ", analysis.elf().name(), ", comm ", source.identity().comm));
  return {report.notes.size(), report.warnings.size()};
}

// The entries of `lines` from `from` on, moved out of it.
std::vector<std::string> TakeFrom(std::vector<std::string>& lines, size_t from) {
  std::vector<std::string> taken(
      std::make_move_iterator(lines.begin() + static_cast<ptrdiff_t>(from)),
      std::make_move_iterator(lines.end()));
  lines.resize(from);
  return taken;
}

// Pass 3b: the heap-bucket layout the walk read with must be the
// executable's. A one-shot capture checks it against the DWARF while it
// walks; a refusal throws here, before anything is built or written, and
// drops what the walk said (`walk`: where its notes and warnings start),
// which a wrong layout makes meaningless (a cycle that "never settles"):
// it is set aside before the check and put back once the layout is proven.
void ProvenLayout(const ExecutableAnalysis& analysis, ReportPosition at, ReportPosition walk,
                  CaptureReport& report) {
  std::vector<std::string> walk_notes = TakeFrom(report.notes, walk.notes);
  std::vector<std::string> walk_warnings = TakeFrom(report.warnings, walk.warnings);
  analysis.AwaitLayoutCheck();
  report.notes.insert(report.notes.end(), std::make_move_iterator(walk_notes.begin()),
                      std::make_move_iterator(walk_notes.end()));
  report.warnings.insert(report.warnings.end(), std::make_move_iterator(walk_warnings.begin()),
                         std::make_move_iterator(walk_warnings.end()));
  report.notes.insert(report.notes.begin() + static_cast<ptrdiff_t>(at.notes),
                      analysis.notes().begin(), analysis.notes().end());
  report.warnings.insert(report.warnings.begin() + static_cast<ptrdiff_t>(at.warnings),
                         analysis.warnings().begin(), analysis.warnings().end());
}

// Pass 2: the runtime variables in this process: their link-time addresses
// plus the executable's load bias.
HeapAddresses LocateVariables(const ExecutableAnalysis& analysis, uint64_t bias,
                              CaptureReport& report) {
  const RuntimeVariables& vars = analysis.variables();
  const HeapAddresses addrs{vars.mbuckets.addr + bias, vars.mem_profile_rate.addr + bias,
                            vars.cycle.addr + bias};
  report.notes.push_back(
      Concat("build mode ", BuildModeName(analysis.elf()), ", load bias ", Hex(bias)));
  report.notes.push_back(Concat("runtime.mbuckets at ", Hex(addrs.mbuckets), " (",
                                vars.mbuckets.source, "), runtime.MemProfileRate at ",
                                Hex(addrs.mem_profile_rate), " (", vars.mem_profile_rate.source,
                                "), ", analysis.traits().variables.cycle_symbol, " at ",
                                Hex(addrs.cycle), " (", vars.cycle.source, ")"));
  if (vars.disable_memory_profiling) {
    report.notes.push_back(Concat("runtime.disableMemoryProfiling at ",
                                  Hex(vars.disable_memory_profiling->addr + bias), " (",
                                  vars.disable_memory_profiling->source, ")"));
  }
  return addrs;
}

// An upper bound on the process's heap buckets (HeapBucketBound), so that
// the walk reserves their vector once. The value only sizes a reservation:
// a wrong one (a layout we do not know, a torn read) costs a reallocation
// or unused address space, never a wrong profile. 0 without runtime.memstats
// in the symbol table.
uint64_t BucketCountBound(CaptureSource& source, const ExecutableAnalysis& analysis,
                          uint64_t bias) {
  // Reserved pages are not touched unless used, but they count against an
  // agent worker's address-space limit: 2^20 buckets are 88 MiB.
  constexpr uint64_t kMaxReserved = uint64_t{1} << 20;
  const std::optional<ElfSymbol> sym = analysis.elf().FindSymbol("runtime.memstats");
  const MemstatsLayout layout = MemstatsLayoutTable(analysis.traits(), analysis.elf().machine());
  if (!sym || layout.ms_buckhash_sys == kNoField) return 0;
  uint8_t bytes[8];
  if (!source.memory().TryRead(sym->value + bias + layout.ms_buckhash_sys, bytes)) return 0;
  return HeapBucketBound(LoadU64(bytes), analysis.traits().record_layout, kMaxReserved);
}

// Profile.time_nanos: the caller's, or the wall clock now.
int64_t ProfileTime(const CaptureOptions& options) {
  return options.time_nanos.value_or(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count());
}

// A one-shot capture's build, fed by the walk as it reads (issue 42): each
// bucket's stack becomes a run of locations while it is in the walk's
// scratch, so no stack is kept; the samples follow once the counters are
// settled (the consistency check needs the whole walk). A walk discarded
// for a torn cycle discards the build with it.
struct StreamedBuild {
  std::optional<HeapProfileBuilder> builder;
  // A state's walk's runs, one per bucket in list order (a one-shot
  // capture's are the tags in snap.packed).
  std::vector<uint32_t> runs;
  int64_t time_nanos = 0;
};

// keep_ends: for a state, whose snapshot a later capture refreshes.
SnapshotStream StreamInto(const CaptureSource& source, const ExecutableAnalysis& analysis,
                          uint64_t bias, const CaptureOptions& options, bool keep_ends,
                          StreamedBuild& build) {
  return SnapshotStream{
      .start =
          [&source, &analysis, bias, &options, &build](int64_t rate) {
            build.builder.reset();
            build.runs.clear();
            build.time_nanos = ProfileTime(options);
            build.builder.emplace(analysis.symbolizer(), analysis.traits(),
                                  source.ProfileMappings(), rate, build.time_nanos, bias);
          },
      .bucket =
          [&build, keep_ends](const Bucket& b, AheadNote hidden) {
            const uint32_t run = build.builder->RunOfTransient(
                b.stack, hidden == kNoAheadNote ? HeapProfileBuilder::kHiddenUnknown : hidden);
            if (keep_ends) {  // the snapshot packs it otherwise
              GrowWithHugePages(build.runs, 1);
              build.runs.push_back(run);
            }
            return run;
          },
      .keep_ends = keep_ends,
      // The walk's thread symbolizes ahead of the build (most of a cold
      // capture's time when every bucket has its own call site), and tells
      // it how many of the stack's frames are hidden.
      .ahead =
          [warmer = std::make_shared<StackWarmer>(analysis.symbolizer(), analysis.traits(), bias)](
              const Bucket& b) {
            const size_t hidden = warmer->Warm(b.stack);
            return hidden < kNoAheadNote ? static_cast<AheadNote>(hidden) : kNoAheadNote;
          },
  };
}

// BucketCountBound, for a one-shot capture only: a state keeps its
// buckets, and an agent's memory budget counts their capacity.
uint64_t ReservedBuckets(CaptureSource& source, const ExecutableAnalysis& analysis, uint64_t bias,
                         bool one_shot, CaptureReport& report) {
  const uint64_t bound = one_shot ? BucketCountBound(source, analysis, bias) : 0;
  if (bound != 0) report.notes.push_back(Concat("room reserved for ", bound, " heap buckets"));
  return bound;
}

// How pass 3 reads: a fresh walk streamed into a build (or, without
// `fresh`, keeping every stack); with a state of the same process, first
// its refresh, which sets report.repeated and says whether the snapshot is
// ready (false: walk afresh).
struct HeapWalk {
  const SnapshotStream* fresh = nullptr;
  std::function<bool(MemoryReader& mem, const SnapshotLimits& limits)> refresh;
};

// Pass 3: the rate and the bucket list, the walk repeated if a GC published a
// new profile cycle meanwhile; with a state of the same process, only what
// changed since its last capture.
void WalkHeap(CaptureSource& source, const HeapAddresses& addrs, const RuntimeTraits& traits,
              uint64_t bucket_bound, CaptureReport& report, HeapSnapshot& snap,
              const HeapWalk& walk) {
  // Buckets live in the runtime's persistentalloc chunks: reading whole
  // blocks of the readable mappings makes the walk cost one system call per
  // block instead of a few per bucket.
  SnapshotLimits limits;
  limits.reserve_buckets = bucket_bound;
  for (const MapsEntry& e : source.mappings()) {
    if (e.readable()) limits.cache_ranges.push_back({e.start, e.end});
  }
  MemoryReader& mem = source.memory();
  const ReadStats before = mem.stats();
  if (!walk.refresh || !walk.refresh(mem, limits)) {
    snap = walk.fresh != nullptr ? StreamHeapSnapshot(mem, addrs, traits, limits, *walk.fresh)
                                 : ReadHeapSnapshot(mem, addrs, traits, limits);
  }
  report.buckets = snap.bucket_count();
  report.walks = snap.walks;
  report.torn_walks = static_cast<uint64_t>(snap.walks - (snap.consistent ? 1 : 0));
  report.read_syscalls = mem.stats().syscalls - before.syscalls;
  report.bytes_read = mem.stats().bytes_read - before.bytes_read;
  report.rate = snap.rate;
  report.cycle = snap.cycle;
  report.consistent = snap.consistent;
  if (!snap.consistent) {
    report.warnings.push_back(
        Concat("the profile cycle changed during each of ", snap.walks,
               " walks (the target collects garbage constantly); counters may mix two cycles"));
  }
  report.notes.push_back(Concat("MemProfileRate ", snap.rate, ", cycle ", snap.cycle, ", ",
                                snap.bucket_count(), " buckets, ", snap.walks,
                                snap.walks == 1 ? " walk" : " walks"));
}

// The rate the runtime starts with, before schedinit zeroes it for a
// program the linker compiled sampling out of: the initial value of
// runtime.MemProfileRate in the file (524288 since Go 1.20; 1.18 and 1.19 set
// it in runtime.init, after start-up, so the file holds none and nothing was
// sampled before). GODEBUG=memprofilerate replaces it during schedinit, which
// the target's memory no longer shows. 0 when the file holds no value.
int64_t StartupRate(const ExecutableAnalysis& analysis) {
  const std::optional<Bytes> word =
      analysis.elf().ReadVaddr(analysis.variables().mem_profile_rate.addr, 8);
  return word && word->size() == 8 ? static_cast<int64_t>(LoadU64(word->data())) : 0;
}

// Refuses a rate of 0, in the words of what set it: the linker (`flag` true),
// the program or GODEBUG (`flag` false), or unknown (the flag not located).
void RefuseRateZero(const CaptureSource& source, std::optional<bool> flag, size_t buckets) {
  const pid_t pid = source.identity().pid;
  // A core is past turning anything on; a live process is not.
  const std::string enable =
      source.is_snapshot()
          ? ""
          : Concat("turn sampling on now with 'goheap2pprof enable-sampling ", pid,
                   "' and capture again once the leak has grown (allocations made before it "
                   "are not recoverable); or ");
  if (flag && *flag) {
    throw Error(ErrorKind::kSamplingDisabled, "heap profiling is compiled out of process ", pid,
                ": the linker set runtime.disableMemoryProfiling because the program never uses "
                "runtime/pprof or runtime.MemProfile, and runtime.MemProfileRate is 0 (",
                buckets, " bucket(s), sampled at start-up or while the rate was last above 0)")
        .WithHint(enable +
                  "link runtime/pprof into the program (e.g. import _ \"net/http/pprof\") and "
                  "restart it");
  }
  if (flag) {
    throw Error(ErrorKind::kSamplingDisabled, "heap profiling is turned off in process ", pid,
                " by the program or GODEBUG: the program set runtime.MemProfileRate = 0 or ran "
                "with GODEBUG=memprofilerate=0 (",
                buckets, " bucket(s) sampled before that)")
        .WithHint(enable + "remove the assignment or the GODEBUG setting and restart the program");
  }
  throw Error(ErrorKind::kSamplingDisabled, "heap profiling is off in process ", pid,
              ": runtime.MemProfileRate is 0, and runtime.disableMemoryProfiling could not be "
              "read to tell whether the linker compiled it out or the program or GODEBUG "
              "turned it off (",
              buckets, " bucket(s))")
      .WithHint(enable + "link runtime/pprof into the program and let it keep a rate above 0");
}

// Pass 4: is heap sampling on at all? The runtime's state decides, not the
// linker's: the linker compiles sampling out of programs that never read the
// profile (runtime.disableMemoryProfiling, and schedinit zeroes the rate), but
// such a program may assign runtime.MemProfileRate itself later, or have it
// assigned by `goheap2pprof enable-sampling`; its buckets are then real from
// that moment on. A rate of 0 throws kSamplingDisabled, whoever set it: the
// buckets are then from before, and say nothing of the heap now.
void CheckSamplingState(CaptureSource& source, const ExecutableAnalysis& analysis, uint64_t bias,
                        const HeapSnapshot& snap, CaptureReport& report) {
  const pid_t pid = source.identity().pid;
  const std::optional<RuntimeVariable>& disable = analysis.variables().disable_memory_profiling;
  uint8_t flag = 0;
  std::optional<bool> compiled_out;
  if (disable && source.memory().TryRead(disable->addr + bias, std::span<uint8_t>(&flag, 1))) {
    compiled_out = flag != 0;
  }
  if (snap.rate == 0) RefuseRateZero(source, compiled_out, snap.bucket_count());
  if (compiled_out.value_or(false)) {
    report.sampling_started_late = true;
    report.notes.push_back(
        Concat("heap sampling began after start-up in process ", pid,
               " (runtime.disableMemoryProfiling is set, and runtime.MemProfileRate was assigned "
               "later): allocations made before that are not in the profile"));
    const int64_t startup = StartupRate(analysis);
    if (startup > 0 && startup != snap.rate && snap.bucket_count() != 0) {
      report.mixed_rates.push_back(
          Concat("runtime.MemProfileRate is ", snap.rate, " now, but the buckets made during ",
                 "runtime start-up were sampled at ", startup, " (or at GODEBUG's ",
                 "memprofilerate) before schedinit zeroed it: scaling them with ", snap.rate,
                 " mixes rates, as the runtime's own profile would"));
    }
  }
  if (snap.bucket_count() == 0) {
    report.warnings.push_back(Concat("no heap allocation has been sampled yet in process ", pid,
                                     "; writing an empty profile, as the runtime would serve"));
  }
}

// A repeated capture whose previous one read another rate: buckets sampled
// at the old rate are scaled with the new one. The state remembers the old
// rate for as long as it lasts, since allocation counters never forget.
// `refreshed`: the state held a capture, whose rate was `previous`.
void CheckRateChange(ProcessCaptureState& state, bool refreshed, int64_t previous, pid_t pid,
                     int64_t rate, CaptureReport& report) {
  if (refreshed && previous != rate) state.other_rate = previous;
  if (!state.other_rate || *state.other_rate == rate) return;
  report.mixed_rates.push_back(
      Concat("runtime.MemProfileRate is ", rate, " now, but an earlier capture of process ", pid,
             " read ", *state.other_rate, ": buckets sampled at that rate are scaled with ", rate,
             ", which mixes rates, as the runtime's own profile would"));
}

// The profile's comments, as runtime/pprof has none: why it may differ.
std::vector<std::string> ProfileComments(const ExecutableAnalysis& analysis,
                                         const HeapSnapshot& snap, const CaptureOptions& options,
                                         const CaptureReport& report) {
  std::vector<std::string> comments;
  if (report.sampling_started_late) comments.push_back(SamplingStartedLateComment());
  for (const std::string& text : report.mixed_rates) {
    comments.push_back("goheap2pprof: warning: " + text);
  }
  if (snap.walks > 1) {
    comments.push_back(Concat("goheap2pprof: walked the bucket list ", snap.walks,
                              " times because a GC published a profile cycle during the walk"));
  }
  if (options.counters == CounterSource::kPublished) comments.push_back(PublishedCountersComment());
  for (const std::string& text : analysis.layout_warnings()) {
    comments.push_back("goheap2pprof: warning: " + text);
  }
  return comments;
}

// Pass 5's records: runtime.MemProfile's (or the published counters) of the
// snapshot's buckets, made one at a time as the build takes them. A vector
// of them all, 40 bytes a bucket of fresh memory, is made only for the
// callers that want them at once (whose snapshots are not packed).
class Records {
 public:
  Records(const HeapSnapshot& snap, CounterSource counters)
      : snap_(snap),
        published_only_(counters == CounterSource::kPublished),
        nothing_published_(!published_only_ && NothingPublishedIn(snap)) {}
  size_t size() const { return snap_.bucket_count(); }
  bool packed() const { return !snap_.packed.empty(); }
  // Of an unpacked snapshot (snap.buckets).
  MemProfileRecord operator[](size_t i) const { return Of(snap_.buckets[i]); }
  std::vector<MemProfileRecord> All() const {
    std::vector<MemProfileRecord> all;
    all.reserve(snap_.buckets.size());
    for (const Bucket& b : snap_.buckets) all.push_back(Of(b));
    return all;
  }
  // Of a packed snapshot (snap.packed), in order, each with its bucket's
  // tag; valid during the call.
  void ForEachPacked(const std::function<void(const MemProfileRecord& r, uint32_t tag)>& fn) const {
    snap_.packed.ForEachBatch([&](const PackedBuckets::Batch& batch) {
      for (size_t i = 0; i < batch.buckets.size(); ++i) fn(Of(batch.buckets[i]), batch.tags[i]);
      return true;
    });
  }

 private:
  MemProfileRecord Of(const Bucket& b) const {
    return published_only_ ? PublishedRecord(b)
                           : EmulatedRecord(b, snap_.cycle, nothing_published_);
  }
  static bool NothingPublishedIn(const HeapSnapshot& snap) {
    bool nothing = NothingPublished(snap.buckets, snap.cycle);
    snap.packed.ForEachBatch([&](const PackedBuckets::Batch& batch) {
      nothing = nothing && NothingPublished(batch.buckets, snap.cycle);
      return nothing;
    });
    return nothing;
  }

  const HeapSnapshot& snap_;
  bool published_only_;
  bool nothing_published_;
};

// A repeated capture's tables after buckets were added. The state keeps no
// stacks (issue 42), so the refresh streams each new bucket's stack into a
// continuation of the state's tables as it reads it: the remembered buckets
// keep their runs, the new ones get runs of the continued tables (one at a
// stack the tables hold gets the same locations again: Go 1.27 keys a
// bucket by its object size too, so a known call site allocating a new
// size adds one). The runtime builds its locations in list order, new
// buckets first; these tables mean the same only if their build, and this
// one, proved that order does not matter (LocationTables::order_independent).
// Otherwise the capture walks afresh.
class Continuation {
 public:
  Continuation(const CaptureSource& source, const ExecutableAnalysis& analysis, uint64_t bias,
               ProcessCaptureState& state)
      : source_(source), analysis_(analysis), bias_(bias), state_(state) {}
  // What RefreshStreamedSnapshot hands the new buckets to: a later walk's
  // (buckets created meanwhile) go before the earlier ones'.
  SnapshotStream Stream() {
    return SnapshotStream{
        .start = [this](int64_t) { at_ = 0; },
        .bucket =
            [this](const Bucket& b, AheadNote) {
              const uint32_t run = Builder().RunOfTransient(b.stack);
              runs_.insert(runs_.begin() + static_cast<ptrdiff_t>(at_++), run);
              return run;
            },
        .keep_ends = true,
    };
  }
  // After a refresh that added snap.new_buckets: whether the continued
  // tables mean what a fresh build would; if so, the state keeps them.
  bool Finish(const HeapSnapshot& snap) {
    if (!more_ || runs_.size() != snap.new_buckets ||
        old_sample_runs_.size() != snap.buckets.size() - snap.new_buckets) {
      return false;
    }
    auto tables = std::make_shared<ProfileTables>();
    tables->locations = more_->FinishLocations();
    if (!tables->locations->order_independent) return false;
    new_stacks_ = tables->locations->runs.size() - old_runs_;
    tables->sample_runs = std::move(runs_);
    tables->sample_runs.insert(tables->sample_runs.end(), old_sample_runs_.begin(),
                               old_sample_runs_.end());
    state_.KeepContinued(tables, more_->TakeSeed());
    return true;
  }
  size_t new_stacks() const { return new_stacks_; }

 private:
  HeapProfileBuilder& Builder() {
    if (!more_) {
      // The state's tables are taken over: it has none until Finish keeps
      // the continued ones, or the capture starts afresh.
      ProcessCaptureState::TablesToContinue old = state_.TakeTablesToContinue();
      old_sample_runs_ = std::move(old.sample_runs);
      old_runs_ = old.locations.runs.size();
      more_.emplace(analysis_.symbolizer(), analysis_.traits(), source_.ProfileMappings(), bias_,
                    state_.TakeSeed(), std::move(old.locations));
    }
    return *more_;
  }
  const CaptureSource& source_;
  const ExecutableAnalysis& analysis_;
  uint64_t bias_;
  ProcessCaptureState& state_;
  std::optional<HeapProfileBuilder> more_;  // once a bucket was added
  std::vector<uint32_t> runs_;              // the new buckets', in list order
  size_t at_ = 0;                           // where the current walk's runs go
  size_t new_stacks_ = 0;
  std::vector<uint32_t> old_sample_runs_;  // the state's, once taken over
  size_t old_runs_ = 0;                    // the state's tables' runs
};

// A state's refresh (HeapWalk::refresh): the remembered buckets' counters
// re-read, and the buckets added since streamed into a continuation of the
// state's tables when they can be continued; otherwise added buckets mean
// walking afresh, as does a process that no longer holds the buckets.
bool RefreshState(MemoryReader& mem, const SnapshotLimits& limits, const HeapAddresses& addrs,
                  const RuntimeTraits& traits, ProcessCaptureState& state, Continuation& more,
                  CaptureReport& report) {
  const SnapshotStream stream = more.Stream();
  HeapSnapshot& snap = state.snapshot;
  const StreamedRefresh r = RefreshStreamedSnapshot(mem, addrs, traits, limits,
                                                    state.CanContinue() ? &stream : nullptr, snap);
  report.repeated = r != StreamedRefresh::kNotTheList;
  if (!report.repeated) {
    report.notes.push_back(
        "repeated capture: the remembered buckets are no longer the process's: read afresh");
    return false;
  }
  const std::shared_ptr<const ProfileTables>& tables = state.profile_tables;
  if (r == StreamedRefresh::kRefreshed && tables && snap.new_buckets == 0 &&
      tables->samples() == snap.buckets.size()) {
    return true;
  }
  if (r == StreamedRefresh::kRefreshed && more.Finish(snap)) return true;
  report.notes.push_back(
      "repeated capture: buckets were added, and the last capture's locations depend on the "
      "order of its stacks: walked afresh");
  state.DropTables();
  return false;
}

// Pass 6's fresh build: the samples of `records` into builder, whose runs
// are made as they come (runs empty, nothing packed) or were made by the
// walk (a packed snapshot's tags, or for a state's walk one per record in
// `runs`), then the comments; the profile completed.
FinishedProfile BuildSamples(const ExecutableAnalysis& analysis, HeapProfileBuilder& builder,
                             std::span<const uint32_t> runs, const Records& records,
                             const std::vector<std::string>& comments,
                             const CaptureOptions& options, size_t stack_words,
                             CaptureReport& report, ProcessCaptureState* state) {
  if (options.sample_stream != nullptr) {
    builder.StreamSamplesTo(options.sample_stream, options.keep_streamed_samples);
  }
  builder.Reserve(records.size(), stack_words);
  if (records.packed()) {
    records.ForEachPacked(
        [&builder](const MemProfileRecord& r, uint32_t run) { builder.AddSample(run, r); });
  } else if (!runs.empty()) {
    for (size_t i = 0; i < records.size(); ++i) builder.AddSample(runs[i], records[i]);
  } else {
    for (size_t i = 0; i < records.size(); ++i) builder.AddRecord(records[i]);
  }
  for (const std::string& text : comments) builder.AddComment(text);
  const Symbolizer& symbolizer = analysis.symbolizer();
  report.notes.push_back(Concat(symbolizer.distinct_pcs(), " distinct PCs symbolized, ",
                                symbolizer.failed_lookups(), " failed (since ",
                                analysis.elf().name(), " was analysed)"));
  std::unique_ptr<HeapProfileBuilder::Seed> seed;
  if (state != nullptr) seed = builder.TakeSeed();  // completes the profile
  FinishedProfile profile = std::move(builder).TakeProfile();
  report.notes.push_back(profile.tables()->locations->order_independent
                             ? "the profile's locations do not depend on the order of its stacks"
                             : "the profile's locations depend on the order of its stacks: a "
                               "repeated capture after new buckets builds them again");
  if (state != nullptr) state->KeepTables(profile.tables(), std::move(seed));
  return profile;
}

// Pass 6: the profile runtime/pprof's writeHeapProto would write in the
// target, symbolized with the analysis's (link-time) symbolizer: the
// samples added to the build a streamed walk fed (or, for a walk that kept
// the stacks, to a fresh build); or, for a repeated capture that did not
// walk afresh, the state's tables (reused, or continued with the added
// buckets' `new_stacks`) filled with the new counters.
FinishedProfile BuildProfile(const CaptureSource& source, const ExecutableAnalysis& analysis,
                             uint64_t bias, const HeapSnapshot& snap, const Records& records,
                             const CaptureOptions& options, CaptureReport& report,
                             ProcessCaptureState* state, StreamedBuild& streamed,
                             size_t new_stacks) {
  const bool walked = streamed.builder.has_value();
  const int64_t now_ns = walked ? streamed.time_nanos : ProfileTime(options);
  const std::vector<std::string> comments = ProfileComments(analysis, snap, options, report);
  report.samples = records.size();
  if (state != nullptr && !walked) {
    if (snap.new_buckets == 0) {
      report.notes.push_back("no bucket added since the last capture: its locations reused");
      report.tables = ProfileTablesOrigin::kReused;
    } else {
      report.notes.push_back(Concat(snap.new_buckets,
                                    " buckets added since the last capture: its tables continued (",
                                    new_stacks, " new stacks)"));
      report.tables = ProfileTablesOrigin::kContinued;
    }
    return FillProfile(state->profile_tables, records.All(), analysis.traits(), snap.rate, now_ns,
                       comments);
  }
  if (!walked) {
    streamed.builder.emplace(analysis.symbolizer(), analysis.traits(), source.ProfileMappings(),
                             snap.rate, now_ns, bias);
  }
  // A one-shot capture reserves by its stacks' words too: an agent's memory
  // budget counts the capacity its state keeps.
  const std::span<const uint32_t> runs = walked ? streamed.runs : std::span<const uint32_t>();
  return BuildSamples(analysis, *streamed.builder, runs, records, comments, options,
                      state == nullptr ? snap.stacks.words() : 0, report, state);
}

// The identity a state must have been made with to be used for source.
ProcessCaptureState::Key StateKey(const CaptureSource& source,
                                  const std::shared_ptr<const ExecutableAnalysis>& analysis,
                                  uint64_t bias) {
  const TargetExecutable& exe = source.executable();
  return ProcessCaptureState::Key{.pid = source.identity().pid,
                                  .start_time = source.identity().start_time,
                                  .exe_path = exe.running.path,
                                  .exe_inode = exe.running.inode,
                                  .build_id = exe.gnu_build_id,
                                  .analysis = analysis.get(),
                                  .analysis_ref = analysis,
                                  .bias = bias,
                                  .mappings = source.ProfileMappings()};
}

// A state of another process (or of this pid before an exec) is dropped;
// it becomes valid again only when this capture completes. Returns whether
// the state's buckets are this process's, to be refreshed.
bool AcceptState(ProcessCaptureState& state, ProcessCaptureState::Key key, CaptureReport& report) {
  std::string mismatch = state.Mismatch(key);
  const bool refresh = mismatch.empty();
  if (!refresh) {
    report.notes.push_back("repeated capture: starting afresh: " + mismatch);
    state.Reset(std::move(mismatch));
  }
  state.valid = false;
  state.Accept(std::move(key));
  return refresh;
}

// What the walk did with a state's buckets, for its counters.
void CountWalk(ProcessCaptureState& state, bool repeated, bool refresh) {
  if (repeated) {
    state.CountReuse();
    return;
  }
  if (refresh) state.CountFresh("the remembered buckets are no longer the process's");
  state.DropTables();
}

// Pass 3, with what the layout check says: a layout the DWARF refuses
// explains a failed walk, and is said instead. (Waiting for the layout
// check, if it is slower than the walk, counts as walking.)
void WalkProvingLayout(CaptureSource& source, const ExecutableAnalysis& analysis,
                       const HeapAddresses& addrs, uint64_t bound,
                       const ReportPosition& analysis_notes, CaptureReport& report,
                       HeapSnapshot& snap, bool refresh, ProcessCaptureState* state,
                       const HeapWalk& walk) {
  const ReportPosition walk_notes{report.notes.size(), report.warnings.size()};
  try {
    WalkHeap(source, addrs, analysis.traits(), bound, report, snap, walk);
  } catch (const Error&) {
    // Rollback: a walk that failed drops its notes if the layout is refused,
    // and that refusal, which explains the failure, is thrown instead.
    ProvenLayout(analysis, analysis_notes, walk_notes, report);
    throw;
  }
  if (state != nullptr) CountWalk(*state, report.repeated, refresh);
  ProvenLayout(analysis, analysis_notes, walk_notes, report);
}

// Pass 3's parts: the build a streamed walk feeds and, for a state of this
// process, the continuation its refresh feeds. Made in place (the streams
// point into it).
struct WalkParts {
  WalkParts(const CaptureSource& source, const ExecutableAnalysis& analysis, uint64_t bias,
            const HeapAddresses& addrs, const CaptureOptions& options, ProcessCaptureState* state,
            bool refresh, CaptureReport& report)
      : sink(StreamInto(source, analysis, bias, options, state != nullptr, streamed)) {
    // Every walk streams into the build but for a caller that asks for the
    // records whole (they hold the stacks; no state serves it).
    walk.fresh = options.on_records ? nullptr : &sink;
    if (!refresh) return;
    continued.emplace(source, analysis, bias, *state);
    walk.refresh = [this, &addrs, &analysis, state, &report](MemoryReader& mem,
                                                             const SnapshotLimits& limits) {
      return RefreshState(mem, limits, addrs, analysis.traits(), *state, *continued, report);
    };
  }
  size_t new_stacks() const { return continued ? continued->new_stacks() : 0; }

  StreamedBuild streamed;
  SnapshotStream sink;
  std::optional<Continuation> continued;
  HeapWalk walk;
};

}  // namespace

namespace {

CaptureResult RunPasses(CaptureSource& source, const ExecutableAnalysis& analysis,
                        const std::shared_ptr<const ExecutableAnalysis>& shared_analysis,
                        const CaptureOptions& options, CaptureReport& report,
                        ProcessCaptureState* state) {
  PassTimer timer(report);

  // 1. Identify the target and its Go runtime (the analysis of its executable).
  const ReportPosition analysis_notes = Identify(source, analysis, report);

  // 2. Locate the runtime's heap-profile variables in this process: link-time
  //    addresses plus the load bias of the executable's mappings.
  const uint64_t bias =
      ComputeLoadBias(analysis.elf(), source.mappings(), source.executable().running);
  const HeapAddresses addrs = LocateVariables(analysis, bias, report);
  const bool refresh =
      state != nullptr && AcceptState(*state, StateKey(source, shared_analysis, bias), report);
  timer.Done("identify");

  // 3. Walk the bucket list (and the rate and cycle) consistently.
  HeapSnapshot local;
  HeapSnapshot& snap = state != nullptr ? state->snapshot : local;
  // The rate of the state's last capture (when refresh), which the walk
  // overwrites. Not an optional: GCC 12 at -O2 warns that its value may be
  // used uninitialized.
  const int64_t previous_rate = snap.rate;
  const uint64_t bound = ReservedBuckets(source, analysis, bias, state == nullptr, report);
  WalkParts parts(source, analysis, bias, addrs, options, state, refresh, report);
  WalkProvingLayout(source, analysis, addrs, bound, analysis_notes, report, snap, refresh, state,
                    parts.walk);
  timer.Done("walk");

  // 4. Refuse a target whose heap sampling is off; warn when it is empty, or
  //    when its buckets were sampled at other rates than the one they are
  //    scaled with.
  CheckSamplingState(source, analysis, bias, snap, report);
  if (state != nullptr) {
    CheckRateChange(*state, refresh, previous_rate, source.identity().pid, snap.rate, report);
  }
  report.warnings.insert(report.warnings.end(), report.mixed_rates.begin(),
                         report.mixed_rates.end());

  // 5. Emulate runtime.MemProfile (or keep only the published counters).
  const Records records(snap, options.counters);
  if (options.on_records) options.on_records(records.All(), snap.rate, bias);

  // 6. Symbolize and build the profile as runtime/pprof does.
  FinishedProfile profile = BuildProfile(source, analysis, bias, snap, records, options, report,
                                         state, parts.streamed, parts.new_stacks());
  timer.Done("symbolize+build");

  // 7. The target must still be the process we started with: a pid reused
  //    mid-capture would mix two programs' memory.
  source.CheckSameProcess();
  if (state != nullptr) state->valid = true;
  return CaptureResult{std::move(profile), report};
}

}  // namespace

CaptureResult Capture(CaptureSource& source, const ExecutableAnalysis& analysis,
                      const CaptureOptions& options, CaptureReport& report) {
  return RunPasses(source, analysis, nullptr, options, report, nullptr);
}

CaptureResult Capture(CaptureSource& source, const ExecutableAnalysis& analysis,
                      const CaptureOptions& options) {
  CaptureReport report;
  return Capture(source, analysis, options, report);
}

CaptureResult Capture(CaptureSource& source,
                      const std::shared_ptr<const ExecutableAnalysis>& analysis,
                      const CaptureOptions& options, CaptureReport& report,
                      ProcessCaptureState& state) {
  // A state keeps no stacks (issue 42), and on_records hands them out: such
  // a capture (serve's ?debug=1 text) reads afresh and leaves the state as
  // it was.
  if (options.on_records) return RunPasses(source, *analysis, analysis, options, report, nullptr);
  return RunPasses(source, *analysis, analysis, options, report, &state);
}

const char* ProfileTablesOriginName(ProfileTablesOrigin origin) {
  switch (origin) {
    case ProfileTablesOrigin::kBuilt:
      return "built";
    case ProfileTablesOrigin::kReused:
      return "reused";
    case ProfileTablesOrigin::kContinued:
      return "continued";
  }
  return "built";
}

std::string PublishedCountersComment() {
  return "goheap2pprof: published counters only (memRecord.active): allocations and frees of "
         "profile cycles the runtime has not published yet are left out, unlike "
         "runtime.MemProfile";
}

std::string SamplingStartedLateComment() {
  return "goheap2pprof: sampling began after start-up: allocations made before it are not in "
         "the profile (runtime.disableMemoryProfiling is set; runtime.MemProfileRate was "
         "assigned later)";
}

std::string FormatStats(const CaptureReport& r) {
  std::ostringstream out;
  out << "goheap2pprof stats:\n"
      << "  buckets          " << r.buckets << "\n"
      << "  samples          " << r.samples << "\n"
      << "  walks            " << r.walks << " (" << r.torn_walks
      << " discarded: profile cycle changed)\n"
      << "  repeated         " << (r.repeated ? "yes" : "no") << "\n"
      << "  read syscalls    " << r.read_syscalls << "\n"
      << "  bytes read       " << r.bytes_read << "\n";
  double total = 0;
  for (const auto& [phase, ms] : r.phase_ms) {
    out << "  time " << phase << std::string(phase.size() < 16 ? 16 - phase.size() : 1, ' ')
        << std::fixed << std::setprecision(2) << ms << " ms\n";
    total += ms;
  }
  out << "  time total            " << std::fixed << std::setprecision(2) << total << " ms\n";
  return out.str();
}

}  // namespace goheap2pprof
