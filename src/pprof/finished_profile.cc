#include "pprof/finished_profile.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "heap/buckets.h"

namespace goheap2pprof {

namespace {

// profile.proto's wire format (the field numbers of proto/profile.proto):
// a tag is field << 3 | wire type (0 varint, 2 length-delimited).
constexpr uint8_t kProfileSample = 2 << 3 | 2;
constexpr uint8_t kProfileStringTable = 6 << 3 | 2;
constexpr uint8_t kProfileTimeNanos = 9 << 3 | 0;
constexpr uint8_t kProfilePeriod = 12 << 3 | 0;
constexpr uint8_t kProfileComment = 13 << 3 | 2;  // packed
constexpr uint8_t kProfileDefaultSampleType = 14 << 3 | 0;
constexpr uint8_t kSampleLocationId = 1 << 3 | 2;  // packed
constexpr uint8_t kSampleValue = 2 << 3 | 2;       // packed
constexpr uint8_t kSampleLabel = 3 << 3 | 2;
constexpr uint8_t kLabelKey = 1 << 3 | 0;
constexpr uint8_t kLabelNum = 3 << 3 | 0;

// 7 bits a byte, of the bits up to the highest one set; without a loop:
// every id of every frame of every stack is sized.
size_t VarintSize(uint64_t v) { return 1 + static_cast<size_t>(63 - std::countl_zero(v | 1)) / 7; }

// int64 fields are varints of the two's complement (ten bytes if negative).
uint8_t* PutVarint(uint64_t v, uint8_t* p) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// The ids' varints, one after another. Most profiles have fewer than 16384
// locations, whose ids take one or two bytes: written then without a branch
// an id (a stack's ids follow no pattern a branch predictor could learn),
// or a byte an id, in vector lanes, below 128. May write one byte past the
// end (the buffer holds 10 bytes an id).
uint8_t* PutIdVarints(std::span<const uint64_t> ids, uint8_t* p) {
  // Four chains, not one: a deep stack's thousand ids took a cycle each.
  uint64_t any[4] = {};
  size_t at = 0;
  for (; at + 4 <= ids.size(); at += 4) {
    for (size_t k = 0; k < 4; ++k) any[k] |= ids[at + k];
  }
  uint64_t all = (any[0] | any[1]) | (any[2] | any[3]);
  for (; at < ids.size(); ++at) all |= ids[at];
  if (all < 128) {
    for (size_t i = 0; i < ids.size(); ++i) p[i] = static_cast<uint8_t>(ids[i]);
    return p + ids.size();
  }
  if (all >= 16384) {
    for (uint64_t id : ids) p = PutVarint(id, p);
    return p;
  }
  for (uint64_t id : ids) {
    const bool two = id >= 128;
    p[0] = static_cast<uint8_t>(id | (two ? 0x80 : 0));
    p[1] = static_cast<uint8_t>(id >> 7);
    p += 1 + static_cast<size_t>(two);
  }
  return p;
}

size_t PackedSize(std::span<const int64_t> values) {
  size_t n = 0;
  for (int64_t v : values) n += VarintSize(static_cast<uint64_t>(v));
  return n;
}

}  // namespace

uint32_t LocationTables::AddRun(std::span<const uint64_t> ids) {
  if (runs.size() >= std::numeric_limits<uint32_t>::max()) {
    throw Error(ErrorKind::kInternal, "more than 2^32 location runs in one profile");
  }
  if (ids.size() > std::numeric_limits<uint32_t>::max() / 16) {
    throw Error(ErrorKind::kInternal, "a location run of ", ids.size(), " ids");
  }
  Run run;
  CountKept(sizeof(Run));
  if (!ids.empty()) {
    // Encoded once, here, and copied after the header (whose length is the
    // encoding's): at most 10 bytes an id, on the stack for all but very
    // deep stacks.
    uint8_t local[16 * 1024];
    std::vector<uint8_t> deep;
    uint8_t* ids_bytes = local;
    if (ids.size() > sizeof(local) / 10) {
      deep.resize(10 * ids.size());
      ids_bytes = deep.data();
    }
    const size_t payload = static_cast<size_t>(PutIdVarints(ids, ids_bytes) - ids_bytes);
    const size_t shared = SharedTail({ids_bytes, payload});
    const size_t own = payload - shared;
    const size_t header = 1 + VarintSize(payload);
    CountKept(header + own + (shared != 0 ? sizeof(Tail) : 0));
    run.bytes_at = Append(header + own);
    uint8_t* p = loc_chunks.back().data() + (run.bytes_at & 0xffffffff);
    *p++ = kSampleLocationId;
    p = PutVarint(payload, p);
    std::memcpy(p, ids_bytes, own);
    run.bytes = static_cast<uint32_t>(header + own);
    if (shared != 0) {
      tails.push_back({shareable_.bytes_at + (shareable_.bytes - shared), shared});
      run.tail = static_cast<uint32_t>(tails.size());
    } else if (payload >= kMinTail) {
      shareable_ = {run.bytes_at + header, payload};
    }
  }
  runs.push_back(run);
  return static_cast<uint32_t>(runs.size() - 1);
}

void LocationTables::CountKept(size_t n) {
  kept_bytes_ += n;
  if (kept_bytes_ > max_bytes) {
    throw Error(ErrorKind::kUnsupported, "the profile's location ids take more than ", max_bytes,
                " bytes (at stack ", runs.size() + 1, ")")
        .WithHint(std::string("goheap2pprof keeps each distinct stack's location ids (about 2 "
                              "bytes a frame; stacks that end alike share their end) and no more "
                              "than this; ") +
                  kSmallerProfileAdvice);
  }
}

size_t LocationTables::SharedTail(std::span<const uint8_t> payload) const {
  if (shareable_.bytes == 0 || payload.size() < kMinTail) return 0;
  const std::span<const uint8_t> base = At(shareable_.bytes_at, shareable_.bytes);
  const size_t most = std::min(payload.size(), base.size());
  const uint8_t* a = payload.data() + payload.size();
  const uint8_t* b = base.data() + base.size();
  size_t n = 0;
  // Eight bytes at a time while they match, then byte by byte.
  while (n + 8 <= most && std::memcmp(a - n - 8, b - n - 8, 8) == 0) n += 8;
  while (n < most && *(a - n - 1) == *(b - n - 1)) ++n;
  return n >= kMinTail ? n : 0;
}

uint64_t LocationTables::Append(size_t n) {
  if (loc_chunks.empty() || loc_chunks.back().capacity() - loc_chunks.back().size() < n) {
    constexpr size_t kMaxChunk = size_t{1} << 20;
    loc_chunks.emplace_back().reserve(std::max(n, next_chunk));
    next_chunk = std::min(2 * next_chunk, kMaxChunk);
  }
  std::vector<uint8_t>& chunk = loc_chunks.back();
  const size_t start = chunk.size();
  chunk.resize(start + n);  // within its capacity: runs before stay in place
  return (uint64_t{loc_chunks.size() - 1} << 32) | start;
}

void LocationTables::Reserve(size_t ids) {
  if (loc_chunks.empty()) next_chunk = std::clamp<size_t>(2 * ids, 4096, size_t{1} << 20);
}

FinishedProfile::FinishedProfile(std::shared_ptr<const ProfileTables> tables,
                                 std::vector<SampleValues> samples, int64_t period,
                                 int64_t time_nanos, std::vector<std::string> extra_strings,
                                 std::vector<int64_t> comments, int64_t bytes_key,
                                 SampleStorage storage)
    : tables_(std::move(tables)),
      samples_(std::move(samples)),
      period_(period),
      time_nanos_(time_nanos),
      extra_strings_(std::move(extra_strings)),
      comments_(std::move(comments)),
      bytes_key_(bytes_key),
      samples_streamed_(storage == SampleStorage::kStreamedAndDropped) {
  if (samples_.size() != (samples_streamed_ ? 0 : tables_->samples())) {
    throw Error(ErrorKind::kInternal, "profile tables for ", tables_->samples(), " samples given ",
                samples_.size(), " samples' values");
  }
}

void FinishedProfile::SetDefaultSampleType(std::string_view type) {
  default_sample_type_ = tables_->locations->strings + static_cast<int64_t>(extra_strings_.size());
  extra_strings_.emplace_back(type);
  view_ = nullptr;
  view_arena_.reset();
}

void WriteSample(google::protobuf::io::CodedOutputStream& out, const ProfileTables& t,
                 uint32_t run_index, const SampleValues& v, int64_t bytes_key) {
  // The location ids are encoded already (shared by the samples of one
  // stack); the values and the label are put together here. At most: 1 + 10
  // (sample tag, length), 1 + 1 + 40 (values), 1 + 1 + 1 + 10 + 1 + 10
  // (label) bytes around the location ids.
  const LocationTables::Pieces run = t.locations->RunPieces(t.locations->runs[run_index]);
  uint8_t head[16];
  uint8_t tail[96];
  uint8_t* p = tail;
  *p++ = kSampleValue;
  *p++ = static_cast<uint8_t>(PackedSize(v.values));  // at most 40: one byte
  for (int64_t x : v.values) p = PutVarint(static_cast<uint64_t>(x), p);
  if (v.has_label) {
    const size_t label_len =
        (bytes_key != 0 ? 1 + VarintSize(static_cast<uint64_t>(bytes_key)) : 0) +
        (v.label_num != 0 ? 1 + VarintSize(static_cast<uint64_t>(v.label_num)) : 0);
    *p++ = kSampleLabel;
    *p++ = static_cast<uint8_t>(label_len);  // at most 22: one byte
    if (bytes_key != 0) {
      *p++ = kLabelKey;
      p = PutVarint(static_cast<uint64_t>(bytes_key), p);
    }
    if (v.label_num != 0) {
      *p++ = kLabelNum;
      p = PutVarint(static_cast<uint64_t>(v.label_num), p);
    }
  }
  const size_t tail_len = static_cast<size_t>(p - tail);
  uint8_t* h = head;
  *h++ = kProfileSample;
  h = PutVarint(run.size() + tail_len, h);
  out.WriteRaw(head, static_cast<int>(h - head));
  // (A sample without locations has no bytes: no chunk may exist.)
  if (!run.own.empty()) out.WriteRaw(run.own.data(), static_cast<int>(run.own.size()));
  if (!run.tail.empty()) out.WriteRaw(run.tail.data(), static_cast<int>(run.tail.size()));
  out.WriteRaw(tail, static_cast<int>(tail_len));
}

bool FinishedProfile::SerializeTo(google::protobuf::io::ZeroCopyOutputStream* out) const {
  return Write(out, /*samples=*/true);
}

bool FinishedProfile::SerializeRemainderTo(google::protobuf::io::ZeroCopyOutputStream* out) const {
  return Write(out, /*samples=*/!samples_streamed_);
}

bool FinishedProfile::Write(google::protobuf::io::ZeroCopyOutputStream* out, bool samples) const {
  if (samples && samples_.size() != tables_->samples()) {
    throw Error(ErrorKind::kInternal, "the profile's samples were streamed and not kept");
  }
  google::protobuf::io::CodedOutputStream cos(out);
  for (const std::string* part :
       {&tables_->locations->encoded, &tables_->locations->mappings_encoded}) {
    cos.WriteRaw(part->data(), static_cast<int>(part->size()));
  }
  for (const std::string& s : extra_strings_) {
    cos.WriteTag(kProfileStringTable);
    cos.WriteVarint32(static_cast<uint32_t>(s.size()));
    cos.WriteRaw(s.data(), static_cast<int>(s.size()));
  }
  if (time_nanos_ != 0) {
    cos.WriteTag(kProfileTimeNanos);
    cos.WriteVarint64(static_cast<uint64_t>(time_nanos_));
  }
  if (period_ != 0) {
    cos.WriteTag(kProfilePeriod);
    cos.WriteVarint64(static_cast<uint64_t>(period_));
  }
  if (!comments_.empty()) {
    cos.WriteTag(kProfileComment);
    cos.WriteVarint64(PackedSize(comments_));
    for (int64_t c : comments_) cos.WriteVarint64(static_cast<uint64_t>(c));
  }
  if (default_sample_type_ != 0) {
    cos.WriteTag(kProfileDefaultSampleType);
    cos.WriteVarint64(static_cast<uint64_t>(default_sample_type_));
  }
  if (samples) {
    for (size_t i = 0; i < samples_.size(); ++i) {
      WriteSample(cos, *tables_, tables_->sample_runs[i], samples_[i], bytes_key_);
    }
  }
  cos.Trim();
  return !cos.HadError();
}

std::string FinishedProfile::Serialize() const {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    if (!SerializeTo(&out)) throw Error(ErrorKind::kInternal, "encoding the profile failed");
  }
  return bytes;
}

const pb::Profile& FinishedProfile::get() const {
  if (view_ == nullptr) {
    auto arena = std::make_unique<google::protobuf::Arena>();
    pb::Profile* p = google::protobuf::Arena::CreateMessage<pb::Profile>(arena.get());
    if (!p->ParseFromString(Serialize())) {
      throw Error(ErrorKind::kInternal, "the encoded profile does not decode");
    }
    view_arena_ = std::move(arena);
    view_ = p;
  }
  return *view_;
}

}  // namespace goheap2pprof
