// Builds the heap profile.proto the way runtime/pprof's writeHeapProto does
// inside the target: the same sample order and values, the same location
// building (inline decks, the per-PC location cache, hideRuntime and its
// retry), the same Function dedup and the same mappings.
//
//   HeapProfileBuilder b(symbolizer, traits, mappings, rate, time_nanos);
//   for (const MemProfileRecord& r : records) b.AddRecord(r);
//   pb::Profile p = b.Finish();
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

class HeapProfileBuilder {
 public:
  HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                     std::vector<ProfileMapping> mappings, int64_t rate, int64_t time_nanos);

  void AddRecord(const MemProfileRecord& record);
  void AddComment(std::string_view text);
  // Completes the profile (mappings, string table). Call once.
  pb::Profile Finish();

  uint64_t sample_count() const { return static_cast<uint64_t>(profile_.sample_size()); }

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
  std::vector<uint64_t> AppendLocsForStack(std::span<const uint64_t> stk);

  Symbolizer& sym_;
  const RuntimeTraits& traits_;
  std::vector<MappingState> mem_;
  int64_t rate_;
  pb::Profile profile_;
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<uint64_t, LocInfo> locs_;
  std::unordered_map<std::string, uint64_t> funcs_;
  Deck deck_;
};

}  // namespace goheap2pprof
