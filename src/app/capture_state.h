// What a long-running caller (serve, push, watch) keeps about one process
// between two captures of it, so that a repeated capture costs the counters
// and whatever changed instead of a whole capture. Bucket headers and stacks
// never change once the runtime published them, new buckets are only ever
// prepended to the list, and the executable of a process does not change
// (but by exec), so a later capture of the same process
//   - reads the rate, the list head, the buckets created since, and the
//     header and counters of every remembered bucket (not the stacks);
//   - reuses the locations, functions and strings (ProfileTables) when no
//     bucket was added; when buckets were, it continues them with the new
//     buckets' stacks as the walk streams them, if their build proved that
//     the order of the stacks does not change them (the runtime puts new
//     buckets first), and otherwise walks and builds afresh (with the
//     symbolizer's per-PC cache).
// Like a one-shot capture's, the walk streams each stack into the build
// (issue 42): the state keeps each bucket's counters, record address and
// stack ends (HeapSnapshot::ends, for the check below), and each bucket's
// run of the tables, not the stacks.
// The state is trusted only for the process it was made from: the same pid,
// start time, running executable (path, inode, build ID), analysis, load
// bias and executable mappings, and only while every remembered header
// reads back unchanged and the list from the new head leads to the old one.
// Otherwise the capture starts afresh, as a first one would. A capture that
// fails leaves the state empty.
//
//   ProcessCaptureState state;              // one per process, held by the agent
//   Capture(source1, *analysis, {}, report1, &state);   // reads everything
//   Capture(source2, *analysis, {}, report2, &state);   // counters + news
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "heap/snapshot.h"
#include "pprof/heap_profile_builder.h"

namespace goheap2pprof {

class ExecutableAnalysis;

class ProcessCaptureState {
 public:
  // Captures that reused the state, and those that had to start afresh
  // (the first one included), since the state was made.
  uint64_t reused() const { return reused_; }
  uint64_t fresh() const { return fresh_; }
  // Why the last capture started afresh ("first capture", "start time
  // changed", ...); empty if it reused the state.
  const std::string& fresh_reason() const { return fresh_reason_; }
  // Bytes held: buckets, their revalidation buffer and plan, and the tables
  // (for an agent bounding its states).
  size_t ApproximateBytes() const;

  // The engine's (app/capture.cc); callers only hold the state.
  struct Key {
    pid_t pid = 0;
    uint64_t start_time = 0;
    std::string exe_path;
    uint64_t exe_inode = 0;
    std::string build_id;
    const ExecutableAnalysis* analysis = nullptr;
    std::shared_ptr<const ExecutableAnalysis> analysis_ref;  // keeps the pointer meaningful
    uint64_t bias = 0;
    std::vector<ProfileMapping> mappings;
  };
  // Why `key` cannot use the state; empty if it can.
  std::string Mismatch(const Key& key) const;
  void Reset(std::string reason);
  void Accept(Key key) { key_ = std::move(key); }
  void CountFresh(std::string reason) {
    ++fresh_;
    fresh_reason_ = std::move(reason);
  }
  void CountReuse() {
    ++reused_;
    fresh_reason_.clear();
  }

  bool valid = false;  // set by a capture that completed
  // A rate an earlier capture of the process read that is not the latest
  // one: the buckets sampled at it are scaled with another (app/capture.cc
  // warns while the state lasts).
  std::optional<int64_t> other_rate;
  HeapSnapshot snapshot;
  // The tables of the profile built from snapshot's buckets as they were
  // before the last refresh's new ones; empty until a capture built a
  // profile.
  std::shared_ptr<const ProfileTables> profile_tables;
  // Keeps the tables a build made from snapshot's buckets, which run each
  // of their stacks has, and the build's seed (null if the tables cannot be
  // continued).
  void KeepTables(std::shared_ptr<const ProfileTables> tables,
                  std::unique_ptr<HeapProfileBuilder::Seed> seed);
  // The same for tables continued from the kept ones: only the stacks of
  // snapshot's new buckets are added to the runs.
  void KeepContinued(std::shared_ptr<const ProfileTables> tables,
                     std::unique_ptr<HeapProfileBuilder::Seed> seed);
  std::unique_ptr<HeapProfileBuilder::Seed> TakeSeed() { return std::move(seed_); }
  // The kept tables, handed to a build that continues them, which leaves
  // the state without tables until it keeps the continued ones (or starts
  // afresh). They are moved out when nothing else holds them (the profile
  // last made from them is gone, as in serve's worker): copying them cost a
  // repeated capture of 100k buckets 6.7% of its CPU, most of it in
  // fresh pages. A profile still holding them keeps them intact: a copy.
  struct TablesToContinue {
    LocationTables locations;
    std::vector<uint32_t> sample_runs;
  };
  TablesToContinue TakeTablesToContinue();
  void DropTables();
  // Whether the kept tables can be continued with more stacks.
  bool CanContinue() const {
    return profile_tables && seed_ && profile_tables->locations->order_independent;
  }

 private:
  std::unique_ptr<HeapProfileBuilder::Seed> seed_;
  std::optional<Key> key_;
  uint64_t reused_ = 0;
  uint64_t fresh_ = 0;
  std::string fresh_reason_;
};

}  // namespace goheap2pprof
