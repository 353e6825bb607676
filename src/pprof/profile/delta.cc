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
#include "pprof/proto_wire.h"

namespace goheap2pprof {
namespace {

// Indexes into the compact tables; kNone for an absent mapping or function.
constexpr uint32_t kNone = UINT32_MAX;

Error Malformed(std::string_view what) { return Error(ErrorKind::kMalformed, "profile: ", what); }

using Wire = ProtoWire;

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

// Ids of one table, for resolving references to it.
class IdIndex {
 public:
  void Add(uint64_t id, uint32_t index, const char* what) {
    if (id == 0 || !index_.emplace(id, index).second) {
      throw Error(ErrorKind::kMalformed, "profile: ", what, " id ", id, " is 0 or repeated");
    }
  }
  uint32_t Find(uint64_t id, const char* what) const {
    auto it = index_.find(id);
    if (it == index_.end())
      throw Error(ErrorKind::kMalformed, "profile: no ", what, " with id ", id);
    return it->second;
  }

 private:
  std::unordered_map<uint64_t, uint32_t> index_;
};

// Decodes serialized bytes into the compact Profile. Fields may come in any
// order (a capture writes its tables first and its strings last), so the
// first pass only collects the string table and the spans of the messages.
class Decoder {
 public:
  Decoder(std::string_view bytes, LabelSets& label_sets) : bytes_(bytes), sets_(label_sets) {}

  Profile Decode(bool negate) {
    // Counts below are uint32: bounded by the input, itself bounded here.
    if (bytes_.size() > (size_t{1} << 31)) throw Malformed("larger than 2 GiB");
    Collect();
    Profile out;
    for (std::string_view vt : sample_types_) {
      int64_t type = 0, unit = 0;
      Vt(vt, type, unit);
      out.sample_types.push_back({Str(type), Str(unit)});
    }
    // A message field that appears twice is merged, as protobuf does.
    int64_t period_type = 0, period_unit = 0;
    for (std::string_view vt : period_types_) Vt(vt, period_type, period_unit);
    out.period_type = {Str(period_type), Str(period_unit)};
    out.period = period_;
    out.time_nanos = time_nanos_;
    out.duration_nanos = duration_nanos_;
    out.drop_frames = Str(drop_frames_);
    out.keep_frames = Str(keep_frames_);
    out.default_sample_type = Str(default_sample_type_);
    for (int64_t c : comments_) out.comments.push_back(Str(c));
    IdIndex mappings, functions, locations;
    for (std::string_view m : mapping_msgs_) DecodeMapping(m, out, mappings);
    for (std::string_view f : function_msgs_) DecodeFunction(f, out, functions);
    for (std::string_view l : location_msgs_)
      DecodeLocation(l, out, mappings, functions, locations);
    std::vector<Label> labels;
    for (std::string_view s : sample_msgs_) DecodeSample(s, out, locations, labels, negate);
    return out;
  }

 private:
  void Collect() {
    Wire w(bytes_);
    while (!w.Done()) {
      // Copied out of the binding: a lambda may not capture a structured
      // binding before C++20's P1091 (clang 14 refuses it).
      const auto [field, tag_type] = w.Tag();
      const auto type = tag_type;
      auto msg = [&](std::vector<std::string_view>& to) {
        if (type != 2) throw Malformed("a message field is not length-delimited");
        to.push_back(w.Bytes());
      };
      auto num = [&] { return static_cast<int64_t>(w.Scalar(type)); };
      switch (field) {
        case 1:
          msg(sample_types_);
          break;
        case 2:
          msg(sample_msgs_);
          break;
        case 3:
          msg(mapping_msgs_);
          break;
        case 4:
          msg(location_msgs_);
          break;
        case 5:
          msg(function_msgs_);
          break;
        case 6:
          if (type != 2) throw Malformed("a string is not length-delimited");
          strings_.push_back(w.Bytes());
          break;
        case 7:
          drop_frames_ = num();
          break;
        case 8:
          keep_frames_ = num();
          break;
        case 9:
          time_nanos_ = num();
          break;
        case 10:
          duration_nanos_ = num();
          break;
        case 11:
          msg(period_types_);
          break;
        case 12:
          period_ = num();
          break;
        case 13:
          w.Repeated(type, [&](uint64_t v) { comments_.push_back(static_cast<int64_t>(v)); });
          break;
        case 14:
          default_sample_type_ = num();
          break;
        default:
          w.Skip(type);
      }
    }
  }

  std::string_view Str(int64_t i) const {
    if (i < 0 || static_cast<uint64_t>(i) >= strings_.size()) {
      throw Error(ErrorKind::kMalformed, "profile: string index ", i, " out of range");
    }
    return strings_[static_cast<size_t>(i)];
  }

  static void Vt(std::string_view bytes, int64_t& type, int64_t& unit) {
    Wire w(bytes);
    while (!w.Done()) {
      auto [field, t] = w.Tag();
      if (field == 1) {
        type = static_cast<int64_t>(w.Scalar(t));
      } else if (field == 2) {
        unit = static_cast<int64_t>(w.Scalar(t));
      } else {
        w.Skip(t);
      }
    }
  }

  void DecodeMapping(std::string_view bytes, Profile& out, IdIndex& ids) const {
    Mapping m;
    uint64_t id = 0;
    int64_t file = 0, build_id = 0;
    Wire w(bytes);
    while (!w.Done()) {
      auto [field, t] = w.Tag();
      switch (field) {
        case 1:
          id = w.Scalar(t);
          break;
        case 2:
          m.start = w.Scalar(t);
          break;
        case 3:
          m.limit = w.Scalar(t);
          break;
        case 4:
          m.offset = w.Scalar(t);
          break;
        case 5:
          file = static_cast<int64_t>(w.Scalar(t));
          break;
        case 6:
          build_id = static_cast<int64_t>(w.Scalar(t));
          break;
        case 7:
          m.has_functions = w.Scalar(t) != 0;
          break;
        case 8:
          m.has_filenames = w.Scalar(t) != 0;
          break;
        case 9:
          m.has_line_numbers = w.Scalar(t) != 0;
          break;
        case 10:
          m.has_inline_frames = w.Scalar(t) != 0;
          break;
        default:
          w.Skip(t);
      }
    }
    m.file = Str(file);
    m.build_id = Str(build_id);
    ids.Add(id, static_cast<uint32_t>(out.mappings.size()), "mapping");
    out.mappings.push_back(m);
  }

  void DecodeFunction(std::string_view bytes, Profile& out, IdIndex& ids) const {
    Function f;
    uint64_t id = 0;
    int64_t name = 0, system_name = 0, filename = 0;
    Wire w(bytes);
    while (!w.Done()) {
      auto [field, t] = w.Tag();
      switch (field) {
        case 1:
          id = w.Scalar(t);
          break;
        case 2:
          name = static_cast<int64_t>(w.Scalar(t));
          break;
        case 3:
          system_name = static_cast<int64_t>(w.Scalar(t));
          break;
        case 4:
          filename = static_cast<int64_t>(w.Scalar(t));
          break;
        case 5:
          f.start_line = static_cast<int64_t>(w.Scalar(t));
          break;
        default:
          w.Skip(t);
      }
    }
    f.name = Str(name);
    f.system_name = Str(system_name);
    f.filename = Str(filename);
    ids.Add(id, static_cast<uint32_t>(out.functions.size()), "function");
    out.functions.push_back(f);
  }

  void DecodeLocation(std::string_view bytes, Profile& out, const IdIndex& mappings,
                      const IdIndex& functions, IdIndex& ids) const {
    Location l;
    uint64_t id = 0, mapping_id = 0;
    l.lines_at = static_cast<uint32_t>(out.lines.size());
    Wire w(bytes);
    while (!w.Done()) {
      auto [field, t] = w.Tag();
      switch (field) {
        case 1:
          id = w.Scalar(t);
          break;
        case 2:
          mapping_id = w.Scalar(t);
          break;
        case 3:
          l.address = w.Scalar(t);
          break;
        case 4: {
          if (t != 2) throw Malformed("a line is not length-delimited");
          out.lines.push_back(DecodeLine(w.Bytes(), functions));
          break;
        }
        case 5:
          l.is_folded = w.Scalar(t) != 0;
          break;
        default:
          w.Skip(t);
      }
    }
    l.lines = static_cast<uint32_t>(out.lines.size()) - l.lines_at;
    if (mapping_id != 0) l.mapping = mappings.Find(mapping_id, "mapping");
    ids.Add(id, static_cast<uint32_t>(out.locations.size()), "location");
    out.locations.push_back(l);
  }

  static Line DecodeLine(std::string_view bytes, const IdIndex& functions) {
    Line line;
    uint64_t function_id = 0;
    Wire w(bytes);
    while (!w.Done()) {
      auto [field, t] = w.Tag();
      if (field == 1) {
        function_id = w.Scalar(t);
      } else if (field == 2) {
        line.line = static_cast<int64_t>(w.Scalar(t));
      } else {
        w.Skip(t);
      }
    }
    if (function_id != 0) line.function = functions.Find(function_id, "function");
    return line;
  }

  void DecodeSample(std::string_view bytes, Profile& out, const IdIndex& locations,
                    std::vector<Label>& labels, bool negate) const {
    Sample s;
    s.locs_at = static_cast<uint32_t>(out.locs.size());
    const size_t values_at = out.values.size();
    labels.clear();
    Wire w(bytes);
    while (!w.Done()) {
      auto [field, t] = w.Tag();
      switch (field) {
        case 1:
          w.Repeated(t, [&](uint64_t id) { out.locs.push_back(locations.Find(id, "location")); });
          break;
        case 2:
          w.Repeated(t, [&](uint64_t v) {
            const int64_t value = static_cast<int64_t>(v);
            out.values.push_back(negate ? GoNegate(value) : value);
          });
          break;
        case 3:
          if (t != 2) throw Malformed("a label is not length-delimited");
          DecodeLabel(w.Bytes(), labels);
          break;
        default:
          w.Skip(t);
      }
    }
    s.locs = static_cast<uint32_t>(out.locs.size()) - s.locs_at;
    if (out.values.size() - values_at != out.sample_types.size()) {
      throw Error(ErrorKind::kMalformed, "profile: a sample has ", out.values.size() - values_at,
                  " values for ", out.sample_types.size(), " sample types");
    }
    s.labels = sets_.Intern(labels);
    out.samples.push_back(s);
  }

  // internal/profile's decoder: a string label if str is set, else a
  // numeric one if num or its unit is set, else none.
  void DecodeLabel(std::string_view bytes, std::vector<Label>& labels) const {
    int64_t key = 0, str = 0, num = 0, unit = 0;
    Wire w(bytes);
    while (!w.Done()) {
      auto [field, t] = w.Tag();
      switch (field) {
        case 1:
          key = static_cast<int64_t>(w.Scalar(t));
          break;
        case 2:
          str = static_cast<int64_t>(w.Scalar(t));
          break;
        case 3:
          num = static_cast<int64_t>(w.Scalar(t));
          break;
        case 4:
          unit = static_cast<int64_t>(w.Scalar(t));
          break;
        default:
          w.Skip(t);
      }
    }
    Label l;
    l.key = Str(key);
    if (str != 0) {
      l.is_str = true;
      l.str = Str(str);
    } else if (num != 0 || unit != 0) {
      l.num = num;
      if (unit != 0) {
        l.unit = Str(unit);
        l.has_unit = true;
      }
    } else {
      return;
    }
    labels.push_back(l);
  }

  std::string_view bytes_;
  LabelSets& sets_;
  std::vector<std::string_view> strings_, sample_types_, period_types_, sample_msgs_, mapping_msgs_,
      location_msgs_, function_msgs_;
  std::vector<int64_t> comments_;
  int64_t drop_frames_ = 0, keep_frames_ = 0, time_nanos_ = 0, duration_nanos_ = 0, period_ = 0,
          default_sample_type_ = 0;
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
