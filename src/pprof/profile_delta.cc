#include "pprof/profile_delta.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"

namespace goheap2pprof {
namespace {

// Go's internal/profile model, with strings resolved, indexes instead of
// pointers and ids. Only what merging reads is kept.
struct Mapping {
  uint64_t start = 0, limit = 0, offset = 0;
  std::string file, build_id;
  bool has_functions = false, has_filenames = false, has_line_numbers = false,
       has_inline_frames = false;
};
struct Function {
  std::string name, system_name, filename;
  int64_t start_line = 0;
};
struct Line {
  std::optional<size_t> function;
  int64_t line = 0;
};
struct Location {
  std::optional<size_t> mapping;
  uint64_t address = 0;
  std::vector<Line> lines;
  bool is_folded = false;
};
struct NumLabel {
  std::vector<int64_t> values;
  std::vector<std::string> units;
};
struct Sample {
  std::vector<size_t> locations;
  std::vector<int64_t> values;
  std::map<std::string, std::vector<std::string>> labels;
  std::map<std::string, NumLabel> num_labels;
};
struct ValueType {
  std::string type, unit;
  bool operator==(const ValueType&) const = default;
};
struct Profile {
  std::vector<ValueType> sample_types;
  ValueType period_type;
  int64_t period = 0, time_nanos = 0, duration_nanos = 0;
  int64_t drop_frames = 0, keep_frames = 0;  // string indexes resolved below
  std::string drop_frames_text, keep_frames_text;
  std::vector<std::string> comments;
  std::string default_sample_type;
  std::vector<Mapping> mappings;
  std::vector<Location> locations;
  std::vector<Function> functions;
  std::vector<Sample> samples;
};

class Decoder {
 public:
  explicit Decoder(const pb::Profile& p) : p_(p) {}

  Profile Decode() {
    Profile out;
    for (const pb::ValueType& vt : p_.sample_type()) out.sample_types.push_back(Vt(vt));
    out.period_type = Vt(p_.period_type());
    out.period = p_.period();
    out.time_nanos = p_.time_nanos();
    out.duration_nanos = p_.duration_nanos();
    out.drop_frames_text = Str(p_.drop_frames());
    out.keep_frames_text = Str(p_.keep_frames());
    for (int64_t c : p_.comment()) out.comments.push_back(Str(c));
    out.default_sample_type = Str(p_.default_sample_type());

    std::unordered_map<uint64_t, size_t> mapping_index, function_index, location_index;
    for (const pb::Mapping& m : p_.mapping()) {
      if (m.id() == 0 || !mapping_index.emplace(m.id(), out.mappings.size()).second) {
        throw Error(ErrorKind::kMalformed, "profile: mapping id ", m.id(), " is 0 or repeated");
      }
      out.mappings.push_back(Mapping{
          m.memory_start(), m.memory_limit(), m.file_offset(), Str(m.filename()), Str(m.build_id()),
          m.has_functions(), m.has_filenames(), m.has_line_numbers(), m.has_inline_frames()});
    }
    for (const pb::Function& f : p_.function()) {
      if (f.id() == 0 || !function_index.emplace(f.id(), out.functions.size()).second) {
        throw Error(ErrorKind::kMalformed, "profile: function id ", f.id(), " is 0 or repeated");
      }
      out.functions.push_back(
          Function{Str(f.name()), Str(f.system_name()), Str(f.filename()), f.start_line()});
    }
    for (const pb::Location& l : p_.location()) {
      if (l.id() == 0 || !location_index.emplace(l.id(), out.locations.size()).second) {
        throw Error(ErrorKind::kMalformed, "profile: location id ", l.id(), " is 0 or repeated");
      }
      Location loc;
      if (l.mapping_id() != 0) loc.mapping = Find(mapping_index, l.mapping_id(), "mapping");
      loc.address = l.address();
      loc.is_folded = l.is_folded();
      for (const pb::Line& ln : l.line()) {
        Line line;
        if (ln.function_id() != 0)
          line.function = Find(function_index, ln.function_id(), "function");
        line.line = ln.line();
        loc.lines.push_back(line);
      }
      out.locations.push_back(std::move(loc));
    }
    for (const pb::Sample& s : p_.sample()) {
      Sample sample;
      for (uint64_t id : s.location_id()) {
        sample.locations.push_back(Find(location_index, id, "location"));
      }
      sample.values.assign(s.value().begin(), s.value().end());
      if (sample.values.size() != out.sample_types.size()) {
        throw Error(ErrorKind::kMalformed, "profile: a sample has ", sample.values.size(),
                    " values for ", out.sample_types.size(), " sample types");
      }
      // internal/profile's decoder: a string label if str is set, else a
      // numeric one if num or its unit is set; units padded with "".
      for (const pb::Label& l : s.label()) {
        std::string key = Str(l.key());
        if (l.str() != 0) {
          sample.labels[key].push_back(Str(l.str()));
        } else if (l.num() != 0 || l.num_unit() != 0) {
          NumLabel& nl = sample.num_labels[key];
          if (l.num_unit() != 0) {
            nl.units.resize(nl.values.size());
            nl.units.push_back(Str(l.num_unit()));
          }
          nl.values.push_back(l.num());
        }
      }
      out.samples.push_back(std::move(sample));
    }
    return out;
  }

 private:
  std::string Str(int64_t i) const {
    if (i < 0 || i >= p_.string_table_size()) {
      throw Error(ErrorKind::kMalformed, "profile: string index ", i, " out of range");
    }
    return p_.string_table(static_cast<int>(i));
  }
  ValueType Vt(const pb::ValueType& vt) const { return {Str(vt.type()), Str(vt.unit())}; }
  static size_t Find(const std::unordered_map<uint64_t, size_t>& index, uint64_t id,
                     const char* what) {
    auto it = index.find(id);
    if (it == index.end())
      throw Error(ErrorKind::kMalformed, "profile: no ", what, " with id ", id);
    return it->second;
  }

  const pb::Profile& p_;
};

bool IsZero(const Sample& s) {
  return std::all_of(s.values.begin(), s.values.end(), [](int64_t v) { return v == 0; });
}

int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// merge.go's profileMerger.
class Merger {
 public:
  Profile Merge(const std::vector<const Profile*>& srcs) {
    CombineHeaders(srcs);
    for (const Profile* src : srcs) {
      src_ = src;
      mappings_by_src_.assign(src->mappings.size(), std::nullopt);
      functions_by_src_.assign(src->functions.size(), std::nullopt);
      locations_by_src_.assign(src->locations.size(), std::nullopt);
      // The first mapping is the main binary: take it first.
      if (out_.mappings.empty() && !src->mappings.empty()) MapMapping(0);
      for (const Sample& s : src->samples) {
        if (!IsZero(s)) MapSample(s);
      }
    }
    return std::move(out_);
  }

 private:
  struct MapInfo {
    size_t index;
    int64_t offset;
  };
  using MappingKey = std::tuple<uint64_t, uint64_t, std::string>;
  using LocationKey = std::tuple<uint64_t, std::optional<size_t>,
                                 std::vector<std::pair<std::optional<size_t>, int64_t>>, bool>;
  using FunctionKey = std::tuple<int64_t, std::string, std::string, std::string>;
  using SampleKey =
      std::tuple<std::vector<size_t>, std::map<std::string, std::vector<std::string>>,
                 std::map<std::string, std::pair<std::vector<int64_t>, std::vector<std::string>>>>;

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
    out_.drop_frames_text = first.drop_frames_text;
    out_.keep_frames_text = first.keep_frames_text;
    for (const Profile* s : srcs) {
      if (out_.time_nanos == 0 || s->time_nanos < out_.time_nanos) out_.time_nanos = s->time_nanos;
      out_.duration_nanos = WrapAdd(out_.duration_nanos, s->duration_nanos);
      if (out_.period == 0 || out_.period < s->period) out_.period = s->period;
      for (const std::string& c : s->comments) {
        if (std::find(out_.comments.begin(), out_.comments.end(), c) == out_.comments.end()) {
          out_.comments.push_back(c);
        }
      }
      if (out_.default_sample_type.empty()) out_.default_sample_type = s->default_sample_type;
    }
  }

  MapInfo MapMapping(size_t src_index) {
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
      mi = {out_.mappings.size(), 0};
      out_.mappings.push_back(m);
      mappings_.emplace(std::move(key), mi.index);
    }
    mappings_by_src_[src_index] = mi;
    return mi;
  }

  size_t MapFunction(size_t src_index) {
    if (functions_by_src_[src_index]) return *functions_by_src_[src_index];
    const Function& f = src_->functions[src_index];
    FunctionKey key{f.start_line, f.name, f.system_name, f.filename};
    size_t index;
    if (auto it = functions_.find(key); it != functions_.end()) {
      index = it->second;
    } else {
      index = out_.functions.size();
      out_.functions.push_back(f);
      functions_.emplace(std::move(key), index);
    }
    functions_by_src_[src_index] = index;
    return index;
  }

  size_t MapLocation(size_t src_index) {
    if (locations_by_src_[src_index]) return *locations_by_src_[src_index];
    const Location& src = src_->locations[src_index];
    Location l;
    int64_t offset = 0;
    if (src.mapping) {
      MapInfo mi = MapMapping(*src.mapping);
      l.mapping = mi.index;
      offset = mi.offset;
    }
    l.address = static_cast<uint64_t>(static_cast<int64_t>(src.address) + offset);
    l.is_folded = src.is_folded;
    for (const Line& ln : src.lines) {
      Line out_line;
      if (ln.function) out_line.function = MapFunction(*ln.function);
      out_line.line = ln.line;
      l.lines.push_back(out_line);
    }
    // Location.key(): the address relative to its mapping, the mapping, the
    // (function, line) pairs and the folding flag.
    uint64_t key_addr = l.address;
    if (l.mapping) key_addr -= out_.mappings[*l.mapping].start;
    std::vector<std::pair<std::optional<size_t>, int64_t>> lines;
    for (const Line& ln : l.lines) lines.emplace_back(ln.function, ln.line);
    LocationKey key{key_addr, l.mapping, std::move(lines), l.is_folded};
    size_t index;
    if (auto it = locations_.find(key); it != locations_.end()) {
      index = it->second;
    } else {
      index = out_.locations.size();
      out_.locations.push_back(std::move(l));
      locations_.emplace(std::move(key), index);
    }
    locations_by_src_[src_index] = index;
    return index;
  }

  void MapSample(const Sample& src) {
    Sample s;
    for (size_t l : src.locations) s.locations.push_back(MapLocation(l));
    s.labels = src.labels;
    s.num_labels = src.num_labels;
    std::map<std::string, std::pair<std::vector<int64_t>, std::vector<std::string>>> nums;
    for (const auto& [k, nl] : s.num_labels) nums[k] = {nl.values, nl.units};
    SampleKey key{s.locations, s.labels, std::move(nums)};
    if (auto it = samples_.find(key); it != samples_.end()) {
      std::vector<int64_t>& values = out_.samples[it->second].values;
      for (size_t i = 0; i < values.size() && i < src.values.size(); ++i) {
        values[i] = WrapAdd(values[i], src.values[i]);
      }
      return;
    }
    s.values = src.values;
    samples_.emplace(std::move(key), out_.samples.size());
    out_.samples.push_back(std::move(s));
  }

  Profile out_;
  const Profile* src_ = nullptr;
  std::vector<std::optional<MapInfo>> mappings_by_src_;
  std::vector<std::optional<size_t>> functions_by_src_;
  std::vector<std::optional<size_t>> locations_by_src_;
  std::map<MappingKey, size_t> mappings_;
  std::map<LocationKey, size_t> locations_;
  std::map<FunctionKey, size_t> functions_;
  std::map<SampleKey, size_t> samples_;
};

// Go's Merge: merge, and merge again while zero samples remain (a second
// pass drops them and whatever only they referenced).
Profile GoMerge(const std::vector<const Profile*>& srcs) {
  Profile merged = Merger().Merge(srcs);
  if (std::any_of(merged.samples.begin(), merged.samples.end(), IsZero)) {
    return Merger().Merge({&merged});
  }
  return merged;
}

class Encoder {
 public:
  pb::Profile Encode(const Profile& p) {
    Str("");
    pb::Profile out;
    for (const ValueType& vt : p.sample_types) SetVt(*out.add_sample_type(), vt);
    for (const Sample& s : p.samples) {
      pb::Sample* ps = out.add_sample();
      for (size_t l : s.locations) ps->add_location_id(l + 1);
      for (int64_t v : s.values) ps->add_value(v);
      for (const auto& [k, values] : s.labels) {
        for (const std::string& v : values) {
          pb::Label* l = ps->add_label();
          l->set_key(Str(k));
          l->set_str(Str(v));
        }
      }
      for (const auto& [k, nl] : s.num_labels) {
        for (size_t i = 0; i < nl.values.size(); ++i) {
          pb::Label* l = ps->add_label();
          l->set_key(Str(k));
          l->set_num(nl.values[i]);
          if (i < nl.units.size() && !nl.units[i].empty()) l->set_num_unit(Str(nl.units[i]));
        }
      }
    }
    for (size_t i = 0; i < p.mappings.size(); ++i) {
      const Mapping& m = p.mappings[i];
      pb::Mapping* pm = out.add_mapping();
      pm->set_id(i + 1);
      pm->set_memory_start(m.start);
      pm->set_memory_limit(m.limit);
      pm->set_file_offset(m.offset);
      pm->set_filename(Str(m.file));
      pm->set_build_id(Str(m.build_id));
      pm->set_has_functions(m.has_functions);
      pm->set_has_filenames(m.has_filenames);
      pm->set_has_line_numbers(m.has_line_numbers);
      pm->set_has_inline_frames(m.has_inline_frames);
    }
    for (size_t i = 0; i < p.locations.size(); ++i) {
      const Location& l = p.locations[i];
      pb::Location* pl = out.add_location();
      pl->set_id(i + 1);
      if (l.mapping) pl->set_mapping_id(*l.mapping + 1);
      pl->set_address(l.address);
      pl->set_is_folded(l.is_folded);
      for (const Line& ln : l.lines) {
        pb::Line* pln = pl->add_line();
        if (ln.function) pln->set_function_id(*ln.function + 1);
        pln->set_line(ln.line);
      }
    }
    for (size_t i = 0; i < p.functions.size(); ++i) {
      const Function& f = p.functions[i];
      pb::Function* pf = out.add_function();
      pf->set_id(i + 1);
      pf->set_name(Str(f.name));
      pf->set_system_name(Str(f.system_name));
      pf->set_filename(Str(f.filename));
      pf->set_start_line(f.start_line);
    }
    out.set_drop_frames(Str(p.drop_frames_text));
    out.set_keep_frames(Str(p.keep_frames_text));
    out.set_time_nanos(p.time_nanos);
    out.set_duration_nanos(p.duration_nanos);
    SetVt(*out.mutable_period_type(), p.period_type);
    out.set_period(p.period);
    for (const std::string& c : p.comments) out.add_comment(Str(c));
    out.set_default_sample_type(Str(p.default_sample_type));
    for (const std::string& s : strings_) out.add_string_table(s);
    return out;
  }

 private:
  int64_t Str(const std::string& s) {
    auto [it, inserted] = index_.emplace(s, static_cast<int64_t>(strings_.size()));
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  void SetVt(pb::ValueType& out, const ValueType& vt) {
    out.set_type(Str(vt.type));
    out.set_unit(Str(vt.unit));
  }
  std::unordered_map<std::string, int64_t> index_;
  std::vector<std::string> strings_;
};

}  // namespace

int64_t GoNegate(int64_t v) {
  double d = -static_cast<double>(v);
  // Go's float64 -> int64 conversion of an out-of-range value is
  // implementation-defined; amd64's CVTTSD2SQ gives INT64_MIN. C++ would be
  // undefined, so that case is spelled out.
  if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(d);
}

pb::Profile DeltaProfile(const pb::Profile& p0, const pb::Profile& p1) {
  Profile a = Decoder(p0).Decode();
  Profile b = Decoder(p1).Decode();
  for (Sample& s : a.samples) {
    for (int64_t& v : s.values) v = GoNegate(v);
  }
  return Encoder().Encode(GoMerge({&a, &b}));
}

}  // namespace goheap2pprof
