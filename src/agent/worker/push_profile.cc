#include "agent/worker/push_profile.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "agent/worker/wire_codec.h"
#include "base/error.h"
#include "pprof/output.h"

namespace goheap2pprof {
namespace {

// Renumbers ids and strings while copying; every reference is checked.
class Compactor {
 public:
  explicit Compactor(const pb::Profile& source) : src_(source) {
    for (int i = 0; i < src_.mapping_size(); ++i) mapping_index_[src_.mapping(i).id()] = i;
    for (int i = 0; i < src_.location_size(); ++i) location_index_[src_.location(i).id()] = i;
    for (int i = 0; i < src_.function_size(); ++i) function_index_[src_.function(i).id()] = i;
    out_.add_string_table("");
    strings_.emplace("", 0);
  }

  pb::Profile Run(const std::vector<pb::Sample>& samples,
                  const std::vector<std::string>& extra_comments = {}) {
    const Used used = MarkUsed(samples);
    for (const pb::ValueType& t : src_.sample_type()) CopyValueType(t, out_.add_sample_type());
    const NewIds ids = CopyTables(used);
    for (const pb::Sample& s : samples) CopySample(s, ids);
    CopyHeader(extra_comments);
    return std::move(out_);
  }

 private:
  // Which of the source's tables' entries the samples use, by index.
  struct Used {
    std::vector<bool> location, function, mapping;
  };
  // The source's ids of what is copied, to the copies' ids.
  struct NewIds {
    std::unordered_map<uint64_t, uint64_t> mapping, function, location;
  };

  Used MarkUsed(const std::vector<pb::Sample>& samples) const {
    Used used{std::vector<bool>(src_.location_size()), std::vector<bool>(src_.function_size()),
              std::vector<bool>(src_.mapping_size())};
    for (const pb::Sample& s : samples) {
      for (uint64_t id : s.location_id()) used.location[LocationIndex(id)] = true;
    }
    for (int i = 0; i < src_.location_size(); ++i) {
      if (!used.location[i]) continue;
      const pb::Location& l = src_.location(i);
      if (l.mapping_id() != 0) used.mapping[MappingIndex(l.mapping_id())] = true;
      for (const pb::Line& line : l.line()) {
        if (line.function_id() != 0) used.function[FunctionIndex(line.function_id())] = true;
      }
    }
    return used;
  }

  // Copies what is used in source order, so that ids are 1..N in the order
  // of the source's tables.
  NewIds CopyTables(const Used& used) {
    NewIds ids;
    for (int i = 0; i < src_.mapping_size(); ++i) {
      if (!used.mapping[i]) continue;
      pb::Mapping m = src_.mapping(i);
      ids.mapping[m.id()] = static_cast<uint64_t>(out_.mapping_size()) + 1;
      m.set_id(ids.mapping[m.id()]);
      m.set_filename(Str(m.filename()));
      m.set_build_id(Str(m.build_id()));
      *out_.add_mapping() = std::move(m);
    }
    for (int i = 0; i < src_.function_size(); ++i) {
      if (!used.function[i]) continue;
      pb::Function f = src_.function(i);
      ids.function[f.id()] = static_cast<uint64_t>(out_.function_size()) + 1;
      f.set_id(ids.function[f.id()]);
      f.set_name(Str(f.name()));
      f.set_system_name(Str(f.system_name()));
      f.set_filename(Str(f.filename()));
      *out_.add_function() = std::move(f);
    }
    for (int i = 0; i < src_.location_size(); ++i) {
      if (!used.location[i]) continue;
      pb::Location l = src_.location(i);
      ids.location[l.id()] = static_cast<uint64_t>(out_.location_size()) + 1;
      l.set_id(ids.location[l.id()]);
      if (l.mapping_id() != 0) l.set_mapping_id(ids.mapping.at(l.mapping_id()));
      for (pb::Line& line : *l.mutable_line()) {
        if (line.function_id() != 0) line.set_function_id(ids.function.at(line.function_id()));
      }
      *out_.add_location() = std::move(l);
    }
    return ids;
  }

  void CopySample(const pb::Sample& s, const NewIds& ids) {
    pb::Sample* o = out_.add_sample();
    *o = s;
    for (uint64_t& id : *o->mutable_location_id()) id = ids.location.at(id);
    for (pb::Label& label : *o->mutable_label()) {
      label.set_key(Str(label.key()));
      label.set_str(Str(label.str()));
      label.set_num_unit(Str(label.num_unit()));
    }
  }

  void CopyHeader(const std::vector<std::string>& extra_comments) {
    out_.set_drop_frames(Str(src_.drop_frames()));
    out_.set_keep_frames(Str(src_.keep_frames()));
    out_.set_time_nanos(src_.time_nanos());
    out_.set_duration_nanos(src_.duration_nanos());
    if (src_.has_period_type()) CopyValueType(src_.period_type(), out_.mutable_period_type());
    out_.set_period(src_.period());
    for (int64_t c : src_.comment()) out_.add_comment(Str(c));
    for (const std::string& c : extra_comments) {
      auto [it, added] = strings_.emplace(c, out_.string_table_size());
      if (added) out_.add_string_table(c);
      out_.add_comment(it->second);
    }
    out_.set_default_sample_type(Str(src_.default_sample_type()));
    out_.set_doc_url(Str(src_.doc_url()));
  }

  int64_t Str(int64_t index) {
    if (index == 0) return 0;
    if (index < 0 || index >= src_.string_table_size()) {
      throw Error(ErrorKind::kMalformed, "profile from a worker: string index ", index,
                  " out of range");
    }
    const std::string& s = src_.string_table(static_cast<int>(index));
    auto [it, added] = strings_.emplace(s, out_.string_table_size());
    if (added) out_.add_string_table(s);
    return it->second;
  }
  void CopyValueType(const pb::ValueType& t, pb::ValueType* o) {
    o->set_type(Str(t.type()));
    o->set_unit(Str(t.unit()));
  }
  static int Find(const std::unordered_map<uint64_t, int>& index, uint64_t id, const char* what) {
    auto it = index.find(id);
    if (it == index.end()) {
      throw Error(ErrorKind::kMalformed, "profile from a worker: no ", what, " with id ", id);
    }
    return it->second;
  }
  int MappingIndex(uint64_t id) const { return Find(mapping_index_, id, "mapping"); }
  int LocationIndex(uint64_t id) const { return Find(location_index_, id, "location"); }
  int FunctionIndex(uint64_t id) const { return Find(function_index_, id, "function"); }

  const pb::Profile& src_;
  pb::Profile out_;
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<uint64_t, int> mapping_index_, location_index_, function_index_;
};

int ValueIndex(const pb::Profile& p, std::string_view type) {
  for (int i = 0; i < p.sample_type_size(); ++i) {
    int64_t t = p.sample_type(i).type();
    if (t >= 0 && t < p.string_table_size() && p.string_table(static_cast<int>(t)) == type) {
      return i;
    }
  }
  throw Error(ErrorKind::kMalformed, "profile from a worker has no sample type ", type);
}

}  // namespace

pb::Profile CompactProfile(const pb::Profile& source, const std::vector<pb::Sample>& samples) {
  return Compactor(source).Run(samples);
}

TrimmedProfile TrimToLimits(const pb::Profile& in, const PushLimits& limits) {
  std::vector<int> order(static_cast<size_t>(in.sample_size()));
  std::iota(order.begin(), order.end(), 0);
  auto first = [&in](int i) { return in.sample(i).value_size() > 0 ? in.sample(i).value(0) : 0; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return first(a) > first(b); });
  size_t keep = std::min(order.size(), limits.max_samples);
  for (int attempt = 0;; ++attempt) {
    std::vector<int> chosen(order.begin(), order.begin() + static_cast<ptrdiff_t>(keep));
    std::sort(chosen.begin(), chosen.end());
    std::vector<pb::Sample> samples;
    samples.reserve(chosen.size());
    for (int i : chosen) samples.push_back(in.sample(i));
    std::vector<std::string> comments;
    if (keep < order.size()) {
      comments.push_back("goheap2pprof: " + std::to_string(order.size() - keep) + " of " +
                         std::to_string(order.size()) +
                         " samples were trimmed (the smallest) to fit the server's limits of " +
                         std::to_string(limits.max_samples) + " samples and " +
                         std::to_string(limits.max_bytes) + " bytes");
    }
    pb::Profile result = Compactor(in).Run(samples, comments);
    const size_t size = result.ByteSizeLong();
    if (size <= limits.max_bytes || keep == 0) return {std::move(result), order.size() - keep};
    // Shrink in proportion to the excess, by at least one sample.
    keep = std::min(keep - 1, static_cast<size_t>(static_cast<double>(keep) *
                                                  static_cast<double>(limits.max_bytes) /
                                                  static_cast<double>(size) * 0.95));
    if (attempt > 64) keep = 0;
  }
}

// Friend of AllocDeltaState: the one place that reads and advances it.
struct PyroscopeProfileMaker {
  using AllocValues = AllocDeltaState::AllocValues;

  // Where the four heap values are in a sample, and how many it has.
  struct Columns {
    int alloc_objects, alloc_space, inuse_objects, inuse_space, width;
  };

  // The key of a sample: its location addresses, then its object size.
  // Entries refer to the input's samples rather than copy them: a profile
  // of 100,000 buckets must not be held several times over.
  struct Entry {
    std::string key;
    int sample;                  // the first input sample with this key
    std::vector<int64_t> value;  // cumulative, then the values to push
  };

  // The entries to push, with their cumulative alloc values, and every
  // key's baseline for the next push.
  struct Deltas {
    std::vector<size_t> kept;
    std::vector<AllocValues> kept_now;
    std::unordered_map<std::string, AllocValues> next;
  };

  static PyroscopeProfile Make(const pb::Profile& in, AllocDeltaState& state,
                               const PushLimits& limits) {
    const Columns c{ValueIndex(in, "alloc_objects"), ValueIndex(in, "alloc_space"),
                    ValueIndex(in, "inuse_objects"), ValueIndex(in, "inuse_space"),
                    in.sample_type_size()};
    std::vector<Entry> entries = KeyedEntries(in, c.width);
    PyroscopeProfile out;
    out.samples_in = static_cast<uint64_t>(in.sample_size());
    out.baseline = !state.primed_;
    Deltas d = AllocDeltas(entries, state, c, out.resets);
    out.nonzero = d.kept.size();
    pb::Profile result = Trimmed(in, entries, c, limits, out.baseline, d);
    out.trimmed = d.kept.size() - static_cast<size_t>(result.sample_size());
    out.profile = std::move(result);
    state.prev_ = std::move(d.next);
    state.primed_ = true;
    return out;
  }

  // The samples of `in` by key; samples with the same key (which the
  // runtime never writes) are summed.
  static std::vector<Entry> KeyedEntries(const pb::Profile& in, int width) {
    std::unordered_map<uint64_t, uint64_t> address;
    for (const pb::Location& l : in.location()) address[l.id()] = l.address();
    int64_t bytes_key = -1;
    for (int i = 0; i < in.string_table_size(); ++i) {
      if (in.string_table(i) == "bytes") bytes_key = i;
    }
    std::vector<Entry> entries;
    std::unordered_map<std::string, size_t> by_key;
    for (int i = 0; i < in.sample_size(); ++i) {
      const pb::Sample& s = in.sample(i);
      if (s.value_size() != width) {
        throw Error(ErrorKind::kMalformed, "profile from a worker: a sample has ", s.value_size(),
                    " values for ", width, " sample types");
      }
      std::string key = SampleKey(s, address, bytes_key);
      auto [it, added] = by_key.emplace(key, entries.size());
      if (added) {
        entries.push_back(
            {std::move(key), i, std::vector<int64_t>(s.value().begin(), s.value().end())});
      } else {
        std::vector<int64_t>& sum = entries[it->second].value;
        for (int v = 0; v < width; ++v) sum[v] += s.value(v);
      }
    }
    return entries;
  }

  static std::string SampleKey(const pb::Sample& s,
                               const std::unordered_map<uint64_t, uint64_t>& address,
                               int64_t bytes_key) {
    std::string key;
    key.reserve(8 * (static_cast<size_t>(s.location_id_size()) + 1));
    for (uint64_t id : s.location_id()) {
      auto it = address.find(id);
      if (it == address.end()) {
        throw Error(ErrorKind::kMalformed, "profile from a worker: no location with id ", id);
      }
      key.append(reinterpret_cast<const char*>(&it->second), sizeof(uint64_t));
    }
    int64_t size = 0;
    for (const pb::Label& l : s.label()) {
      if (l.key() == bytes_key) size = l.num();
    }
    key.append(reinterpret_cast<const char*>(&size), sizeof(size));
    return key;
  }

  // The entries' alloc values become deltas against the state; counters
  // that went back (a reset) are counted in *resets and not pushed.
  static Deltas AllocDeltas(std::vector<Entry>& entries, const AllocDeltaState& state,
                            const Columns& c, uint64_t& resets) {
    Deltas d;
    d.next.reserve(entries.size());
    for (size_t e = 0; e < entries.size(); ++e) {
      std::vector<int64_t>& v = entries[e].value;
      AllocValues now{v[c.alloc_objects], v[c.alloc_space]};
      AllocValues before{};
      if (!state.primed_) {
        before = now;
      } else if (auto it = state.prev_.find(entries[e].key); it != state.prev_.end()) {
        before = it->second;
      }
      if (now.objects < before.objects || now.bytes < before.bytes) {
        ++resets;
        d.next[entries[e].key] = now;
        continue;
      }
      v[c.alloc_objects] = now.objects - before.objects;
      v[c.alloc_space] = now.bytes - before.bytes;
      if (v[c.alloc_objects] == 0 && v[c.alloc_space] == 0 && v[c.inuse_objects] == 0 &&
          v[c.inuse_space] == 0) {
        d.next[entries[e].key] = now;
        continue;
      }
      // Until the sample is sent, its baseline stays (see Trimmed).
      d.next[entries[e].key] = before;
      d.kept.push_back(e);
      d.kept_now.push_back(now);
    }
    return d;
  }

  // The profile of the kept entries that fits the limits: the largest
  // samples (alloc_space delta plus inuse_space, then objects) are kept, in
  // their original order. The samples sent advance their baselines in d.
  static pb::Profile Trimmed(const pb::Profile& in, const std::vector<Entry>& entries,
                             const Columns& c, const PushLimits& limits, bool baseline, Deltas& d) {
    std::vector<size_t> order(d.kept.size());
    std::iota(order.begin(), order.end(), 0);
    auto weight = [&](size_t i) {
      const std::vector<int64_t>& v = entries[d.kept[i]].value;
      return std::make_pair(v[c.alloc_space] + v[c.inuse_space],
                            v[c.alloc_objects] + v[c.inuse_objects]);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return weight(a) > weight(b); });
    size_t keep = std::min(d.kept.size(), limits.max_samples);
    for (int attempt = 0;; ++attempt) {
      std::vector<size_t> chosen(order.begin(), order.begin() + static_cast<ptrdiff_t>(keep));
      std::sort(chosen.begin(), chosen.end());
      pb::Profile result = Compactor(in).Run(ChosenSamples(in, entries, c.width, d, chosen),
                                             TrimComments(d.kept.size(), keep, limits, baseline));
      size_t size = result.ByteSizeLong();
      if (size <= limits.max_bytes || keep == 0) {
        for (size_t i : chosen) d.next[entries[d.kept[i]].key] = d.kept_now[i];
        return result;
      }
      // Shrink in proportion to the excess, by at least one sample.
      size_t smaller =
          static_cast<size_t>(static_cast<double>(keep) * static_cast<double>(limits.max_bytes) /
                              static_cast<double>(size) * 0.95);
      keep = std::min(keep - 1, smaller);
      if (attempt > 64) keep = 0;
    }
  }

  static std::vector<pb::Sample> ChosenSamples(const pb::Profile& in,
                                               const std::vector<Entry>& entries, int width,
                                               const Deltas& d, const std::vector<size_t>& chosen) {
    std::vector<pb::Sample> samples;
    samples.reserve(chosen.size());
    for (size_t i : chosen) {
      const Entry& e = entries[d.kept[i]];
      pb::Sample& sample = samples.emplace_back(in.sample(e.sample));
      for (int v = 0; v < width; ++v) sample.set_value(v, e.value[v]);
    }
    return samples;
  }

  static std::vector<std::string> TrimComments(size_t kept, size_t keep, const PushLimits& limits,
                                               bool baseline) {
    std::vector<std::string> comments;
    if (keep < kept) {
      comments.push_back(
          "goheap2pprof: " + std::to_string(kept - keep) + " of " + std::to_string(kept) +
          " samples were trimmed (the smallest by alloc_space delta plus inuse_space) to fit "
          "the server's limits of " +
          std::to_string(limits.max_samples) + " samples and " + std::to_string(limits.max_bytes) +
          " bytes");
    }
    if (baseline) {
      comments.push_back(
          "goheap2pprof: first profile of a process older than the agent: alloc_* are a "
          "baseline (zero), not a delta");
    }
    return comments;
  }
};

PyroscopeProfile MakePyroscopeProfile(const pb::Profile& cumulative, AllocDeltaState& state,
                                      const PushLimits& limits) {
  return PyroscopeProfileMaker::Make(cumulative, state, limits);
}

namespace {
constexpr uint32_t kStateMagic = 0x67326473;  // "g2ds"
// A key is a stack's addresses and an object size, 8 bytes each; a heap
// record has at most 1024 frames (the most GODEBUG=profstackdepth allows).
constexpr size_t kMaxKeyBytes = 8 * (1024 + 1);
}  // namespace

std::string EncodeAllocDeltaState(const AllocDeltaState& state) {
  WireWriter w;
  w.U32(kStateMagic);
  w.U8(state.primed_ ? 1 : 0);
  w.U64(state.prev_.size());
  for (const auto& [key, v] : state.prev_) {
    w.Str(key);
    w.U64(static_cast<uint64_t>(v.objects));
    w.U64(static_cast<uint64_t>(v.bytes));
  }
  return Gzip(w.Take());
}

AllocDeltaState DecodeAllocDeltaState(std::string_view bytes, size_t max_bytes) {
  const std::string raw = Gunzip(bytes, max_bytes);
  WireReader r(raw, "push state");
  if (r.U32() != kStateMagic) throw Error(ErrorKind::kMalformed, "push state: bad magic");
  AllocDeltaState state(r.Bool("primed"));
  // Each entry takes at least 20 bytes: no count can promise more.
  const uint64_t n = r.U64();
  if (n > r.Left() / 20) throw Error(ErrorKind::kMalformed, "push state: ", n, " entries");
  state.prev_.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    std::string key = r.Str(kMaxKeyBytes, "key");
    AllocDeltaState::AllocValues v;
    v.objects = static_cast<int64_t>(r.U64());
    v.bytes = static_cast<int64_t>(r.U64());
    state.prev_[std::move(key)] = v;
  }
  r.End();
  return state;
}

}  // namespace goheap2pprof
