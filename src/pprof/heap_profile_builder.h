// Builds the heap profile.proto the way runtime/pprof's writeHeapProto does
// inside the target: the same sample order and values, the same location
// building (inline decks, the per-PC location cache, hideRuntime and its
// retry), the same Function dedup and the same mappings.
//
//   HeapProfileBuilder b(symbolizer, traits, mappings, rate, time_nanos, load_bias);
//   for (const MemProfileRecord& r : records) b.AddRecord(r);
//   FinishedProfile p = std::move(b).TakeProfile();   // or: const pb::Profile& p = b.Finish();
//   p.SerializeTo(&stream);
//
// A repeated capture whose new buckets have stacks the tables lack continues
// the tables instead of building anew, when the first build proved that the
// order of the stacks does not change them (LocationTables::order_independent):
//
//   std::unique_ptr<HeapProfileBuilder::Seed> seed = b.TakeSeed();   // after TakeProfile
//   HeapProfileBuilder more(symbolizer, traits, mappings, load_bias, std::move(seed), *old);
//   uint32_t run = more.AddStack(new_bucket.stack);
//   std::shared_ptr<const LocationTables> tables = more.FinishLocations();
//
// The symbolizer works in link-time addresses (so that its cache serves every
// process of one executable); the builder subtracts the process's load bias
// from each stack PC before asking it, and adds it back for the addresses it
// writes (Location.address, the mapping lookup).
#pragma once

#include <google/protobuf/arena.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/pc_map.h"
#include "heap/buckets.h"
#include "pprof/finished_profile.h"
#include "proto/profile.pb.h"
#include "runtime/runtime_traits.h"
#include "symbolize/symbolizer.h"

namespace goheap2pprof {

// One executable mapping of the target, filtered as runtime/pprof does.
struct ProfileMapping {
  uint64_t start = 0;
  uint64_t limit = 0;
  uint64_t offset = 0;
  std::string file;
  std::string build_id;
  bool fake = false;
};

// One sample's values as runtime/pprof's writeHeapProto computes them for
// record r: the scaled counts and the "bytes" label, if it has one.
SampleValues HeapSampleValues(const MemProfileRecord& r, const RuntimeTraits& traits, int64_t rate);

// A repeated capture of the same buckets (same stacks, same order) in the
// same process: the tables of the profile an earlier build made, filled with
// the new counters. Only the counters, the rate, the time and the comments
// change from one capture to the next, so nothing is symbolized or encoded
// again but the samples' values. records: one per sample of tables, in its
// order.
FinishedProfile FillProfile(std::shared_ptr<const ProfileTables> tables,
                            std::span<const MemProfileRecord> records, const RuntimeTraits& traits,
                            int64_t rate, int64_t time_nanos,
                            std::span<const std::string> comments);

class HeapProfileBuilder {
 public:
  // load_bias: runtime address - link-time address of the executable whose
  // pclntab the symbolizer decodes.
  HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                     std::vector<ProfileMapping> mappings, int64_t rate, int64_t time_nanos,
                     uint64_t load_bias = 0);

  // A count profile such as the goroutine profile (runtime/pprof's
  // printCountProfile): sample and period type <name>/count, period 1,
  // locations built as writeHeapProto does but without hideRuntime, and no
  // "bytes" label. A record's alloc_objects is its sample's first value (the
  // caller keeps only that one of the four).
  struct CountProfile {
    std::string_view name;
  };
  HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                     std::vector<ProfileMapping> mappings, CountProfile count, int64_t time_nanos,
                     uint64_t load_bias);

  // Writes each sample to out as it is added, so that the compression of
  // the samples runs while the rest are built; the finished profile then
  // holds the rest (FinishedProfile::SerializeRemainderTo). out must outlive
  // the builder's Finish/TakeProfile. keep: whether the finished profile
  // also keeps the samples' values (SampleStorage).
  void StreamSamplesTo(google::protobuf::io::ZeroCopyOutputStream* out, bool keep = true);
  // Room for this many records, and for the location ids of stacks of this
  // many words in all (fresh memory is what a capture pays for most: growing
  // by doubling would touch twice as much).
  void Reserve(size_t records, size_t stack_words = 0);
  // The record's stack must stay where it is, unchanged, while the builder
  // lives: stacks are remembered by their address (a snapshot's StackStore
  // keeps them so). The same holds for AddStack's.
  void AddRecord(const MemProfileRecord& record);
  // The same in two steps, for a streamed walk whose stacks are gone by
  // the time the samples' values are known (the consistency check settles
  // the counters after the walk): the run of a stack the builder must not
  // keep a pointer to (it is copied where it is remembered), then samples
  // of that run in the profile's order. The runs are made in the order the
  // stacks come, which must be the samples' order. Continuing tables, it is
  // AddStack for such a stack (a state's streamed refresh). `hidden`, when
  // known, is how many leading frames hideRuntime hides (StackWarmer::Warm's
  // answer for the stack, which saves the build asking the symbolizer).
  static constexpr size_t kHiddenUnknown = ~size_t{0};
  uint32_t RunOfTransient(std::span<const uint64_t> stack, size_t hidden = kHiddenUnknown);
  void AddSample(uint32_t run, const MemProfileRecord& record);
  void AddComment(std::string_view text);
  // Completes the profile (mappings, string table) and returns it as a
  // message (decoded from its encoding, which is what the tests check); it
  // lives as long as the builder. Nothing may be added after.
  const pb::Profile& Finish();
  // Completes the profile and hands it over to the caller.
  FinishedProfile TakeProfile() &&;

  // What a finished build knows of its tables besides their encoding (the
  // string, function and location caches, the mappings' lookup results):
  // enough to continue them with more stacks.
  struct Seed;
  // The seed of a finished build whose tables are order-independent, or
  // null (continuing other tables could not mean what the runtime writes).
  // Nothing may be asked of the builder after.
  std::unique_ptr<Seed> TakeSeed();

  // Continues `base`, the tables of the build that left `seed`, for the
  // same process (same mappings and bias): AddStack gives stacks runs, in
  // base's location ids and new ones, and FinishLocations the tables that
  // hold them all. Samples are the caller's (FillProfile). `base` is taken
  // over: a caller that still needs its tables passes a copy.
  HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                     std::vector<ProfileMapping> mappings, uint64_t load_bias,
                     std::unique_ptr<Seed> seed, LocationTables base);
  // The run of a stack (runtime addresses) in the continued tables.
  uint32_t AddStack(std::span<const uint64_t> stack);
  // The continued tables; order_independent says whether they may be used.
  std::shared_ptr<const LocationTables> FinishLocations();

 private:
  struct Deck {
    std::vector<uint64_t> pcs;
    std::vector<SymFrame> frames;
    bool tried = false;
    bool failed = false;
    void Reset() { *this = Deck(); }
  };
  // An emitted location (runtime/pprof's locInfo; its first PC's frames are
  // the symbolizer's FramesFor of pcs[0]).
  struct LocInfo {
    uint64_t id = 0;
    std::vector<uint64_t> pcs;
    bool complete = false;  // no further PC could have joined it
  };
  struct FuncFields {
    int64_t file = 0;  // string index
    int64_t start_line = 0;
  };
  struct MappingState {
    ProfileMapping m;
    bool tried = false;
    bool failed = false;
  };

  // Either profile's (an empty count.name: the heap profile).
  HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                     std::vector<ProfileMapping> mappings, int64_t rate, int64_t time_nanos,
                     uint64_t load_bias, CountProfile count);
  void TakeMappings(std::vector<ProfileMapping> mappings);
  int64_t Str(std::string_view s);
  // Whether a PC whose first frame is `next` joins an inline group whose
  // last frame is `last` (runtime/pprof's pcDeck.tryAdd).
  bool Continues(const SymFrame& last, const SymFrame& next) const;
  bool TryAdd(uint64_t pc, std::span<const SymFrame> frames, bool failed);
  uint64_t EmitLocation();
  // The order check (LocationTables::order_independent): clears
  // order_independent_ where a cached location or Function stands for
  // fields that the stack in hand would not have made itself.
  void CheckCachedUse(const LocInfo& l, std::span<const uint64_t> stk);
  void CheckFunctionFields(uint64_t id, const SymFrame& frame);
  // Location ids for a stack, into out (cleared first).
  void AppendLocsForStack(std::span<const uint64_t> stk, std::vector<uint64_t>& out);
  // The turn of AppendLocsForStack whose first PC has a cached one-PC
  // location that no PC can join, with nothing in the deck: its ids into
  // out; returns how many PCs it took (0: not such a turn).
  size_t TakePlainLocation(uint32_t index, std::span<const uint64_t> stk,
                           std::vector<uint64_t>& out);
  // The ids of stk's leading plain turns into out; returns how many PCs
  // they took. Once the PCs left are the last ones of a stack that took
  // only plain turns (plain_suffix_), their ids are taken from it.
  size_t TakePlainPrefix(std::span<const uint64_t> stk, std::vector<uint64_t>& out);
  // How many of rest's trailing PCs are plain_suffix_'s (0 if a location
  // emitted since replaced a cached one).
  size_t SharedPlainSuffix(std::span<const uint64_t> rest) const;
  // The ids of the leading PCs that stk shares with the last stack's plain
  // turns (plain_prefix_), into out; returns how many.
  size_t TakeSharedPrefix(std::span<const uint64_t> stk, std::vector<uint64_t>& out) const;
  // Remembers a stack's leading plain turns (none if a location emitted
  // since `overwrites` replaced a cached one).
  void KeepPlainPrefix(std::span<const uint64_t> pcs, std::span<const uint64_t> ids,
                       uint64_t overwrites);
  // Remembers the last PCs of a stack whose first `plain` turns were plain
  // (their ids) if its others took no location (`ids` is then the plain
  // ones'), and if no location emitted since `overwrites` replaced a cached
  // one.
  void KeepPlainSuffix(std::span<const uint64_t> pcs, size_t plain, std::span<const uint64_t> ids,
                       uint64_t overwrites);
  // The turn of AppendLocsForStack whose first PC has a cached location
  // (loc_infos_[index]): its ids into out; returns the rest of the stack.
  std::span<const uint64_t> TakeCachedLocation(uint32_t index, std::span<const uint64_t> stk,
                                               std::vector<uint64_t>& out);
  // The leading frames of a stack (runtime addresses) that runtime/pprof's
  // hideRuntime drops: those of functions with a hidden prefix, none if all
  // have one.
  size_t HiddenFrames(std::span<const uint64_t> stack);
  // A stack in runtime addresses in link-time ones: itself, or link_stack_.
  std::span<const uint64_t> LinkTime(std::span<const uint64_t> stack);
  // Whether a stack in runtime addresses is `link` in link-time ones.
  bool SameLinkTime(std::span<const uint64_t> stack, std::span<const uint64_t> link) const;
  // A record's location ids for its whole (link-time) stack: from its frames
  // after the `hidden` ones, or all of them if those make none (hideRuntime's
  // retry). Returns where the frames used start. RunForStack adds them to
  // the tables as a run and remembers the runs that cannot change.
  size_t ComputeLocsForStack(std::span<const uint64_t> full, size_t hidden,
                             std::vector<uint64_t>& locs);
  // The run of a stack (runtime addresses); fixed: whether it is the
  // stack's for good (remembered unless `remember` is false: the stack is
  // the caller's scratch). hidden: as RunOfTransient's.
  uint32_t RunForStack(std::span<const uint64_t> stack, bool& fixed, bool remember = true,
                       size_t hidden = kHiddenUnknown);
  // The run of a stack in runtime addresses (remembered by where it is
  // stored, see by_storage_).
  uint32_t RunOf(std::span<const uint64_t> stack);
  // The tables' part of Complete: mappings, encodings, string count.
  void CompleteTables();
  void Complete();

  Symbolizer& sym_;
  const RuntimeTraits& traits_;
  std::vector<MappingState> mem_;
  int64_t rate_;
  int64_t time_nanos_;
  uint64_t bias_;
  // Thousands of small messages: an arena makes building and freeing them
  // a few large allocations instead of one each. profile_ holds the tables
  // only (ProfileTables::encoded); the samples are kept as values.
  std::unique_ptr<google::protobuf::Arena> arena_;
  pb::Profile* profile_;
  std::shared_ptr<LocationTables> locations_;
  std::shared_ptr<ProfileTables> tables_;  // holds locations_
  std::vector<SampleValues> samples_;
  bool keep_samples_ = true;
  std::vector<int64_t> comments_;
  std::optional<FinishedProfile> finished_;
  std::unique_ptr<google::protobuf::io::CodedOutputStream> stream_;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> strings_;
  // Emitted locations by their first raw PC (runtime/pprof's b.locs); the
  // map holds indexes into loc_infos_.
  PcMap<uint32_t> locs_;
  // HiddenFrames' answer by runtime PC, and the PC's frames, asked for at
  // the same time (AppendLocsForStack's, when the PC makes a new location).
  struct HiddenAnswer {
    const PcFrames* frames = nullptr;
    bool hidden = false;
  };
  PcMap<HiddenAnswer> hidden_;
  // Last PCs (link-time) of stacks that ExpandFinalInlineFrame leaves as they are.
  PcMap<uint8_t> plain_finals_;
  std::vector<LocInfo> loc_infos_;
  std::unordered_map<std::string, uint64_t> funcs_;
  std::vector<FuncFields> func_fields_;  // by Function id - 1
  Deck deck_;
  std::vector<uint64_t> locs_scratch_;
  std::vector<uint64_t> link_stack_;  // LinkTime's copy of a stack
  // Stacks whose location ids are known for good (see RunForStack), by a
  // hash of the frames they were made from (runtime addresses, where the
  // caller keeps them).
  struct MemoEntry {
    const uint64_t* words = nullptr;
    size_t n = 0;
    uint32_t run = 0;
  };
  PcMap<uint32_t> memo_;
  std::vector<MemoEntry> memo_entries_;
  // The same, by where the record's stack is stored: buckets that share a
  // stack share its storage (heap/snapshot.h), so most records are found
  // here without copying, rebasing or hashing their stack. Keyed by the
  // address of the stack's first word; the entry holds its length.
  struct StoredStack {
    size_t words = 0;
    uint32_t run = 0;
  };
  PcMap<StoredStack> by_storage_;
  // RunOfTransient's memo: the last stack whose run is fixed, in link-time
  // addresses.
  std::vector<uint64_t> last_transient_;
  uint32_t last_transient_run_ = 0;
  uint64_t loc_overwrites_ = 0;  // emitted locations that replaced a cached PC's
  // The last stack's leading PCs that took plain turns (TakePlainLocation),
  // and their ids. Such a turn gives the same id whenever its PC comes with
  // an empty deck, as long as no location replaces a cached one: stacks
  // that start alike (one allocation site reached from many callers, which
  // the bucket list often holds one after another) take these ids without
  // a lookup each.
  struct PlainPrefix {
    std::vector<uint64_t> pcs;
    std::vector<uint64_t> ids;
    uint64_t overwrites = 0;  // loc_overwrites_ when they were kept
  };
  PlainPrefix plain_prefix_;
  // The same of the last PCs (up to kRememberedTrailingPcs) of the last
  // stack whose turns were all plain but for its last PCs, which took no
  // location (runtime.goexit): the stacks of a recursion that branches (one
  // bucket per call path) end alike, from where they branched to the root,
  // and the list holds neighbouring paths one after another. The PCs after
  // a differing start take these ids without a lookup each.
  // Kept in place, in the last `size` slots: a stack ending alike rewrites
  // only the slots of the PCs it does not share.
  struct PlainSuffix {
    std::array<uint64_t, kRememberedTrailingPcs> pcs{};
    std::array<uint64_t, kRememberedTrailingPcs> ids{};  // those of pcs but the last `frameless`
    size_t size = 0;
    size_t frameless = 0;  // the last PCs, which take no location
    uint64_t overwrites = 0;
    std::span<const uint64_t> Pcs() const { return {pcs.data() + pcs.size() - size, size}; }
  };
  PlainSuffix plain_suffix_;
  size_t suffix_shared_ = 0;  // the last PCs TakePlainPrefix found plain_suffix_ ends with
  int64_t bytes_key_ = -1;    // string index of "bytes" once a label needed it
  // Whether every stack so far got the locations it would get in any order
  // of the stacks (the runtime builds them in its list's order, which puts
  // new buckets first). Set by the constructor where it can hold at all.
  bool order_independent_ = false;
  bool continuing_ = false;     // made by the continuing constructor
  int64_t base_strings_ = 0;    // continuing: string_table entries before profile_'s
  bool tables_done_ = false;    // CompleteTables ran
  bool hide_runtime_ = true;    // hideRuntime (heap profiles)
  bool count_profile_ = false;  // see CountProfile
};

struct HeapProfileBuilder::Seed {
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> strings;
  std::unordered_map<std::string, uint64_t> funcs;
  std::vector<FuncFields> func_fields;
  PcMap<uint32_t> locs;
  std::vector<LocInfo> loc_infos;
  std::vector<std::pair<bool, bool>> mapping_lookups;  // each mapping's tried, failed
  // Counted once, when the seed is taken: an agent sums its states' sizes
  // after every capture, and the seed does not change while it is kept.
  size_t ApproximateBytes() const { return bytes; }
  size_t bytes = 0;
  size_t Count() const;  // what ApproximateBytes says
};

}  // namespace goheap2pprof
