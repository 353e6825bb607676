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
// The symbolizer works in link-time addresses (so that its cache serves every
// process of one executable); the builder subtracts the process's load bias
// from each stack PC before asking it, and adds it back for the addresses it
// writes (Location.address, the mapping lookup).
#pragma once

#include <google/protobuf/arena.h>

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

  // Writes each sample to out as it is added, so that the compression of
  // the samples runs while the rest are built; the finished profile then
  // holds the rest (FinishedProfile::SerializeRemainderTo). out must outlive
  // the builder's Finish/TakeProfile. keep: whether the finished profile
  // also keeps the samples' values (SampleStorage).
  void StreamSamplesTo(google::protobuf::io::ZeroCopyOutputStream* out, bool keep = true);
  // Room for this many records (fresh memory is what a capture pays for
  // most: growing by doubling would touch twice as much).
  void Reserve(size_t records);
  void AddRecord(const MemProfileRecord& record);
  void AddComment(std::string_view text);
  // Completes the profile (mappings, string table) and returns it as a
  // message (decoded from its encoding, which is what the tests check); it
  // lives as long as the builder. Nothing may be added after.
  const pb::Profile& Finish();
  // Completes the profile and hands it over to the caller.
  FinishedProfile TakeProfile() &&;

 private:
  struct Deck {
    std::vector<uint64_t> pcs;
    std::vector<SymFrame> frames;
    bool tried = false;
    bool failed = false;
    size_t first_pc_frames = 0;
    bool first_pc_failed = false;
    void Reset() { *this = Deck(); }
  };
  struct LocInfo {
    uint64_t id = 0;
    std::vector<uint64_t> pcs;
    std::vector<SymFrame> first_pc_frames;
    bool first_pc_failed = false;
  };
  struct MappingState {
    ProfileMapping m;
    bool tried = false;
    bool failed = false;
  };

  int64_t Str(std::string_view s);
  bool TryAdd(uint64_t pc, std::span<const SymFrame> frames, bool failed);
  uint64_t EmitLocation();
  // Location ids for a stack, into out (cleared first).
  void AppendLocsForStack(std::span<const uint64_t> stk, std::vector<uint64_t>& out);
  // A record's location ids for its whole (link-time) stack: hideRuntime and
  // its retry, then AppendLocsForStack; RunForStack adds them to the tables
  // as a run and remembers the runs that cannot change.
  void ComputeLocsForStack(std::span<const uint64_t> full, std::vector<uint64_t>& locs);
  // fixed: whether the run is the stack's for good (remembered).
  uint32_t RunForStack(std::span<const uint64_t> full, bool& fixed);
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
  std::shared_ptr<ProfileTables> tables_;
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
  std::vector<LocInfo> loc_infos_;
  std::unordered_map<std::string, uint64_t> funcs_;
  Deck deck_;
  std::vector<uint64_t> locs_scratch_;
  std::vector<uint64_t> link_stack_;  // the record's stack in link-time addresses
  // Stacks whose location ids are known for good (see RunForStack), by a
  // hash of the stack; the stacks and ids are kept back to back.
  struct MemoEntry {
    size_t words_at = 0, words = 0;
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
  std::vector<uint64_t> memo_words_;
  uint64_t loc_overwrites_ = 0;  // emitted locations that replaced a cached PC's
  int64_t bytes_key_ = -1;       // string index of "bytes" once a label needed it
};

}  // namespace goheap2pprof
