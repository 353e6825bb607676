// A heap profile as a capture finishes it, in two parts: the tables that
// every capture of the same buckets in the same process shares (locations,
// functions, mappings, strings and each sample's location ids, encoded once),
// and this capture's sample values. A capture of 100k buckets would otherwise
// make 100k Sample messages only to serialize them once: the samples are
// encoded straight from the values into profile.proto bytes instead, which
// is most of a profile's bytes and of its encoding time. Readers that walk the
// profile (text formats, tests) get the same profile as a message, decoded
// from those bytes on first use.
//
//   FinishedProfile p = std::move(builder).TakeProfile();
//   p.SerializeTo(&gzip_stream);            // the fast path
//   const pb::Profile& m = p.get();         // a message view, made once
//
// The encoding is a valid profile.proto whose fields are not in field-number
// order (the tables, then this capture's strings, scalars and samples);
// readers decode by field number and concatenate repeated fields, so its
// meaning is that of the message get() returns.
#pragma once

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/profile.pb.h"

namespace goheap2pprof {

// What the captures of one process share while they find no stack they have
// not seen: the profile's tables and each stack's location ids. Immutable once
// made.
struct LocationTables {
  // A Profile holding only sample_type, location, function, string_table
  // and period_type, serialized; and one holding only the mappings.
  std::string encoded;
  std::string mappings_encoded;
  int64_t strings = 0;     // string_table entries in `encoded`
  int64_t bytes_key = -1;  // index of "bytes" in it, or -1
  // Runs of location ids, one per stack: run r's ids are kept only as their
  // encoding as Sample.location_id (tag, length, packed varints): a copy as
  // uint64_t took four times their encoding's memory and was never read
  // (issue 42). The encodings are kept in chunks that never move (bytes_at:
  // chunk << 32 | offset in it), so that growing them copies nothing: a
  // vector doubling hundreds of MB of a million deep stacks' ids held two
  // copies at once.
  //
  // A run's encoding may end in a tail shared with an earlier run: stacks
  // made by one deep recursion differ in their first frames and share the
  // hundreds after (the bench's deep target: 1.9 KB of ids a stack, all but
  // ~40 bytes the same). Such a run keeps only its own first bytes (tag and
  // length included) and the index of its tail, whose bytes are the end of
  // the last run kept whole; RunPieces gives both. The encoding written is
  // the same bytes.
  // 16 bytes: a one-shot capture of 1M distinct stacks keeps 1M runs.
  struct Run {
    uint64_t bytes_at = 0;
    uint32_t bytes = 0;  // its own: at most 1 + 10 + 10 x ids (AddRun refuses more)
    uint32_t tail = 0;   // 1 + its index in tails; 0: none
  };
  struct Tail {
    uint64_t bytes_at = 0;
    uint64_t bytes = 0;
  };
  // A run's encoding: its own bytes, then its tail's (empty if none).
  struct Pieces {
    std::span<const uint8_t> own;
    std::span<const uint8_t> tail;
    size_t size() const { return own.size() + tail.size(); }
  };
  std::vector<std::vector<uint8_t>> loc_chunks;
  // A deque for the same reason: a vector of 131k runs doubling to 262k held
  // 6 MB at once for 2 MB of runs.
  std::deque<Run> runs;
  std::deque<Tail> tails;
  size_t next_chunk = 4096;  // the capacity of the next chunk (doubling to 1 MiB)
  // Whether the build proved that every stack's run is the one the runtime
  // would make for it whatever the order of the stacks (HeapProfileBuilder's
  // order check): then a later capture whose new buckets all have stacks of
  // these runs means the same with these tables as with a fresh build.
  bool order_independent = false;

  // What the runs may keep (their bytes, and 16 for each run and tail): a
  // streamed walk keeps no stacks, and this bounds what it keeps of them.
  // 256 MiB is 128M ids of stacks that share no tail.
  static constexpr size_t kMaxBytes = size_t{256} << 20;
  size_t max_bytes = kMaxBytes;

  // Appends a run of location ids (encoding them) and returns its index.
  // Throws Error(kUnsupported) past max_bytes.
  uint32_t AddRun(std::span<const uint64_t> ids);
  // Room for runs of this many ids in all (each takes one or more PCs of a
  // stack), their encodings at 2 bytes an id (ids below 16384), in the first
  // chunk (up to 1 MiB).
  void Reserve(size_t ids);
  // Run r's encoding (empty for a run of no ids).
  Pieces RunPieces(const Run& r) const {
    Pieces p;
    if (r.bytes != 0) p.own = At(r.bytes_at, r.bytes);
    if (r.tail != 0) {
      const Tail& t = tails[r.tail - 1];
      p.tail = At(t.bytes_at, t.bytes);
    }
    return p;
  }
  size_t ApproximateBytes() const {
    size_t bytes = encoded.capacity() + mappings_encoded.capacity() + sizeof(Run) * runs.size() +
                   sizeof(Tail) * tails.size();
    for (const std::vector<uint8_t>& chunk : loc_chunks) bytes += chunk.capacity();
    return bytes;
  }

 private:
  // Tails shorter than this are not worth a Tail (16 bytes) and the compare.
  static constexpr size_t kMinTail = 64;
  // The ids' encoding of the last run kept whole (at least kMinTail bytes),
  // whose end later runs may share; bytes == 0: none yet.
  Tail shareable_;
  size_t kept_bytes_ = 0;  // what counts against max_bytes
  std::span<const uint8_t> At(uint64_t bytes_at, uint64_t n) const {
    return {loc_chunks[bytes_at >> 32].data() + (bytes_at & 0xffffffff), n};
  }
  // How many of payload's last bytes are the last bytes of shareable_ (0 if
  // fewer than kMinTail).
  size_t SharedTail(std::span<const uint8_t> payload) const;
  // Adds n to kept_bytes_; throws past max_bytes.
  void CountKept(size_t n);
  // Room for n bytes at the end of the last chunk (a new one if it has none);
  // returns where they start (bytes_at).
  uint64_t Append(size_t n);
};

// What captures of the same buckets share: the location tables and each
// sample's run in them. Samples with the same stack share one run. Immutable
// once made.
struct ProfileTables {
  std::shared_ptr<const LocationTables> locations;
  std::vector<uint32_t> sample_runs;

  size_t samples() const { return sample_runs.size(); }
  size_t ApproximateBytes() const {
    return locations->ApproximateBytes() + 4 * sample_runs.capacity();
  }
};

// One sample's values as writeHeapProto computes them: alloc_objects,
// alloc_space, inuse_objects, inuse_space, and the "bytes" label's number.
struct SampleValues {
  int64_t values[4] = {0, 0, 0, 0};
  int64_t label_num = 0;
  bool has_label = false;
};

struct SampleValues;

// Writes one Sample field (tag, length, the run's encoded location ids, the
// values, the "bytes" label) for a sample of run `run` of tables.
void WriteSample(google::protobuf::io::CodedOutputStream& out, const ProfileTables& tables,
                 uint32_t run, const SampleValues& values, int64_t bytes_key);

// Whether a finished profile holds its samples' values.
enum class SampleStorage {
  kKept,
  // Streamed as they were built (HeapProfileBuilder::StreamSamplesTo) and
  // not kept: a one-shot capture writes them once, and keeping them would
  // cost 48 bytes of fresh memory a sample. Only the remainder can be
  // written (SerializeRemainderTo).
  kStreamedAndDropped,
};

class FinishedProfile {
 public:
  // extra_strings continue tables' string table (indexes locations->strings
  // on); comments and bytes_key index the whole table. samples is empty
  // with SampleStorage::kStreamedAndDropped.
  FinishedProfile(std::shared_ptr<const ProfileTables> tables, std::vector<SampleValues> samples,
                  int64_t period, int64_t time_nanos, std::vector<std::string> extra_strings,
                  std::vector<int64_t> comments, int64_t bytes_key,
                  SampleStorage storage = SampleStorage::kKept);
  FinishedProfile(FinishedProfile&&) = default;
  FinishedProfile& operator=(FinishedProfile&&) = default;

  size_t sample_size() const { return tables_->samples(); }
  // The builder wrote the samples to a stream as it made them
  // (HeapProfileBuilder::StreamSamplesTo).
  void MarkSamplesStreamed() { samples_streamed_ = true; }
  const std::shared_ptr<const ProfileTables>& tables() const { return tables_; }

  // Makes `type` the default sample type (runtime/pprof's allocs profile is
  // the heap profile with alloc_space as the default).
  void SetDefaultSampleType(std::string_view type);

  // The profile.proto bytes (not gzipped); false if out failed. Throws
  // Error(kInternal) if the samples were dropped.
  [[nodiscard]] bool SerializeTo(google::protobuf::io::ZeroCopyOutputStream* out) const;
  // What is left to write after the builder streamed the samples (all of it
  // if it did not): SerializeTo less the samples already written.
  [[nodiscard]] bool SerializeRemainderTo(google::protobuf::io::ZeroCopyOutputStream* out) const;
  std::string Serialize() const;
  // The same profile as a message, decoded from Serialize() on first use.
  const pb::Profile& get() const;

 private:
  std::shared_ptr<const ProfileTables> tables_;
  std::vector<SampleValues> samples_;
  int64_t period_ = 0;
  int64_t time_nanos_ = 0;
  std::vector<std::string> extra_strings_;
  std::vector<int64_t> comments_;
  int64_t bytes_key_ = -1;
  int64_t default_sample_type_ = 0;
  bool samples_streamed_ = false;
  bool Write(google::protobuf::io::ZeroCopyOutputStream* out, bool samples) const;
  mutable std::unique_ptr<google::protobuf::Arena> view_arena_;
  mutable const pb::Profile* view_ = nullptr;
};

}  // namespace goheap2pprof
