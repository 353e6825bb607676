// GrowthCollector::AddSerialized: a heap profile read straight from its
// serialized bytes into the collector, without a pb::Profile. Only the
// fields a site needs are decoded (sample values and location ids, the
// locations' addresses and lines, the functions' names, files and start
// lines, the string table, the first mapping, time_nanos and period);
// strings stay views into the bytes until a location is new to the
// collector. Labels, comments and the alloc_* values are skipped. The result
// is what Add gives for the same profile (tests/unit/growth_decode_test.cc
// checks it on real profiles).
#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "pprof/growth/sites.h"
#include "pprof/hash_index.h"
#include "pprof/proto_wire.h"

namespace goheap2pprof {

namespace {

constexpr uint32_t kNoIndex = UINT32_MAX;
// Wire types. A field of a known number but another wire type is an
// unknown field to protobuf, skipped, and so it is here.
constexpr int kVarint = 0;
constexpr int kLengthDelimited = 2;

// The top-level fields of a profile: the repeated messages as views, to be
// decoded on demand once the string table (which may come last) is known.
struct Fields {
  std::vector<std::pair<int64_t, int64_t>> sample_types;  // type, unit
  std::vector<std::string_view> samples, locations, functions, strings;
  std::string_view first_mapping;
  bool has_mapping = false;
  int64_t time_nanos = 0, period = 0;
};

Fields Split(std::string_view bytes) {
  Fields f;
  ProtoWire w(bytes);
  while (!w.Done()) {
    const auto [field, type] = w.Tag();
    if (type != kLengthDelimited || field < 1 || field > 6) {
      if (field == 9 && type == kVarint) {
        f.time_nanos = static_cast<int64_t>(w.Varint());
      } else if (field == 12 && type == kVarint) {
        f.period = static_cast<int64_t>(w.Varint());
      } else {
        w.Skip(type);
      }
      continue;
    }
    const std::string_view m = w.Bytes();
    switch (field) {
      case 1: {
        std::pair<int64_t, int64_t> vt{0, 0};
        ProtoWire t(m);
        while (!t.Done()) {
          const auto [n, ty] = t.Tag();
          if (n == 1 && ty == kVarint) {
            vt.first = static_cast<int64_t>(t.Varint());
          } else if (n == 2 && ty == kVarint) {
            vt.second = static_cast<int64_t>(t.Varint());
          } else {
            t.Skip(ty);
          }
        }
        f.sample_types.push_back(vt);
        break;
      }
      case 2:
        f.samples.push_back(m);
        break;
      case 3:
        if (!f.has_mapping) f.first_mapping = m;
        f.has_mapping = true;
        break;
      case 4:
        f.locations.push_back(m);
        break;
      case 5:
        f.functions.push_back(m);
        break;
      case 6:
        f.strings.push_back(m);
        break;
    }
  }
  return f;
}

// The `id` field (1) of a location or function message as protobuf reads
// it: the last one, 0 when absent.
uint64_t MessageId(std::string_view m) {
  uint64_t id = 0;
  ProtoWire w(m);
  while (!w.Done()) {
    const auto [n, type] = w.Tag();
    if (n == 1 && type == kVarint) {
      id = w.Varint();
    } else {
      w.Skip(type);
    }
  }
  return id;
}

// Ids to indexes: a table when the ids are about as dense as the runtime
// and goheap2pprof write them (1..N), a hash map otherwise. The last of
// duplicate ids wins, as in ProfileView.
class DenseIdIndex {
 public:
  explicit DenseIdIndex(const std::vector<std::string_view>& messages) {
    std::vector<uint64_t> ids;
    ids.reserve(messages.size());
    uint64_t max = 0;
    for (std::string_view m : messages) {
      ids.push_back(MessageId(m));
      max = std::max(max, ids.back());
    }
    dense_ = max <= 4 * static_cast<uint64_t>(ids.size()) + 1024;
    if (dense_) table_.assign(max + 1, kNoIndex);
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto index = static_cast<uint32_t>(i);
      if (dense_) {
        table_[ids[i]] = index;
      } else {
        map_[ids[i]] = index;
      }
    }
  }
  // kNoIndex when absent.
  uint32_t Find(uint64_t id) const {
    if (dense_) return id < table_.size() ? table_[id] : kNoIndex;
    const auto it = map_.find(id);
    return it == map_.end() ? kNoIndex : it->second;
  }

 private:
  bool dense_ = true;
  std::vector<uint32_t> table_;
  std::unordered_map<uint64_t, uint32_t> map_;
};

struct FunctionFields {
  int64_t name = 0, filename = 0, start_line = 0;
};

FunctionFields DecodeFunction(std::string_view m) {
  FunctionFields f;
  ProtoWire w(m);
  while (!w.Done()) {
    const auto [n, type] = w.Tag();
    if (n == 2 && type == kVarint) {
      f.name = static_cast<int64_t>(w.Varint());
    } else if (n == 4 && type == kVarint) {
      f.filename = static_cast<int64_t>(w.Varint());
    } else if (n == 5 && type == kVarint) {
      f.start_line = static_cast<int64_t>(w.Varint());
    } else {
      w.Skip(type);
    }
  }
  return f;
}

struct LineFields {
  uint64_t function_id = 0;
  int64_t line = 0;
};

// The profile being added: its fields, indexes and the locations already
// matched to the collector's.
class GrowthDecoder {
 public:
  explicit GrowthDecoder(std::string_view bytes)
      : f_(Split(bytes)), locations_(f_.locations), functions_(f_.functions) {
    ours_.assign(f_.locations.size(), kNoIndex);
  }

  const Fields& fields() const { return f_; }

  std::string_view Str(int64_t i) const {
    if (i < 0 || static_cast<uint64_t>(i) >= f_.strings.size()) {
      throw Error(ErrorKind::kMalformed, "profile: string index ", i, " out of range (",
                  f_.strings.size(), " strings)");
    }
    return f_.strings[static_cast<size_t>(i)];
  }

  // The sample type's index, or -1.
  int FindType(std::string_view type) const {
    for (size_t i = 0; i < f_.sample_types.size(); ++i) {
      if (Str(f_.sample_types[i].first) == type) return static_cast<int>(i);
    }
    return -1;
  }

  GrowthMapping FirstMapping() const {
    GrowthMapping g;
    int64_t filename = 0, build_id = 0;  // string 0 when absent, as protobuf reads them
    ProtoWire w(f_.first_mapping);
    while (!w.Done()) {
      const auto [n, type] = w.Tag();
      if (n >= 2 && n <= 6 && type == kVarint) {
        const uint64_t v = w.Varint();
        if (n == 2) g.start = v;
        if (n == 3) g.limit = v;
        if (n == 4) g.offset = v;
        if (n == 5) filename = static_cast<int64_t>(v);
        if (n == 6) build_id = static_cast<int64_t>(v);
      } else {
        w.Skip(type);
      }
    }
    g.filename = Str(filename);
    g.build_id = Str(build_id);
    return g;
  }

  // The location `id` as `intern` (GrowthCollector's) names it; kNoIndex when
  // the profile has no such location.
  template <typename Intern>
  uint32_t Location(uint64_t id, Intern intern) {
    const uint32_t at = locations_.Find(id);
    if (at == kNoIndex) return kNoIndex;
    if (ours_[at] == kNoIndex) ours_[at] = DecodeLocation(f_.locations[at], intern);
    return ours_[at];
  }

 private:
  template <typename Intern>
  uint32_t DecodeLocation(std::string_view m, Intern intern) {
    uint64_t address = 0;
    lines_.clear();
    ProtoWire w(m);
    while (!w.Done()) {
      const auto [n, type] = w.Tag();
      if (n == 3 && type == kVarint) {
        address = w.Varint();
      } else if (n == 4 && type == kLengthDelimited) {
        lines_.push_back(DecodeLine(w.Bytes()));
      } else {
        w.Skip(type);
      }
    }
    // A line whose function is missing is left out, as Add leaves it out.
    std::erase_if(lines_,
                  [&](const LineFields& l) { return functions_.Find(l.function_id) == kNoIndex; });
    key_.clear();
    for (const LineFields& l : lines_) {
      const FunctionFields fn = FunctionOf(l);
      AppendLineKey(key_, Str(fn.name), Str(fn.filename), l.line);
    }
    if (lines_.empty()) SetAddressKey(key_, address);
    return intern(key_, [&] {
      GrowthLocation g{.address = address, .lines = {}};
      for (const LineFields& l : lines_) {
        const FunctionFields fn = FunctionOf(l);
        g.lines.push_back(
            {std::string(Str(fn.name)), std::string(Str(fn.filename)), l.line, fn.start_line});
      }
      return g;
    });
  }

  static LineFields DecodeLine(std::string_view m) {
    LineFields l;
    ProtoWire w(m);
    while (!w.Done()) {
      const auto [n, type] = w.Tag();
      if (n == 1 && type == kVarint) {
        l.function_id = w.Varint();
      } else if (n == 2 && type == kVarint) {
        l.line = static_cast<int64_t>(w.Varint());
      } else {
        w.Skip(type);
      }
    }
    return l;
  }

  FunctionFields FunctionOf(const LineFields& l) const {
    return DecodeFunction(f_.functions[functions_.Find(l.function_id)]);
  }

  Fields f_;
  DenseIdIndex locations_, functions_;
  std::vector<uint32_t> ours_;  // per location of the profile: the collector's, or kNoIndex
  std::vector<LineFields> lines_;
  std::string key_;
};

// A packed varint field's values, appended to `out`.
void AppendPacked(std::string_view packed, std::vector<uint64_t>& out) {
  ProtoWire w(packed);
  while (!w.Done()) out.push_back(w.Varint());
}

// One sample's location ids: the bytes of its one packed location_id field
// while that is all it has (as the runtime and goheap2pprof write it), so
// that a stack seen before in the profile is found by its bytes without
// decoding them; decoded, in `ids`, for any other encoding.
struct SampleIds {
  std::string_view packed;
  bool decoded = false;
};

// One sample's location ids and values, into reused vectors.
SampleIds DecodeSample(std::string_view m, std::vector<uint64_t>& ids,
                       std::vector<int64_t>& values) {
  ids.clear();
  values.clear();
  SampleIds s;
  bool seen = false;
  ProtoWire w(m);
  while (!w.Done()) {
    const auto [n, type] = w.Tag();
    const bool number = type == kVarint || type == kLengthDelimited;
    if (n == 1 && number) {
      if (!seen && type == kLengthDelimited) {
        s.packed = w.Bytes();
      } else {
        // A second location_id field, or an unpacked one: decode them all.
        if (!s.decoded) AppendPacked(s.packed, ids);
        s.decoded = true;
        w.Repeated(type, [&](uint64_t v) { ids.push_back(v); });
      }
      seen = true;
    } else if (n == 2 && number) {
      w.Repeated(type, [&](uint64_t v) { values.push_back(static_cast<int64_t>(v)); });
    } else {
      w.Skip(type);
    }
  }
  return s;
}

// The sites of the stacks of the profile being added, by their packed
// bytes: a site has a sample per object size, so most samples of a profile
// repeat a stack, and finding it by its bytes skips decoding its ids,
// mapping them to the collector's locations and looking the site up (three
// quarters of the report's CPU time went to those, perf over 100 profiles
// of 100k samples). Equal bytes are equal ids; the bytes of a
// non-canonical varint are only a miss, resolved by the ids.
struct StackMemo {
  HashIndex index;
  std::vector<std::string_view> keys;
  std::vector<uint32_t> sites;
};

}  // namespace

bool GrowthCollector::AddSerialized(std::string_view bytes, std::string name,
                                    std::optional<uint32_t> cycle) {
  try {
    GrowthDecoder d(bytes);
    if (d.FindType("inuse_space_per_hour") >= 0) return false;
    const int objects_at = d.FindType("inuse_objects");
    const int bytes_at = d.FindType("inuse_space");
    if (objects_at < 0 || bytes_at < 0) {
      throw Error(ErrorKind::kMalformed,
                  "not a heap profile (no inuse_objects and inuse_space sample types)");
    }
    const Fields& f = d.fields();
    std::string build_id;
    if (f.has_mapping) {
      GrowthMapping m = d.FirstMapping();
      build_id = m.build_id;
      SetMainMapping(std::move(m));
    }
    const auto snap = static_cast<uint32_t>(data_.snapshots.size());
    GrowthSnapshot s{.name = name,
                     .time_nanos = f.time_nanos,
                     .rate = f.period,
                     .inuse_bytes = 0,
                     .inuse_objects = 0,
                     .build_id = std::move(build_id),
                     .cycle = cycle};
    const auto intern = [this](std::string_view key, auto make) {
      return InternLocation(key, make);
    };
    std::vector<uint64_t> ids;
    std::vector<int64_t> values;
    std::vector<uint32_t> stack;
    StackMemo memo;
    // The site of the sample's ids (in `ids`).
    const auto site_of_ids = [&] {
      stack.clear();
      for (uint64_t id : ids) {
        const uint32_t ours = d.Location(id, intern);
        if (ours == kNoIndex) {
          throw Error(ErrorKind::kMalformed, "a sample refers to missing location ", id);
        }
        stack.push_back(ours);
      }
      return InternSite(stack);
    };
    for (std::string_view sample : f.samples) {
      const SampleIds raw = DecodeSample(sample, ids, values);
      if (values.size() <= static_cast<size_t>(std::max(objects_at, bytes_at))) {
        throw Error(ErrorKind::kMalformed, "a sample has ", values.size(), " values for ",
                    f.sample_types.size(), " sample types");
      }
      const int64_t objects = values[objects_at], inuse = values[bytes_at];
      if (objects == 0 && inuse == 0) {
        // Skipped, but its ids must still be well-formed, as in Add's parse.
        if (!raw.decoded) AppendPacked(raw.packed, ids);
        continue;
      }
      uint32_t site = 0;
      if (raw.decoded) {
        site = site_of_ids();
      } else {
        const auto next = static_cast<uint32_t>(memo.keys.size());
        const uint32_t at = memo.index.FindOrInsert(
            raw.packed, next, [&](uint32_t entry) { return memo.keys[entry]; });
        if (at == next) {
          memo.keys.push_back(raw.packed);
          AppendPacked(raw.packed, ids);
          memo.sites.push_back(site_of_ids());
        }
        site = memo.sites[at];
      }
      AddSample(s, snap, site, objects, inuse);
    }
    data_.snapshots.push_back(std::move(s));
    return true;
  } catch (const Error& e) {
    // A profile that failed half way adds nothing: its points go, so that a
    // caller that goes on with other profiles has no point of a snapshot
    // that does not exist. (Sites it made stay, with no points.)
    const auto snap = static_cast<uint32_t>(data_.snapshots.size());
    for (GrowthSite& site : data_.sites) {
      if (!site.points.empty() && site.points.back().snapshot == snap) site.points.pop_back();
    }
    throw Error(ErrorKind::kMalformed, name, ": ", e.what());
  }
}

}  // namespace goheap2pprof
