// GrowthCollector::AddSerialized: a heap profile read straight from its
// serialized bytes into the collector, without a pb::Profile, by the
// profile decoder (pprof/profile/decode.h) under libprotobuf's rule for
// wire types. Only the fields a site needs are selected (sample values and
// location ids, the locations' addresses and lines, the functions' names,
// files and start lines, the string table, the first mapping, time_nanos
// and period); strings stay views into the bytes until a location is new to
// the collector. Labels, comments and the alloc_* values are skipped. The
// result is what Add gives for the same profile
// (tests/unit/growth_decode_test.cc checks it on real profiles).
#include "pprof/profile/decode.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/hash_index.h"
#include "pprof/growth/sites.h"

namespace goheap2pprof {

namespace {

constexpr uint32_t kNoIndex = IdIndex::kNone;
// A field of a known number but another wire type is an unknown field to
// protobuf, skipped, and so it is here: Add reads what libprotobuf parsed.
constexpr WireTypes kRule = WireTypes::kProtobuf;
constexpr uint32_t kSelected = ProfileField::kSampleType | ProfileField::kSample |
                               ProfileField::kMapping | ProfileField::kLocation |
                               ProfileField::kFunction | ProfileField::kStringTable |
                               ProfileField::kTimeNanos | ProfileField::kPeriod;

std::vector<uint64_t> LocationIds(const std::vector<std::string_view>& locations) {
  std::vector<uint64_t> ids;
  ids.reserve(locations.size());
  for (std::string_view m : locations) ids.push_back(DecodeId(m, kRule));
  return ids;
}

std::vector<FunctionFields> Functions(const std::vector<std::string_view>& functions) {
  std::vector<FunctionFields> out;
  out.reserve(functions.size());
  for (std::string_view m : functions) out.push_back(DecodeFunction(m, kRule));
  return out;
}

std::vector<uint64_t> FunctionIds(const std::vector<FunctionFields>& functions) {
  std::vector<uint64_t> ids;
  ids.reserve(functions.size());
  for (const FunctionFields& f : functions) ids.push_back(f.id);
  return ids;
}

// The profile being added: its fields, indexes and the locations already
// matched to the collector's. The last of duplicate ids wins, as in
// ProfileView.
class GrowthDecoder {
 public:
  explicit GrowthDecoder(std::string_view bytes)
      : f_(DecodeProfile(bytes, kRule, kSelected)),
        functions_(Functions(f_.functions)),
        location_index_(LocationIds(f_.locations), IdIndex::Repeats::kLastWins, "location"),
        function_index_(FunctionIds(functions_), IdIndex::Repeats::kLastWins, "function") {
    ours_.assign(f_.locations.size(), kNoIndex);
  }

  const ProfileFields& fields() const { return f_; }

  // The sample type's index, or -1.
  int FindType(std::string_view type) const {
    for (size_t i = 0; i < f_.sample_types.size(); ++i) {
      ValueTypeFields vt;
      DecodeValueType(f_.sample_types[i], kRule, vt);
      if (f_.Str(vt.type) == type) return static_cast<int>(i);
    }
    return -1;
  }

  std::optional<GrowthMapping> FirstMapping() const {
    if (f_.mappings.empty()) return std::nullopt;
    const MappingFields m = DecodeMapping(f_.mappings[0], kRule);
    return GrowthMapping{.start = m.start,
                         .limit = m.limit,
                         .offset = m.offset,
                         .filename = std::string(f_.Str(m.filename)),
                         .build_id = std::string(f_.Str(m.build_id))};
  }

  // The location `id` as `intern` (GrowthCollector's) names it; kNoIndex when
  // the profile has no such location.
  template <typename Intern>
  uint32_t Location(uint64_t id, Intern intern) {
    const uint32_t at = location_index_.Find(id);
    if (at == kNoIndex) return kNoIndex;
    if (ours_[at] == kNoIndex) ours_[at] = DecodeLocation(f_.locations[at], intern);
    return ours_[at];
  }

 private:
  template <typename Intern>
  uint32_t DecodeLocation(std::string_view m, Intern intern) {
    goheap2pprof::DecodeLocation(m, kRule, location_);
    // A line whose function is missing is left out, as Add leaves it out.
    std::erase_if(location_.lines, [&](const LineFields& l) {
      return function_index_.Find(l.function_id) == kNoIndex;
    });
    key_.clear();
    for (const LineFields& l : location_.lines) {
      const FunctionFields& fn = FunctionOf(l);
      AppendLineKey(key_, f_.Str(fn.name), f_.Str(fn.filename), l.line);
    }
    if (location_.lines.empty()) SetAddressKey(key_, location_.address);
    return intern(key_, [&] {
      GrowthLocation g{.address = location_.address, .lines = {}};
      for (const LineFields& l : location_.lines) {
        const FunctionFields& fn = FunctionOf(l);
        g.lines.push_back({std::string(f_.Str(fn.name)), std::string(f_.Str(fn.filename)), l.line,
                           fn.start_line});
      }
      return g;
    });
  }

  const FunctionFields& FunctionOf(const LineFields& l) const {
    return functions_[function_index_.Find(l.function_id)];
  }

  ProfileFields f_;
  std::vector<FunctionFields> functions_;
  IdIndex location_index_, function_index_;
  std::vector<uint32_t> ours_;  // per location of the profile: the collector's, or kNoIndex
  LocationFields location_;     // reused
  std::string key_;
};

// The sites of the stacks of the profile being added, by their packed
// bytes: a site has a sample per object size, so most samples of a profile
// repeat a stack, and finding it by its bytes skips decoding its ids,
// mapping them to the collector's locations and looking the site up (three
// quarters of the report's CPU time went to those, perf over 100 profiles
// of 100k samples). Equal bytes are equal ids; the bytes of a
// non-canonical varint are only a miss, resolved by the ids.
class StackMemo {
 public:
  // The site of a sample's location ids; site_of_ids(ids) makes it when new.
  template <typename SiteOfIds>
  uint32_t SiteOf(const std::vector<std::string_view>& location_ids, SiteOfIds site_of_ids) {
    if (location_ids.size() != 1) {
      // No location_id field, or several: by the ids.
      return site_of_ids(Ids(location_ids));
    }
    const std::string_view packed = location_ids[0];
    const auto next = static_cast<uint32_t>(keys_.size());
    const uint32_t at =
        index_.FindOrInsert(packed, next, [&](uint32_t entry) { return keys_[entry]; });
    if (at == next) {
      keys_.push_back(packed);
      sites_.push_back(site_of_ids(Ids(location_ids)));
    }
    return sites_[at];
  }

  // The ids of a sample's location_id fields, decoded.
  const std::vector<uint64_t>& Ids(const std::vector<std::string_view>& location_ids) {
    ids_.clear();
    for (std::string_view packed : location_ids) {
      ForEachVarint(packed, [&](uint64_t id) { ids_.push_back(id); });
    }
    return ids_;
  }

 private:
  HashIndex index_;
  std::vector<std::string_view> keys_;
  std::vector<uint32_t> sites_;
  std::vector<uint64_t> ids_;
};

// The indexes of the in-use values, or Error(kMalformed) for a profile
// that is not of the heap.
std::pair<size_t, size_t> InuseValues(const GrowthDecoder& d) {
  const int objects_at = d.FindType("inuse_objects");
  const int bytes_at = d.FindType("inuse_space");
  if (objects_at < 0 || bytes_at < 0) {
    throw Error(ErrorKind::kMalformed,
                "not a heap profile (no inuse_objects and inuse_space sample types)");
  }
  return {static_cast<size_t>(objects_at), static_cast<size_t>(bytes_at)};
}

// A sample's in-use objects and bytes, at their indexes in its values.
std::pair<int64_t, int64_t> Inuse(const SampleFields& sample, std::pair<size_t, size_t> at,
                                  size_t sample_types) {
  if (sample.values.size() <= std::max(at.first, at.second)) {
    throw Error(ErrorKind::kMalformed, "a sample has ", sample.values.size(), " values for ",
                sample_types, " sample types");
  }
  return {static_cast<int64_t>(sample.values[at.first]),
          static_cast<int64_t>(sample.values[at.second])};
}

GrowthSnapshot EmptySnapshot(const ProfileFields& f, const std::string& name,
                             std::optional<uint32_t> cycle) {
  return GrowthSnapshot{.name = name,
                        .time_nanos = f.time_nanos,
                        .rate = f.period,
                        .inuse_bytes = 0,
                        .inuse_objects = 0,
                        .build_id = {},
                        .cycle = cycle};
}

}  // namespace

bool GrowthCollector::AddSerialized(std::string_view bytes, std::string name,
                                    std::optional<uint32_t> cycle) {
  try {
    GrowthDecoder d(bytes);
    if (d.FindType("inuse_space_per_hour") >= 0) return false;
    const std::pair<size_t, size_t> inuse_at = InuseValues(d);
    GrowthSnapshot s = EmptySnapshot(d.fields(), name, cycle);
    if (std::optional<GrowthMapping> m = d.FirstMapping()) {
      s.build_id = m->build_id;
      SetMainMapping(std::move(*m));
    }
    const auto snap = static_cast<uint32_t>(data_.snapshots.size());
    const auto intern = [this](std::string_view key, auto make) {
      return InternLocation(key, make);
    };
    std::vector<uint32_t> stack;
    const auto site_of_ids = [&](const std::vector<uint64_t>& ids) {
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
    StackMemo memo;
    SampleFields sample;
    for (std::string_view m : d.fields().samples) {
      DecodeSample(m, kRule, /*labels=*/false, sample);
      const auto [objects, inuse] = Inuse(sample, inuse_at, d.fields().sample_types.size());
      if (objects == 0 && inuse == 0) {
        memo.Ids(sample.location_ids);  // skipped, but its ids must be well-formed, as for Add
        continue;
      }
      AddSample(s, snap, memo.SiteOf(sample.location_ids, site_of_ids), objects, inuse);
    }
    data_.snapshots.push_back(std::move(s));
    return true;
  } catch (const Error& e) {
    // A documented rollback: a profile that failed half way adds nothing.
    // Its points go, so that a caller that goes on with other profiles has
    // no point of a snapshot that does not exist. (Sites it made stay, with
    // no points.)
    const auto snap = static_cast<uint32_t>(data_.snapshots.size());
    for (GrowthSite& site : data_.sites) {
      if (!site.points.empty() && site.points.back().snapshot == snap) site.points.pop_back();
    }
    throw Error(ErrorKind::kMalformed, name, ": ", e.what());
  }
}

}  // namespace goheap2pprof
