// Builds the heap profile.proto the way runtime/pprof's writeHeapProto does
// inside the target: the same sample order and values, the same location
// building (inline decks, the per-PC location cache, hideRuntime and its
// retry), the same Function dedup and the same mappings.
//
//   HeapProfileBuilder b(symbolizer, traits, mappings, rate, time_nanos, load_bias);
//   for (const MemProfileRecord& r : records) b.AddRecord(r);
//   FinishedProfile p = std::move(b).TakeProfile();   // or: const pb::Profile& p = b.Finish();
//
// The symbolizer works in link-time addresses (so that its cache serves every
// process of one executable); the builder subtracts the process's load bias
// from each stack PC before asking it, and adds it back for the addresses it
// writes (Location.address, the mapping lookup).
#pragma once

#include <google/protobuf/arena.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/pc_map.h"
#include "heap/buckets.h"
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

// A finished profile together with the arena its messages live in; owns
// both, outlives the builder that made it. Move-only.
class FinishedProfile {
 public:
  FinishedProfile(std::unique_ptr<google::protobuf::Arena> arena, const pb::Profile* profile)
      : arena_(std::move(arena)), profile_(profile) {}
  const pb::Profile& get() const { return *profile_; }

 private:
  std::unique_ptr<google::protobuf::Arena> arena_;
  const pb::Profile* profile_;
};

class HeapProfileBuilder {
 public:
  // load_bias: runtime address - link-time address of the executable whose
  // pclntab the symbolizer decodes.
  HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                     std::vector<ProfileMapping> mappings, int64_t rate, int64_t time_nanos,
                     uint64_t load_bias = 0);

  void AddRecord(const MemProfileRecord& record);
  void AddComment(std::string_view text);
  // Completes the profile (mappings, string table). Call once; the profile
  // lives in the builder's arena, as long as the builder.
  const pb::Profile& Finish();
  // Finish, handing the profile and its arena over to the caller.
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

  Symbolizer& sym_;
  const RuntimeTraits& traits_;
  std::vector<MappingState> mem_;
  int64_t rate_;
  uint64_t bias_;
  bool finished_ = false;
  // Thousands of small messages: an arena makes building and freeing them
  // a few large allocations instead of one each.
  std::unique_ptr<google::protobuf::Arena> arena_;
  pb::Profile* profile_;
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
};

}  // namespace goheap2pprof
