// Read access to a pb::Profile by id and by name, for the views computed
// from a finished profile (JSON snapshot, text top). Indexes the locations,
// functions and mappings once; every lookup is bounds-checked, because the
// profile may also come from a file (tools, tests).
//
//   ProfileView view(profile);
//   int inuse = view.SampleIndex("inuse_space");
//   for (const pb::Sample& s : profile.sample()) view.Frames(s) ...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/profile.pb.h"

namespace goheap2pprof {

// One source frame of a sample's stack (a Line of a Location), or a
// location without symbol information (function empty, address set).
struct StackFrame {
  std::string function;
  std::string file;
  int64_t line = 0;
  uint64_t address = 0;
  // "function file:line", or "0x<address>" for an unsymbolized location.
  std::string Text() const;
};

class ProfileView {
 public:
  explicit ProfileView(const pb::Profile& profile);

  const pb::Profile& profile() const { return p_; }
  // The string at index i; throws Error(kMalformed) when out of range.
  const std::string& Str(int64_t i) const;
  // nullptr when the profile has no such id.
  const pb::Location* Location(uint64_t id) const;
  const pb::Function* Function(uint64_t id) const;
  const pb::Mapping* Mapping(uint64_t id) const;
  // Index into Sample.value of the sample type named `type`; throws
  // Error(kUsage) listing the profile's types when there is none.
  int SampleIndex(std::string_view type) const;
  // The sample's frames, leaf (allocation site) first, inline frames
  // innermost first, as pprof lists them.
  std::vector<StackFrame> Frames(const pb::Sample& sample) const;

 private:
  const pb::Profile& p_;
  std::unordered_map<uint64_t, const pb::Location*> locations_;
  std::unordered_map<uint64_t, const pb::Function*> functions_;
  std::unordered_map<uint64_t, const pb::Mapping*> mappings_;
};

}  // namespace goheap2pprof
