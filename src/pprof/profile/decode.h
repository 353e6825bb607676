// The one decoder of serialized profile.proto bytes that the compact readers
// share: the ?seconds=N delta (pprof/profile/delta.cc) and the growth report
// (pprof/growth/decode.cc). They read profiles of 100k samples without
// building pb::Profile messages (a memory allocation per sample, location and
// line), so this decoder keeps the repeated messages as views into the bytes
// and reads each message, when the caller asks, into a flat struct of its
// fields: ids and string indexes as they are, for the caller to resolve with
// ProfileFields::Str and IdIndex, which refuse what is out of range.
//
// Every byte is untrusted: each read is bounded by its message (ProtoWire),
// and a truncated or malformed field throws Error(kMalformed). Two readers
// need two rules for a field of a known number but another wire type
// (WireTypes): the delta refuses it, the growth report skips it as
// libprotobuf does, so that it collects what GrowthCollector::Add collects.
//
//   ProfileFields f = DecodeProfile(bytes, WireTypes::kProtobuf, ProfileField::kTimeNanos);
//   int64_t t = f.time_nanos;
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pprof/proto_wire.h"

namespace goheap2pprof {

// What a field of a known number but of another wire type is.
enum class WireTypes {
  kStrict,    // malformed (the delta refuses it, as Go's internal/profile does)
  kProtobuf,  // an unknown field, skipped (libprotobuf's reading)
};

// The fields of one message, read under a WireTypes rule.
class FieldReader {
 public:
  FieldReader(std::string_view bytes, WireTypes rule) : w_(bytes), rule_(rule) {}

  // Reads the next tag; false at the end of the message.
  bool Next() {
    if (w_.Done()) return false;
    const auto [field, type] = w_.Tag();
    field_ = field;
    type_ = type;
    return true;
  }
  uint64_t field() const { return field_; }
  void Skip() { w_.Skip(type_); }

  // The field as a number, into v (left as it was when the field is skipped).
  void Read(uint64_t& v) {
    if (IsNumber()) v = w_.Varint();
  }
  void Read(int64_t& v) {
    if (IsNumber()) v = static_cast<int64_t>(w_.Varint());
  }
  void Read(bool& v) {
    if (IsNumber()) v = w_.Varint() != 0;
  }
  // A message or string field's bytes into v; false when it is skipped.
  // what: the field's name in kStrict's error ("a line").
  bool Message(std::string_view& v, std::string_view what);
  // The same, appended to `to`.
  void Message(std::vector<std::string_view>& to, std::string_view what) {
    if (std::string_view v; Message(v, what)) to.push_back(v);
  }
  // A repeated number field, packed or not, as packed varints appended to
  // `to` (an unpacked one as the bytes of its one varint, which read the
  // same); read them with ForEachVarint.
  void Packed(std::vector<std::string_view>& to);
  // A repeated number field, packed or not: add(v) on each element.
  template <typename F>
  void Repeated(F add) {
    if (type_ == 0 || type_ == 2 || rule_ == WireTypes::kStrict) {
      w_.Repeated(type_, add);
    } else {
      Skip();
    }
  }

 private:
  bool IsNumber();

  ProtoWire w_;
  WireTypes rule_;
  uint64_t field_ = 0;
  int type_ = 0;
};

// Calls f on each varint of packed bytes.
template <typename F>
void ForEachVarint(std::string_view packed, F f) {
  ProtoWire w(packed);
  while (!w.Done()) f(w.Varint());
}

// Fields of Profile to select, one bit per field number (in a struct: a
// unity build puts other files' kProfile* constants in scope).
struct ProfileField {
  static constexpr uint32_t kSampleType = 1u << 1, kSample = 1u << 2, kMapping = 1u << 3,
                            kLocation = 1u << 4, kFunction = 1u << 5, kStringTable = 1u << 6,
                            kDropFrames = 1u << 7, kKeepFrames = 1u << 8, kTimeNanos = 1u << 9,
                            kDurationNanos = 1u << 10, kPeriodType = 1u << 11, kPeriod = 1u << 12,
                            kComment = 1u << 13, kDefaultSampleType = 1u << 14, kAll = 0x7ffe;
};

// The top level of a profile: the repeated messages as views in their
// order, the scalars as the last of their fields. Fields that were not
// selected are skipped, whatever their wire type; they stay empty or 0.
struct ProfileFields {
  std::vector<std::string_view> sample_types, samples, mappings, locations, functions, strings,
      period_types;
  std::vector<int64_t> comments;
  int64_t drop_frames = 0, keep_frames = 0, time_nanos = 0, duration_nanos = 0, period = 0,
          default_sample_type = 0;

  // string_table[i]; Error(kMalformed) when out of range.
  std::string_view Str(int64_t i) const;
};

// Fields may come in any order (a capture writes its tables first and its
// strings last), so the messages are decoded once all of them are known.
ProfileFields DecodeProfile(std::string_view bytes, WireTypes rule,
                            uint32_t select = ProfileField::kAll);

struct ValueTypeFields {
  int64_t type = 0, unit = 0;
};
struct MappingFields {
  uint64_t id = 0, start = 0, limit = 0, offset = 0;
  int64_t filename = 0, build_id = 0;
  bool has_functions = false, has_filenames = false, has_line_numbers = false,
       has_inline_frames = false;
};
struct FunctionFields {
  uint64_t id = 0;
  int64_t name = 0, system_name = 0, filename = 0, start_line = 0;
};
struct LineFields {
  uint64_t function_id = 0;
  int64_t line = 0;
};
struct LocationFields {
  uint64_t id = 0, mapping_id = 0, address = 0;
  bool is_folded = false;
  std::vector<LineFields> lines;
};
struct LabelFields {
  int64_t key = 0, str = 0, num = 0, unit = 0;
};
// A sample's fields; reused from sample to sample.
struct SampleFields {
  std::vector<std::string_view> location_ids;  // each location_id field, packed
  std::vector<uint64_t> values;
  std::vector<std::string_view> labels;  // only when asked for
};

// A value type's fields over `into`: protobuf merges a message field that
// appears twice, field by field.
void DecodeValueType(std::string_view m, WireTypes rule, ValueTypeFields& into);
MappingFields DecodeMapping(std::string_view m, WireTypes rule);
FunctionFields DecodeFunction(std::string_view m, WireTypes rule);
// Into `out`, whose lines vector is reused.
void DecodeLocation(std::string_view m, WireTypes rule, LocationFields& out);
void DecodeSample(std::string_view m, WireTypes rule, bool labels, SampleFields& out);
LabelFields DecodeLabel(std::string_view m, WireTypes rule);
// The id (field 1) of a mapping, location or function, 0 when absent: for
// an index of messages decoded only when referenced.
uint64_t DecodeId(std::string_view m, WireTypes rule);

// Message ids to their indexes in a table: an array when the ids are about
// as dense as the runtime and goheap2pprof write them (1..N), a hash map
// otherwise, so that forged ids cost no more memory than the input.
class IdIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  enum class Repeats {
    kRefuse,    // an id 0 or repeated is Error(kMalformed) (the delta)
    kLastWins,  // the last of equal ids wins (ProfileView's rule, for growth)
  };
  // ids[i]: message i's id; what: the table's name in errors ("mapping").
  IdIndex(std::span<const uint64_t> ids, Repeats repeats, const char* what);

  // kNone when no message has the id.
  uint32_t Find(uint64_t id) const {
    if (dense_) return id < table_.size() ? table_[id] : kNone;
    const auto it = map_.find(id);
    return it == map_.end() ? kNone : it->second;
  }
  // Error(kMalformed) when no message has the id.
  uint32_t Get(uint64_t id) const;

 private:
  const char* what_;
  bool dense_ = true;
  std::vector<uint32_t> table_;
  std::unordered_map<uint64_t, uint32_t> map_;
};

}  // namespace goheap2pprof
