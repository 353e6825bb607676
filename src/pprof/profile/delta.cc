#include "pprof/profile/delta.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "pprof/profile/decode.h"

namespace goheap2pprof {
namespace {

// Indexes into the compact tables; kNone for an absent mapping or function.
constexpr uint32_t kNone = UINT32_MAX;

struct ValueType {
  std::string_view type, unit;
  bool operator==(const ValueType&) const = default;
};
struct Mapping {
  uint64_t start = 0, limit = 0, offset = 0;
  std::string_view file, build_id;
  bool has_functions = false, has_filenames = false, has_line_numbers = false,
       has_inline_frames = false;
};
struct Function {
  std::string_view name, system_name, filename;
  int64_t start_line = 0;
};
struct Line {
  uint32_t function = kNone;
  int64_t line = 0;
};
struct Location {
  uint32_t mapping = kNone;
  uint64_t address = 0;
  bool is_folded = false;
  uint32_t lines_at = 0, lines = 0;  // into Profile::lines
};
// A sample's stack is locs[locs_at, locs_at + locs) of Profile::locs, its
// values values[i * sample_types.size(), ...), its labels a LabelSets id.
struct Sample {
  uint32_t locs_at = 0, locs = 0;
  uint32_t labels = 0;
};
// The profile as merging needs it. Strings are views into the serialized
// inputs, which outlive it.
struct Profile {
  std::vector<ValueType> sample_types;
  ValueType period_type;
  int64_t period = 0, time_nanos = 0, duration_nanos = 0;
  std::string_view drop_frames, keep_frames, default_sample_type;
  std::vector<std::string_view> comments;
  std::vector<Mapping> mappings;
  std::vector<Function> functions;
  std::vector<Location> locations;
  std::vector<Line> lines;
  std::vector<Sample> samples;
  std::vector<uint32_t> locs;
  std::vector<int64_t> values;

  std::span<const int64_t> Values(size_t sample) const {
    return {values.data() + sample * sample_types.size(), sample_types.size()};
  }
};

// One label as internal/profile holds it after decoding: a string label, or
// a numeric one with its unit ("" when it has none).
struct Label {
  std::string_view key, str, unit;
  int64_t num = 0;
  bool is_str = false;
  bool has_unit = false;  // unlike the unit "", counts in Go's units list
};

// The distinct label sets of the samples, each in internal/profile's
// canonical order (string labels by key, then numeric ones by key; values of
// one key in their order). Heap profiles have one `bytes` label per sample,
// so there are as many sets as object sizes, not as samples.
class LabelSets {
 public:
  // The set's id; sorts labels.
  uint32_t Intern(std::vector<Label>& labels) {
    std::stable_sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) {
      if (a.is_str != b.is_str) return a.is_str;
      return a.key < b.key;
    });
    // The key spells out what Go's sampleKey compares: per key its values,
    // and for numeric labels the units list, which internal/profile pads
    // with "" only up to the last value that had a unit.
    std::string key;
    for (size_t i = 0; i < labels.size();) {
      size_t j = i;
      size_t units = 0;
      while (j < labels.size() && labels[j].is_str == labels[i].is_str &&
             labels[j].key == labels[i].key) {
        if (!labels[j].is_str && labels[j].has_unit) units = j - i + 1;
        ++j;
      }
      Put(key, labels[i].is_str ? "s" : "n");
      Put(key, labels[i].key);
      PutNumber(key, j - i);
      for (size_t k = i; k < j; ++k) {
        if (labels[k].is_str) {
          Put(key, labels[k].str);
        } else {
          PutNumber(key, static_cast<uint64_t>(labels[k].num));
        }
      }
      if (!labels[i].is_str) {
        PutNumber(key, units);
        for (size_t k = i; k < i + units; ++k) Put(key, labels[k].unit);
      }
      i = j;
    }
    auto [it, inserted] = index_.emplace(std::move(key), static_cast<uint32_t>(sets_.size()));
    if (inserted) sets_.push_back(labels);
    return it->second;
  }

  const std::vector<Label>& Get(uint32_t id) const { return sets_[id]; }

 private:
  static void PutNumber(std::string& out, uint64_t v) {
    char b[8];
    std::memcpy(b, &v, 8);
    out.append(b, 8);
  }
  static void Put(std::string& out, std::string_view s) {
    PutNumber(out, s.size());
    out.append(s);
  }
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<std::vector<Label>> sets_;
};

// Decodes serialized bytes (pprof/profile/decode.h, strictly: a field of a
// known number but another wire type is malformed) into the compact Profile.
class Decoder {
 public:
  Decoder(std::string_view bytes, LabelSets& label_sets)
      : f_(DecodeProfile(Bounded(bytes), kRule)), sets_(label_sets) {}

  Profile Decode(bool negate) {
    Profile out;
    DecodeHeader(out);
    const IdIndex mappings = DecodeMappings(out);
    const IdIndex functions = DecodeFunctions(out);
    const IdIndex locations = DecodeLocations(out, mappings, functions);
    SampleFields fields;
    std::vector<Label> labels;
    for (std::string_view s : f_.samples) {
      DecodeSample(s, kRule, /*labels=*/true, fields);
      AddSample(fields, out, locations, labels, negate);
    }
    return out;
  }

 private:
  static constexpr WireTypes kRule = WireTypes::kStrict;

  // Counts below are uint32: bounded by the input, itself bounded here.
  static std::string_view Bounded(std::string_view bytes) {
    if (bytes.size() > (size_t{1} << 31)) {
      throw Error(ErrorKind::kMalformed, "profile: larger than 2 GiB");
    }
    return bytes;
  }

  std::string_view Str(int64_t i) const { return f_.Str(i); }

  void DecodeHeader(Profile& out) const {
    for (std::string_view m : f_.sample_types) {
      ValueTypeFields vt;
      DecodeValueType(m, kRule, vt);
      out.sample_types.push_back({Str(vt.type), Str(vt.unit)});
    }
    // A message field that appears twice is merged, as protobuf does.
    ValueTypeFields period_type;
    for (std::string_view m : f_.period_types) DecodeValueType(m, kRule, period_type);
    out.period_type = {Str(period_type.type), Str(period_type.unit)};
    out.period = f_.period;
    out.time_nanos = f_.time_nanos;
    out.duration_nanos = f_.duration_nanos;
    out.drop_frames = Str(f_.drop_frames);
    out.keep_frames = Str(f_.keep_frames);
    out.default_sample_type = Str(f_.default_sample_type);
    for (int64_t c : f_.comments) out.comments.push_back(Str(c));
  }

  IdIndex DecodeMappings(Profile& out) const {
    std::vector<uint64_t> ids;
    for (std::string_view bytes : f_.mappings) {
      const MappingFields m = DecodeMapping(bytes, kRule);
      ids.push_back(m.id);
      out.mappings.push_back({.start = m.start,
                              .limit = m.limit,
                              .offset = m.offset,
                              .file = Str(m.filename),
                              .build_id = Str(m.build_id),
                              .has_functions = m.has_functions,
                              .has_filenames = m.has_filenames,
                              .has_line_numbers = m.has_line_numbers,
                              .has_inline_frames = m.has_inline_frames});
    }
    return IdIndex(ids, IdIndex::Repeats::kRefuse, "mapping");
  }

  IdIndex DecodeFunctions(Profile& out) const {
    std::vector<uint64_t> ids;
    for (std::string_view bytes : f_.functions) {
      const FunctionFields f = DecodeFunction(bytes, kRule);
      ids.push_back(f.id);
      out.functions.push_back({Str(f.name), Str(f.system_name), Str(f.filename), f.start_line});
    }
    return IdIndex(ids, IdIndex::Repeats::kRefuse, "function");
  }

  IdIndex DecodeLocations(Profile& out, const IdIndex& mappings, const IdIndex& functions) const {
    std::vector<uint64_t> ids;
    LocationFields l;
    for (std::string_view bytes : f_.locations) {
      DecodeLocation(bytes, kRule, l);
      ids.push_back(l.id);
      Location loc{.mapping = kNone,
                   .address = l.address,
                   .is_folded = l.is_folded,
                   .lines_at = static_cast<uint32_t>(out.lines.size()),
                   .lines = static_cast<uint32_t>(l.lines.size())};
      for (const LineFields& line : l.lines) {
        const uint32_t function = line.function_id == 0 ? kNone : functions.Get(line.function_id);
        out.lines.push_back({function, line.line});
      }
      if (l.mapping_id != 0) loc.mapping = mappings.Get(l.mapping_id);
      out.locations.push_back(loc);
    }
    return IdIndex(ids, IdIndex::Repeats::kRefuse, "location");
  }

  void AddSample(const SampleFields& fields, Profile& out, const IdIndex& locations,
                 std::vector<Label>& labels, bool negate) const {
    Sample s;
    s.locs_at = static_cast<uint32_t>(out.locs.size());
    for (std::string_view packed : fields.location_ids) {
      ForEachVarint(packed, [&](uint64_t id) { out.locs.push_back(locations.Get(id)); });
    }
    s.locs = static_cast<uint32_t>(out.locs.size()) - s.locs_at;
    if (fields.values.size() != out.sample_types.size()) {
      throw Error(ErrorKind::kMalformed, "profile: a sample has ", fields.values.size(),
                  " values for ", out.sample_types.size(), " sample types");
    }
    for (uint64_t v : fields.values) {
      const auto value = static_cast<int64_t>(v);
      out.values.push_back(negate ? GoNegate(value) : value);
    }
    labels.clear();
    for (std::string_view l : fields.labels) AddLabel(DecodeLabel(l, kRule), labels);
    s.labels = sets_.Intern(labels);
    out.samples.push_back(s);
  }

  // internal/profile's decoder: a string label if str is set, else a
  // numeric one if num or its unit is set, else none.
  void AddLabel(const LabelFields& f, std::vector<Label>& labels) const {
    Label l;
    l.key = Str(f.key);
    if (f.str != 0) {
      l.is_str = true;
      l.str = Str(f.str);
    } else if (f.num != 0 || f.unit != 0) {
      l.num = f.num;
      if (f.unit != 0) {
        l.unit = Str(f.unit);
        l.has_unit = true;
      }
    } else {
      return;
    }
    labels.push_back(l);
  }

  ProfileFields f_;
  LabelSets& sets_;
};

bool IsZero(std::span<const int64_t> values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v == 0; });
}

int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

void PutBytes(std::string& out, const void* p, size_t n) {
  out.append(static_cast<const char*>(p), n);
}

// merge.go's profileMerger, on compact profiles.
class Merger {
 public:
  Profile Merge(const std::vector<const Profile*>& srcs) {
    CombineHeaders(srcs);
    for (const Profile* src : srcs) {
      src_ = src;
      mappings_by_src_.assign(src->mappings.size(), std::nullopt);
      functions_by_src_.assign(src->functions.size(), kNone);
      locations_by_src_.assign(src->locations.size(), kNone);
      // The first mapping is the main binary: take it first.
      if (out_.mappings.empty() && !src->mappings.empty()) MapMapping(0);
      for (size_t i = 0; i < src->samples.size(); ++i) {
        if (!IsZero(src->Values(i))) MapSample(i);
      }
    }
    return std::move(out_);
  }

 private:
  struct MapInfo {
    uint32_t index;
    int64_t offset;
  };
  using MappingKey = std::tuple<uint64_t, uint64_t, std::string_view>;
  using FunctionKey = std::tuple<int64_t, std::string_view, std::string_view, std::string_view>;

  void CombineHeaders(const std::vector<const Profile*>& srcs) {
    const Profile& first = *srcs[0];
    for (const Profile* s : srcs) {
      // Go's compatible(): same period type and sample types.
      if (!(s->period_type == first.period_type) || s->sample_types != first.sample_types) {
        throw Error(ErrorKind::kMalformed, "profiles to merge have different sample types");
      }
    }
    out_.sample_types = first.sample_types;
    out_.period_type = first.period_type;
    out_.drop_frames = first.drop_frames;
    out_.keep_frames = first.keep_frames;
    for (const Profile* s : srcs) {
      if (out_.time_nanos == 0 || s->time_nanos < out_.time_nanos) out_.time_nanos = s->time_nanos;
      out_.duration_nanos = WrapAdd(out_.duration_nanos, s->duration_nanos);
      if (out_.period == 0 || out_.period < s->period) out_.period = s->period;
      for (std::string_view c : s->comments) {
        if (std::find(out_.comments.begin(), out_.comments.end(), c) == out_.comments.end()) {
          out_.comments.push_back(c);
        }
      }
      if (out_.default_sample_type.empty()) out_.default_sample_type = s->default_sample_type;
    }
  }

  MapInfo MapMapping(uint32_t src_index) {
    if (mappings_by_src_[src_index]) return *mappings_by_src_[src_index];
    const Mapping& m = src_->mappings[src_index];
    // Sizes rounded up to 4 KiB, as merge.go does against minor differences.
    uint64_t size = m.limit - m.start;
    size = size + 0xfff;
    size -= size % 0x1000;
    MappingKey key{size, m.offset, !m.build_id.empty() ? m.build_id : m.file};
    MapInfo mi;
    if (auto it = mappings_.find(key); it != mappings_.end()) {
      mi = {it->second, static_cast<int64_t>(out_.mappings[it->second].start - m.start)};
    } else {
      mi = {static_cast<uint32_t>(out_.mappings.size()), 0};
      out_.mappings.push_back(m);
      mappings_.emplace(key, mi.index);
    }
    mappings_by_src_[src_index] = mi;
    return mi;
  }

  uint32_t MapFunction(uint32_t src_index) {
    if (functions_by_src_[src_index] != kNone) return functions_by_src_[src_index];
    const Function& f = src_->functions[src_index];
    FunctionKey key{f.start_line, f.name, f.system_name, f.filename};
    auto [it, inserted] = functions_.emplace(key, static_cast<uint32_t>(out_.functions.size()));
    if (inserted) out_.functions.push_back(f);
    functions_by_src_[src_index] = it->second;
    return it->second;
  }

  uint32_t MapLocation(uint32_t src_index) {
    if (locations_by_src_[src_index] != kNone) return locations_by_src_[src_index];
    const Location& src = src_->locations[src_index];
    Location l;
    int64_t offset = 0;
    if (src.mapping != kNone) {
      MapInfo mi = MapMapping(src.mapping);
      l.mapping = mi.index;
      offset = mi.offset;
    }
    l.address = src.address + static_cast<uint64_t>(offset);  // wraps as Go's int64 sum
    l.is_folded = src.is_folded;
    // Location.key(): the address relative to its mapping, the mapping, the
    // (function, line) pairs and the folding flag.
    uint64_t key_addr = l.address;
    if (l.mapping != kNone) key_addr -= out_.mappings[l.mapping].start;
    loc_key_.clear();
    PutBytes(loc_key_, &key_addr, 8);
    PutBytes(loc_key_, &l.mapping, 4);
    loc_key_.push_back(l.is_folded ? 1 : 0);
    const size_t lines_at = out_.lines.size();
    for (uint32_t i = 0; i < src.lines; ++i) {
      Line ln = src_->lines[src.lines_at + i];
      if (ln.function != kNone) ln.function = MapFunction(ln.function);
      PutBytes(loc_key_, &ln.function, 4);
      PutBytes(loc_key_, &ln.line, 8);
      out_.lines.push_back(ln);
    }
    auto [it, inserted] =
        locations_.emplace(loc_key_, static_cast<uint32_t>(out_.locations.size()));
    if (inserted) {
      l.lines_at = static_cast<uint32_t>(lines_at);
      l.lines = src.lines;
      out_.locations.push_back(l);
    } else {
      out_.lines.resize(lines_at);  // a location already merged: its lines are there
    }
    locations_by_src_[src_index] = it->second;
    return it->second;
  }

  void MapSample(size_t i) {
    const Sample& src = src_->samples[i];
    key_.clear();
    PutBytes(key_, &src.labels, 4);
    const size_t locs_at = out_.locs.size();
    for (uint32_t k = 0; k < src.locs; ++k) {
      const uint32_t l = MapLocation(src_->locs[src.locs_at + k]);
      PutBytes(key_, &l, 4);
      out_.locs.push_back(l);
    }
    std::span<const int64_t> values = src_->Values(i);
    auto [it, inserted] = samples_.emplace(key_, static_cast<uint32_t>(out_.samples.size()));
    if (!inserted) {
      out_.locs.resize(locs_at);
      int64_t* sum = out_.values.data() + size_t{it->second} * values.size();
      for (size_t v = 0; v < values.size(); ++v) sum[v] = WrapAdd(sum[v], values[v]);
      return;
    }
    out_.samples.push_back({static_cast<uint32_t>(locs_at), src.locs, src.labels});
    out_.values.insert(out_.values.end(), values.begin(), values.end());
  }

  Profile out_;
  const Profile* src_ = nullptr;
  std::vector<std::optional<MapInfo>> mappings_by_src_;
  std::vector<uint32_t> functions_by_src_;
  std::vector<uint32_t> locations_by_src_;
  std::map<MappingKey, uint32_t> mappings_;
  std::map<FunctionKey, uint32_t> functions_;
  std::unordered_map<std::string, uint32_t> locations_;
  std::unordered_map<std::string, uint32_t> samples_;
  std::string key_, loc_key_;  // scratch for sample and location keys
};

// Go's Merge: merge, and merge again while zero samples remain (a second
// pass drops them and whatever only they referenced).
Profile GoMerge(const std::vector<const Profile*>& srcs) {
  Profile merged = Merger().Merge(srcs);
  for (size_t i = 0; i < merged.samples.size(); ++i) {
    if (IsZero(merged.Values(i))) return Merger().Merge({&merged});
  }
  return merged;
}

// Writes a compact profile as profile.proto bytes, ids 1..N in table order
// and a fresh string table ("" first), in field-number order.
class Encoder {
 public:
  explicit Encoder(const LabelSets& sets) : sets_(sets) {}

  std::string Encode(const Profile& p) {
    Str("");
    std::string out;
    for (const ValueType& vt : p.sample_types) Message(out, 1, Vt(vt));
    for (size_t i = 0; i < p.samples.size(); ++i) Message(out, 2, EncodeSample(p, i));
    for (size_t i = 0; i < p.mappings.size(); ++i) Message(out, 3, EncodeMapping(p.mappings[i], i));
    for (size_t i = 0; i < p.locations.size(); ++i) Message(out, 4, EncodeLocation(p, i));
    for (size_t i = 0; i < p.functions.size(); ++i) {
      Message(out, 5, EncodeFunction(p.functions[i], i));
    }
    // Every string is interned before the table is written.
    const int64_t drop = Str(p.drop_frames), keep = Str(p.keep_frames);
    const std::string period_type = Vt(p.period_type);
    std::vector<int64_t> comments;
    for (std::string_view c : p.comments) comments.push_back(Str(c));
    const int64_t default_type = Str(p.default_sample_type);
    for (std::string_view s : strings_) Message(out, 6, s);
    Number(out, 7, drop);
    Number(out, 8, keep);
    Number(out, 9, p.time_nanos);
    Number(out, 10, p.duration_nanos);
    Message(out, 11, period_type);
    Number(out, 12, p.period);
    for (int64_t c : comments) {
      Tag(out, 13, 0);
      Varint(out, static_cast<uint64_t>(c));
    }
    Number(out, 14, default_type);
    return out;
  }

 private:
  static void Varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  static void Tag(std::string& out, int field, int type) {
    Varint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(type));
  }
  // proto3 leaves zero scalars out.
  static void Number(std::string& out, int field, uint64_t v) {
    if (v == 0) return;
    Tag(out, field, 0);
    Varint(out, v);
  }
  static void Number(std::string& out, int field, int64_t v) {
    Number(out, field, static_cast<uint64_t>(v));
  }
  static void Message(std::string& out, int field, std::string_view body) {
    Tag(out, field, 2);
    Varint(out, body.size());
    out.append(body);
  }
  static void Packed(std::string& out, int field, const std::string& body) {
    if (!body.empty()) Message(out, field, body);
  }

  std::string Vt(const ValueType& vt) {
    std::string out;
    Number(out, 1, Str(vt.type));
    Number(out, 2, Str(vt.unit));
    return out;
  }

  std::string EncodeSample(const Profile& p, size_t i) {
    const Sample& s = p.samples[i];
    std::string out, packed;
    for (uint32_t k = 0; k < s.locs; ++k) Varint(packed, uint64_t{p.locs[s.locs_at + k]} + 1);
    Packed(out, 1, packed);
    packed.clear();
    for (int64_t v : p.Values(i)) Varint(packed, static_cast<uint64_t>(v));
    Packed(out, 2, packed);
    for (const Label& l : sets_.Get(s.labels)) {
      std::string label;
      Number(label, 1, Str(l.key));
      if (l.is_str) {
        Number(label, 2, Str(l.str));
      } else {
        Number(label, 3, l.num);
        if (!l.unit.empty()) Number(label, 4, Str(l.unit));
      }
      Message(out, 3, label);
    }
    return out;
  }

  std::string EncodeMapping(const Mapping& m, size_t i) {
    std::string out;
    Number(out, 1, uint64_t{i + 1});
    Number(out, 2, m.start);
    Number(out, 3, m.limit);
    Number(out, 4, m.offset);
    Number(out, 5, Str(m.file));
    Number(out, 6, Str(m.build_id));
    Number(out, 7, uint64_t{m.has_functions});
    Number(out, 8, uint64_t{m.has_filenames});
    Number(out, 9, uint64_t{m.has_line_numbers});
    Number(out, 10, uint64_t{m.has_inline_frames});
    return out;
  }

  std::string EncodeLocation(const Profile& p, size_t i) {
    const Location& l = p.locations[i];
    std::string out;
    Number(out, 1, uint64_t{i + 1});
    if (l.mapping != kNone) Number(out, 2, uint64_t{l.mapping} + 1);
    Number(out, 3, l.address);
    for (uint32_t k = 0; k < l.lines; ++k) {
      const Line& ln = p.lines[l.lines_at + k];
      std::string line;
      if (ln.function != kNone) Number(line, 1, uint64_t{ln.function} + 1);
      Number(line, 2, ln.line);
      Message(out, 4, line);
    }
    Number(out, 5, uint64_t{l.is_folded});
    return out;
  }

  std::string EncodeFunction(const Function& f, size_t i) {
    std::string out;
    Number(out, 1, uint64_t{i + 1});
    Number(out, 2, Str(f.name));
    Number(out, 3, Str(f.system_name));
    Number(out, 4, Str(f.filename));
    Number(out, 5, f.start_line);
    return out;
  }

  int64_t Str(std::string_view s) {
    auto [it, inserted] = index_.emplace(s, static_cast<int64_t>(strings_.size()));
    if (inserted) strings_.push_back(s);
    return it->second;
  }

  const LabelSets& sets_;
  std::unordered_map<std::string_view, int64_t> index_;
  std::vector<std::string_view> strings_;
};

// p1 - p0 on the compact form; the views in the result point into p0 and
// p1. Sets *t0 and *t1 to their time_nanos.
Profile Delta(std::string_view p0, std::string_view p1, LabelSets& sets, int64_t* t0, int64_t* t1) {
  Profile a = Decoder(p0, sets).Decode(/*negate=*/true);
  Profile b = Decoder(p1, sets).Decode(/*negate=*/false);
  *t0 = a.time_nanos;
  *t1 = b.time_nanos;
  return GoMerge({&a, &b});
}

}  // namespace

int64_t GoNegate(int64_t v) {
  double d = -static_cast<double>(v);
  // Go's float64 -> int64 conversion of an out-of-range value is
  // implementation-defined; amd64's CVTTSD2SQ gives INT64_MIN. C++ would be
  // undefined, so that case is spelled out.
  if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(d);
}

std::string EncodedDeltaProfile(std::string_view p0, std::string_view p1) {
  LabelSets sets;
  int64_t t0 = 0, t1 = 0;
  Profile d = Delta(p0, p1, sets, &t0, &t1);
  // serveDeltaProfile: ts := p1.TimeNanos; dur := p1.TimeNanos - p0.TimeNanos.
  d.time_nanos = t1;
  d.duration_nanos = WrapAdd(t1, static_cast<int64_t>(0 - static_cast<uint64_t>(t0)));
  return Encoder(sets).Encode(d);
}

pb::Profile DeltaProfile(const pb::Profile& p0, const pb::Profile& p1) {
  const std::string b0 = p0.SerializeAsString(), b1 = p1.SerializeAsString();
  LabelSets sets;
  int64_t t0 = 0, t1 = 0;
  pb::Profile out;
  if (!out.ParseFromString(Encoder(sets).Encode(Delta(b0, b1, sets, &t0, &t1)))) {
    throw Error(ErrorKind::kInternal, "the delta profile does not parse");
  }
  return out;
}

}  // namespace goheap2pprof
