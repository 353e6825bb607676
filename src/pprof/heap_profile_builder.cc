#include "pprof/heap_profile_builder.h"

#include <algorithm>
#include <tuple>

#include "base/error.h"
#include "base/huge_pages.h"
#include "heap/stack_store.h"
#include "pprof/stack_warmer.h"

namespace goheap2pprof {

HeapProfileBuilder::HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                                       std::vector<ProfileMapping> mappings, int64_t rate,
                                       int64_t time_nanos, uint64_t load_bias)
    : HeapProfileBuilder(symbolizer, traits, std::move(mappings), rate, time_nanos, load_bias,
                         CountProfile{}) {}

HeapProfileBuilder::HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                                       std::vector<ProfileMapping> mappings, CountProfile count,
                                       int64_t time_nanos, uint64_t load_bias)
    : HeapProfileBuilder(symbolizer, traits, std::move(mappings), 1, time_nanos, load_bias, count) {
}

HeapProfileBuilder::HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                                       std::vector<ProfileMapping> mappings, int64_t rate,
                                       int64_t time_nanos, uint64_t load_bias, CountProfile count)
    : sym_(symbolizer),
      traits_(traits),
      rate_(rate),
      time_nanos_(time_nanos),
      bias_(load_bias),
      arena_(std::make_unique<google::protobuf::Arena>()),
      profile_(google::protobuf::Arena::CreateMessage<pb::Profile>(arena_.get())),
      locations_(std::make_shared<LocationTables>()),
      tables_(std::make_shared<ProfileTables>()) {
  tables_->locations = locations_;
  // The order check needs the deck retry (without it, a cached PC inside an
  // inline group splits the group), and Go 1.21.0-1.21.5's Function dedup by
  // printed name keeps the first instantiation's name: an order of its own.
  order_independent_ = traits_.cached_location_deck_retry && !traits_.dedup_by_printed_name;
  Str("");
  TakeMappings(std::move(mappings));
  auto set_type = [this](pb::ValueType* vt, std::string_view type, std::string_view unit) {
    vt->set_type(Str(type));
    vt->set_unit(Str(unit));
  };
  // Only the types of the profile built: no string goes unreferenced.
  if (!count.name.empty()) {
    count_profile_ = true;
    hide_runtime_ = false;
    set_type(profile_->mutable_period_type(), count.name, "count");
    set_type(profile_->add_sample_type(), count.name, "count");
    return;
  }
  set_type(profile_->mutable_period_type(), "space", "bytes");
  set_type(profile_->add_sample_type(), "alloc_objects", "count");
  set_type(profile_->add_sample_type(), "alloc_space", "bytes");
  set_type(profile_->add_sample_type(), "inuse_objects", "count");
  set_type(profile_->add_sample_type(), "inuse_space", "bytes");
}

HeapProfileBuilder::HeapProfileBuilder(Symbolizer& symbolizer, const RuntimeTraits& traits,
                                       std::vector<ProfileMapping> mappings, uint64_t load_bias,
                                       std::unique_ptr<Seed> seed, LocationTables base)
    : sym_(symbolizer),
      traits_(traits),
      rate_(0),
      time_nanos_(0),
      bias_(load_bias),
      arena_(std::make_unique<google::protobuf::Arena>()),
      profile_(google::protobuf::Arena::CreateMessage<pb::Profile>(arena_.get())),
      locations_(std::make_shared<LocationTables>(std::move(base))),
      tables_(std::make_shared<ProfileTables>()),
      continuing_(true),
      base_strings_(locations_->strings) {
  if (seed == nullptr || !locations_->order_independent) {
    throw Error(ErrorKind::kInternal, "continuing tables without their seed or order check");
  }
  tables_->locations = locations_;
  order_independent_ = true;
  strings_ = std::move(seed->strings);
  funcs_ = std::move(seed->funcs);
  func_fields_ = std::move(seed->func_fields);
  locs_ = std::move(seed->locs);
  loc_infos_ = std::move(seed->loc_infos);
  TakeMappings(std::move(mappings));
  if (mem_.size() != seed->mapping_lookups.size()) {
    throw Error(ErrorKind::kInternal, "continuing tables of ", seed->mapping_lookups.size(),
                " mappings with ", mem_.size());
  }
  for (size_t i = 0; i < mem_.size(); ++i) {
    std::tie(mem_[i].tried, mem_[i].failed) = seed->mapping_lookups[i];
  }
}

void HeapProfileBuilder::TakeMappings(std::vector<ProfileMapping> mappings) {
  for (ProfileMapping& m : mappings) mem_.push_back({std::move(m)});
  if (mem_.empty()) {
    // runtime/pprof's fallback when /proc/self/maps yields nothing.
    ProfileMapping fake;
    fake.fake = true;
    mem_.push_back({fake});
  }
}

int64_t HeapProfileBuilder::Str(std::string_view s) {
  if (auto it = strings_.find(s); it != strings_.end()) return it->second;
  // Continuing, profile_ holds only the strings added to the base's.
  const auto index = static_cast<int64_t>(strings_.size());
  profile_->add_string_table(std::string(s));
  strings_.emplace(std::string(s), index);
  return index;
}

void HeapProfileBuilder::AddComment(std::string_view text) { comments_.push_back(Str(text)); }

bool HeapProfileBuilder::Continues(const SymFrame& last, const SymFrame& next) const {
  if (!last.inlined) return false;
  if (last.entry == 0 || next.entry == 0) return false;
  if (last.entry != next.entry) return false;
  if (traits_.deck_compares_printed_name) {
    return last.printed_name != next.printed_name;  // the same: maybe recursion
  }
  return last.function != next.function;
}

bool HeapProfileBuilder::TryAdd(uint64_t pc, std::span<const SymFrame> frames, bool failed) {
  // The deck's frames all come from one PC's expansion, so only the last
  // one decides whether the new PC continues the same inline group.
  if (!deck_.frames.empty() && !Continues(deck_.frames.back(), frames.front())) return false;
  deck_.pcs.push_back(pc);
  deck_.frames.insert(deck_.frames.end(), frames.begin(), frames.end());
  deck_.tried = true;
  deck_.failed |= failed;
  return true;
}

uint64_t HeapProfileBuilder::EmitLocation() {
  if (deck_.pcs.empty()) return 0;
  const uint64_t link_addr = deck_.pcs.front();
  const uint64_t addr = link_addr + bias_;  // wraps back for PCs below the bias
  const uint64_t id = loc_infos_.size() + 1;
  if (locs_.Find(link_addr) != nullptr) {
    // (Not seen in practice.) Remembered stacks may come out differently.
    ++loc_overwrites_;
    memo_ = PcMap<uint32_t>();
    memo_entries_.clear();
    by_storage_ = PcMap<StoredStack>();
    last_transient_.clear();
  }
  locs_.Insert(link_addr, static_cast<uint32_t>(loc_infos_.size()));
  LocInfo& info = loc_infos_.emplace_back();
  info.id = id;
  info.pcs = deck_.pcs;
  // No PC can join a deck whose last frame is a function's own (not
  // inlined) or unknown: a fresh build from these PCs ends here too.
  const SymFrame& last = deck_.frames.back();
  info.complete = !last.inlined || last.entry == 0;

  pb::Location* loc = profile_->add_location();
  loc->set_id(id);
  loc->set_address(deck_.frames.front().pc + bias_);
  for (const SymFrame& frame : deck_.frames) {
    // Go 1.21 keyed Functions by the printed name while writing the raw one,
    // so the first instantiation of a generic function names them all.
    const std::string key(traits_.dedup_by_printed_name ? frame.printed_name : frame.function);
    auto [it, inserted] = funcs_.try_emplace(key, funcs_.size() + 1);
    if (inserted) {
      pb::Function* fn = profile_->add_function();
      fn->set_id(it->second);
      fn->set_name(Str(frame.function));
      fn->set_system_name(Str(frame.function));
      fn->set_filename(Str(frame.file));
      if (traits_.writes_start_line) fn->set_start_line(frame.start_line);
      func_fields_.push_back({fn->filename(), frame.start_line});
    } else if (order_independent_) {
      CheckFunctionFields(it->second, frame);
    }
    pb::Line* line = loc->add_line();
    line->set_function_id(it->second);
    line->set_line(frame.line);
  }
  for (size_t i = 0; i < mem_.size(); ++i) {
    MappingState& m = mem_[i];
    if ((m.m.start <= addr && addr < m.m.limit) || m.m.fake) {
      loc->set_mapping_id(i + 1);
      m.tried |= deck_.tried;
      m.failed |= deck_.failed;
      break;
    }
  }
  deck_.Reset();
  return id;
}

void HeapProfileBuilder::CheckCachedUse(const LocInfo& l, std::span<const uint64_t> stk) {
  // runtime/pprof takes a cached location for as many PCs as it covers. The
  // stack's own PCs make the same location only if they are its PCs and the
  // stack's next PC would not have joined it.
  const size_t n = l.pcs.size();
  bool same = n <= stk.size() && std::equal(l.pcs.begin(), l.pcs.end(), stk.begin());
  if (same && !l.complete && n < stk.size()) {
    const PcFrames& next = sym_.FramesFor(stk[n]);
    same = next.frames.empty() ||  // runtime.goexit ends a group
           !Continues(sym_.FramesFor(l.pcs.back()).frames.back(), next.frames.front());
  }
  order_independent_ &= same;
}

void HeapProfileBuilder::CheckFunctionFields(uint64_t id, const SymFrame& frame) {
  // A Function is written from the first frame that names it: later frames
  // of the same name must agree, or another order would write other fields.
  const FuncFields& f = func_fields_[id - 1];
  const auto file = strings_.find(frame.file);
  const bool same = file != strings_.end() && file->second == f.file &&
                    (!traits_.writes_start_line || frame.start_line == f.start_line);
  order_independent_ &= same;
}

size_t HeapProfileBuilder::TakePlainLocation(uint32_t index, std::span<const uint64_t> stk,
                                             std::vector<uint64_t>& out) {
  const LocInfo& l = loc_infos_[index];
  if (!deck_.pcs.empty() || !l.complete || l.pcs.size() != 1) return 0;
  // Most PCs of most stacks: a one-PC location that no PC can join, and
  // nothing in the deck to emit; the order check cannot fail on it (its PC
  // is this one). A recursion repeats one PC hundreds of times, and each
  // turn would take the same location again.
  const size_t same = LeadingRepeats(stk, stk.front());
  if (same == 1) {
    out.push_back(l.id);
  } else {
    out.insert(out.end(), same, l.id);
  }
  return same;
}

size_t HeapProfileBuilder::TakePlainPrefix(std::span<const uint64_t> stk,
                                           std::vector<uint64_t>& out) {
  // Those it shares with the last stack's, then its own, until those left
  // end alike a stack whose turns after its plain ones took no location
  // (plain_suffix_): the deck is empty here, so each PC left before those
  // would take its plain turn again.
  size_t plain = TakeSharedPrefix(stk, out);
  const size_t suffix = SharedPlainSuffix(stk.subspan(plain));
  suffix_shared_ = suffix;
  while (plain < stk.size()) {
    const size_t left = stk.size() - plain;
    if (left <= suffix && left > plain_suffix_.frameless) {
      const auto& ids = plain_suffix_.ids;
      out.insert(out.end(), ids.end() - static_cast<std::ptrdiff_t>(left),
                 ids.end() - static_cast<std::ptrdiff_t>(plain_suffix_.frameless));
      return stk.size() - plain_suffix_.frameless;
    }
    const uint32_t* index = locs_.Find(stk[plain]);
    const size_t n = index != nullptr ? TakePlainLocation(*index, stk.subspan(plain), out) : 0;
    if (n == 0) break;
    plain += n;
  }
  return plain;
}

size_t HeapProfileBuilder::TakeSharedPrefix(std::span<const uint64_t> stk,
                                            std::vector<uint64_t>& out) const {
  if (plain_prefix_.overwrites != loc_overwrites_) return 0;
  const size_t n = SharedLeadingPcs(stk, plain_prefix_.pcs);
  out.insert(out.end(), plain_prefix_.ids.begin(), plain_prefix_.ids.begin() + n);
  return n;
}

size_t HeapProfileBuilder::SharedPlainSuffix(std::span<const uint64_t> rest) const {
  if (plain_suffix_.overwrites != loc_overwrites_) return 0;
  return SharedTrailingPcs(rest, plain_suffix_.Pcs());
}

void HeapProfileBuilder::KeepPlainSuffix(std::span<const uint64_t> pcs, size_t plain,
                                         std::span<const uint64_t> ids, uint64_t overwrites) {
  const size_t n = std::min(pcs.size(), kRememberedTrailingPcs);
  const size_t frameless = pcs.size() - plain;
  PlainSuffix& kept = plain_suffix_;
  if (ids.size() != plain) return;  // a PC after the plain ones made a location
  if (n <= frameless) {
    kept.size = 0;  // none plain (an empty stack): forgotten
    return;
  }
  if (overwrites != loc_overwrites_) return;
  // The PCs it ends with alike the kept ones (TakePlainPrefix compared
  // them) have the same ids: a plain turn's id is its PC's, while no
  // location replaces a cached one.
  const size_t same = kept.overwrites == loc_overwrites_ && kept.frameless == frameless
                          ? std::min(suffix_shared_, n)
                          : 0;
  for (size_t i = same; i < n; ++i) {  // the i-th PC from the end
    const size_t slot = kept.pcs.size() - 1 - i;
    const size_t at = pcs.size() - 1 - i;
    kept.pcs[slot] = pcs[at];
    if (i >= frameless) kept.ids[slot] = ids[at];
  }
  kept.size = n;
  kept.frameless = frameless;
  kept.overwrites = loc_overwrites_;
}

void HeapProfileBuilder::KeepPlainPrefix(std::span<const uint64_t> pcs,
                                         std::span<const uint64_t> ids, uint64_t overwrites) {
  // A location emitted after them may have replaced one of theirs.
  const size_t n = overwrites == loc_overwrites_ ? std::min(pcs.size(), kRememberedLeadingPcs) : 0;
  plain_prefix_.pcs.assign(pcs.begin(), pcs.begin() + n);
  plain_prefix_.ids.assign(ids.begin(), ids.begin() + n);
  plain_prefix_.overwrites = loc_overwrites_;
}

std::span<const uint64_t> HeapProfileBuilder::TakeCachedLocation(uint32_t index,
                                                                 std::span<const uint64_t> stk,
                                                                 std::vector<uint64_t>& out) {
  if (const size_t plain = TakePlainLocation(index, stk, out)) return stk.subspan(plain);
  const uint64_t addr = stk.front();
  const LocInfo& l = loc_infos_[index];
  // A cached PC may be a "fake" PC of an inline group still in the deck.
  if (traits_.cached_location_deck_retry && !deck_.pcs.empty()) {
    const PcFrames& first = sym_.FramesFor(l.pcs.front());
    if (TryAdd(addr, first.frames, first.lookup_failed)) return stk.subspan(1);
  }
  if (order_independent_) CheckCachedUse(l, stk);
  // EmitLocation may grow loc_infos_: take what we need from l first.
  const uint64_t cached_id = l.id;
  const size_t cached_pcs = l.pcs.size();
  const uint64_t emitted = EmitLocation();
  if (emitted != 0) out.push_back(emitted);
  out.push_back(cached_id);
  // runtime/pprof skips as many PCs as the cached location covers without
  // comparing them (it would panic on a too-short stack; we clamp).
  return stk.subspan(std::min(cached_pcs, stk.size()));
}

void HeapProfileBuilder::AppendLocsForStack(std::span<const uint64_t> input,
                                            std::vector<uint64_t>& out) {
  out.clear();
  deck_.Reset();
  const uint64_t overwrites = loc_overwrites_;
  // Only a stack cut inside an inline group changes; others are used as is.
  std::optional<std::vector<uint64_t>> expanded;
  // Most stacks end in the same few PCs: one known to need no expansion is
  // not asked again (the symbolizer's lock, once a stack).
  if (input.empty() || plain_finals_.Find(input.back()) == nullptr) {
    bool plain = false;
    expanded = sym_.ExpandFinalInlineFrame(input, &plain);
    if (plain && input.back() != 0) plain_finals_.Insert(input.back(), 1);  // PcMap keys are not 0
  }
  const std::span<const uint64_t> whole =
      expanded ? std::span<const uint64_t>(*expanded) : std::span<const uint64_t>(input);
  const size_t plain = TakePlainPrefix(whole, out);
  std::span<const uint64_t> stk = whole.subspan(plain);
  while (!stk.empty()) {
    const uint64_t addr = stk.front();
    if (const uint32_t* index = locs_.Find(addr)) {
      stk = TakeCachedLocation(*index, stk, out);
      continue;
    }
    const HiddenAnswer* asked = hide_runtime_ ? hidden_.Find(addr + bias_) : nullptr;
    const PcFrames& frames = asked != nullptr ? *asked->frames : sym_.FramesFor(addr);
    if (frames.frames.empty()) {  // runtime.goexit
      if (uint64_t id = EmitLocation()) out.push_back(id);
      stk = stk.subspan(1);
      continue;
    }
    if (TryAdd(addr, frames.frames, frames.lookup_failed)) {
      stk = stk.subspan(1);
      continue;
    }
    if (uint64_t id = EmitLocation()) out.push_back(id);
    if (const uint32_t* index = locs_.Find(addr)) {
      const LocInfo& l = loc_infos_[*index];
      if (order_independent_) CheckCachedUse(l, stk);
      out.push_back(l.id);
      stk = stk.subspan(std::min(l.pcs.size(), stk.size()));
    } else {
      TryAdd(addr, frames.frames, frames.lookup_failed);  // succeeds: the deck is empty
      stk = stk.subspan(1);
    }
  }
  if (uint64_t id = EmitLocation()) out.push_back(id);
  KeepPlainPrefix(whole.first(plain), std::span<const uint64_t>(out).first(plain), overwrites);
  // Every turn but the plain ones made a location or joined the deck (whose
  // location came after) unless out holds the plain ones' ids alone.
  KeepPlainSuffix(whole, plain, out, overwrites);
}

namespace {
// A non-zero hash of a stack, for the memo of stacks already turned into
// locations: the stack store's, whose four lanes hash a deep stack several
// words at a time (one chain of multiplies, a word after the other, was
// most of RunForStack's own time on Go 1.27.3's deep bench target).
uint64_t StackHash(std::span<const uint64_t> stk) {
  const uint64_t h =
      StackStore::DefaultHash(reinterpret_cast<const uint8_t*>(stk.data()), stk.size());
  return h == 0 ? 1 : h;
}
}  // namespace

namespace {

// A count profile's sample: the count, and no "bytes" label.
SampleValues CountSampleValues(const MemProfileRecord& r) {
  SampleValues v;
  v.values[0] = r.alloc_objects;
  return v;
}

}  // namespace

SampleValues HeapSampleValues(const MemProfileRecord& r, const RuntimeTraits& traits,
                              int64_t rate) {
  SampleValues v;
  const ScaledPair alloc = ScaleHeapSample(r.alloc_objects, r.alloc_bytes, rate);
  const ScaledPair inuse = ScaleHeapSample(r.InUseObjects(), r.InUseBytes(), rate);
  v.values[0] = alloc.count;
  v.values[1] = alloc.bytes;
  v.values[2] = inuse.count;
  v.values[3] = inuse.bytes;
  int64_t block_size = r.alloc_objects > 0 ? r.alloc_bytes / r.alloc_objects : 0;
  if (traits.bytes_label_is_object_size) block_size = static_cast<int64_t>(r.bucket->size);
  // 1.27+ labels every sample with its object size; before, only a non-zero
  // AllocBytes/AllocObjects.
  v.has_label = block_size != 0 || traits.bytes_label_is_object_size;
  v.label_num = block_size;
  return v;
}

FinishedProfile FillProfile(std::shared_ptr<const ProfileTables> tables,
                            std::span<const MemProfileRecord> records, const RuntimeTraits& traits,
                            int64_t rate, int64_t time_nanos,
                            std::span<const std::string> comments) {
  if (records.size() != tables->samples()) {
    throw Error(ErrorKind::kInternal, "profile tables for ", tables->samples(),
                " samples filled with ", records.size(), " records");
  }
  std::vector<SampleValues> samples;
  samples.reserve(records.size());
  bool labels = false;
  for (const MemProfileRecord& r : records) {
    samples.push_back(HeapSampleValues(r, traits, rate));
    labels |= samples.back().has_label;
  }
  std::vector<std::string> extra;
  int64_t bytes_key = tables->locations->bytes_key;
  if (bytes_key < 0 && labels) {
    bytes_key = tables->locations->strings;
    extra.emplace_back("bytes");
  }
  std::vector<int64_t> comment_keys;
  for (const std::string& text : comments) {
    comment_keys.push_back(tables->locations->strings + static_cast<int64_t>(extra.size()));
    extra.push_back(text);
  }
  return FinishedProfile(std::move(tables), std::move(samples), rate, time_nanos, std::move(extra),
                         std::move(comment_keys), bytes_key);
}

uint32_t HeapProfileBuilder::RunForStack(std::span<const uint64_t> stack, bool& fixed,
                                         bool remember, size_t hidden) {
  fixed = true;
  // The locations are made from the frames hideRuntime leaves: stacks that
  // differ only in hidden frames (Go 1.27's size-specialized mallocgc
  // functions give one call path's buckets different first frames) share a
  // remembered run.
  if (!hide_runtime_) {
    hidden = 0;
  } else if (hidden == kHiddenUnknown) {
    hidden = HiddenFrames(stack);
  } else if (hidden > stack.size()) {
    throw Error(ErrorKind::kInternal, hidden, " hidden frames in a stack of ", stack.size());
  }
  const std::span<const uint64_t> shown = stack.subspan(hidden);
  const uint64_t shown_hash = remember ? StackHash(shown) : 0;
  if (const uint32_t* index = remember ? memo_.Find(shown_hash) : nullptr) {
    const MemoEntry& e = memo_entries_[*index];
    if (std::equal(shown.begin(), shown.end(), e.words, e.words + e.n)) return e.run;
  }
  fixed = false;
  const size_t locations_before = loc_infos_.size();
  const uint64_t overwrites_before = loc_overwrites_;
  const size_t used = ComputeLocsForStack(LinkTime(stack), hidden, locs_scratch_);
  const uint32_t run = locations_->AddRun(locs_scratch_);
  // Many buckets share a stack (one per size class allocated there). A stack
  // whose turn emitted no location found every PC in the location cache, and
  // the cache only grows, so any later turn of the same frames gives the
  // same ids: remember them, by the frames they were made from. (Without
  // the deck retry, a stack that emitted locations may come out differently
  // when next seen, as in runtime/pprof.)
  if (loc_overwrites_ != overwrites_before) return run;
  if (!remember) {
    fixed = (loc_infos_.size() == locations_before && !locs_scratch_.empty()) ||
            traits_.cached_location_deck_retry;
    return run;
  }
  const std::span<const uint64_t> made_from = stack.subspan(used);
  const uint64_t hash = used == hidden ? shown_hash : StackHash(made_from);
  if (loc_infos_.size() == locations_before && !locs_scratch_.empty() &&
      memo_.Find(hash) == nullptr) {
    memo_.Insert(hash, static_cast<uint32_t>(memo_entries_.size()));
    memo_entries_.push_back({made_from.data(), made_from.size(), run});
    fixed = true;
  }
  // With the deck retry (Go 1.19+) one that did comes out the same too: each
  // PC that starts one of its locations has that location cached now, and a
  // PC inside one joins the deck whether cached or not. Its run is remembered
  // by where the stack is stored (AddRecord), which equal stacks share.
  fixed |= traits_.cached_location_deck_retry;
  return run;
}

std::span<const uint64_t> HeapProfileBuilder::LinkTime(std::span<const uint64_t> stack) {
  // A non-PIE executable's are the same: a deep stack is not copied.
  if (bias_ == 0) return stack;
  // Unsigned arithmetic: a corrupt PC below the bias wraps and is added
  // back unchanged; its lookup fails either way.
  link_stack_.assign(stack.begin(), stack.end());
  for (uint64_t& pc : link_stack_) pc -= bias_;
  return link_stack_;
}

size_t HeapProfileBuilder::HiddenFrames(std::span<const uint64_t> stack) {
  if (!hide_runtime_) return 0;
  for (size_t i = 0; i < stack.size(); ++i) {
    // The first non-runtime frame and its callers are shown. Every stack
    // asks this of its first few PCs: remembered here, without the
    // symbolizer's lock.
    const uint64_t pc = stack[i];
    const HiddenAnswer* known = hidden_.Find(pc);
    bool hidden = known != nullptr && known->hidden;
    if (known == nullptr) {
      // The frames too: the first shown PC's are asked for next.
      const Symbolizer::NameAndFrames got = sym_.FuncNameForPcAndFrames(pc - bias_);
      hidden = HasHiddenByRuntimePrefix(got.name, traits_);
      if (pc != 0) hidden_.Insert(pc, {got.frames, hidden});  // PcMap keys are not 0
    }
    if (!hidden) return i;
  }
  return 0;  // every frame hidden: hideRuntime keeps them all
}

size_t HeapProfileBuilder::ComputeLocsForStack(std::span<const uint64_t> full, size_t hidden,
                                               std::vector<uint64_t>& locs) {
  AppendLocsForStack(full.subspan(hidden), locs);
  if (!locs.empty() || hidden == 0) return hidden;
  // No location from the shown frames: show all frames (a turn that made
  // none emitted none, so the cache is as it was).
  AppendLocsForStack(full, locs);
  return 0;
}

void HeapProfileBuilder::StreamSamplesTo(google::protobuf::io::ZeroCopyOutputStream* out,
                                         bool keep) {
  if (!tables_->sample_runs.empty())
    throw Error(ErrorKind::kInternal, "samples streamed after some were added");
  stream_ = std::make_unique<google::protobuf::io::CodedOutputStream>(out);
  keep_samples_ = keep;
}

void HeapProfileBuilder::Reserve(size_t records, size_t stack_words) {
  if (keep_samples_) samples_.reserve(records);
  tables_->sample_runs.reserve(records);
  locations_->Reserve(stack_words);
}

uint32_t HeapProfileBuilder::RunOf(std::span<const uint64_t> stack) {
  const uint64_t stored = reinterpret_cast<uintptr_t>(stack.data());
  if (const StoredStack* s = by_storage_.Find(stored); s != nullptr && s->words == stack.size()) {
    return s->run;
  }
  bool fixed = false;
  const uint32_t run = RunForStack(stack, fixed);
  if (fixed && stored != 0) by_storage_.Insert(stored, {stack.size(), run});
  return run;
}

uint32_t HeapProfileBuilder::AddStack(std::span<const uint64_t> stack) {
  if (!continuing_ || tables_done_) {
    throw Error(ErrorKind::kInternal, "a stack added to tables not being continued");
  }
  return RunOf(stack);
}

bool HeapProfileBuilder::SameLinkTime(std::span<const uint64_t> stack,
                                      std::span<const uint64_t> link) const {
  if (stack.size() != link.size()) return false;
  if (bias_ == 0) return SharedLeadingPcs(stack, link) == stack.size();
  return std::equal(stack.begin(), stack.end(), link.begin(),
                    [this](uint64_t pc, uint64_t l) { return pc - bias_ == l; });
}

uint32_t HeapProfileBuilder::RunOfTransient(std::span<const uint64_t> stack, size_t hidden) {
  if (finished_ || tables_done_) {
    throw Error(ErrorKind::kInternal, "a stack added to a finished profile or tables");
  }
  // Buckets of one call site (one per object size) follow each other in the
  // list: the last stack, if its run is its own for good, serves them all.
  // It is kept in link-time addresses: RunForStack's copy of a PIE's stack
  // is taken over, not copied again (a deep stack is 8 KiB).
  if (!last_transient_.empty() && SameLinkTime(stack, last_transient_)) return last_transient_run_;
  bool fixed = false;
  const uint32_t run = RunForStack(stack, fixed, /*remember=*/false, hidden);
  last_transient_.clear();
  if (fixed && !stack.empty()) {
    if (bias_ != 0) {
      std::swap(last_transient_, link_stack_);  // LinkTime(stack)
    } else {
      last_transient_.assign(stack.begin(), stack.end());
    }
    last_transient_run_ = run;
  }
  return run;
}

void HeapProfileBuilder::AddRecord(const MemProfileRecord& r) {
  if (finished_ || continuing_) {
    throw Error(ErrorKind::kInternal, "a record added to a finished profile or to tables");
  }
  AddSample(RunOf(r.bucket->stack), r);
}

void HeapProfileBuilder::AddSample(uint32_t run, const MemProfileRecord& r) {
  if (finished_ || continuing_ || run >= locations_->runs.size()) {
    throw Error(ErrorKind::kInternal, "a sample added to a finished profile, to tables, or of ",
                "an unknown run");
  }
  tables_->sample_runs.push_back(run);
  // Made in place: assigned from a returned copy, the values were loaded
  // back in 16-byte words from the callee's 8-byte stores, which the CPU
  // cannot forward (a stall a sample).
  const SampleValues values =
      count_profile_ ? CountSampleValues(r) : HeapSampleValues(r, traits_, rate_);
  // "bytes" enters the string table when the first label needs it, as in
  // runtime/pprof.
  if (bytes_key_ < 0 && values.has_label) bytes_key_ = Str("bytes");
  if (stream_) WriteSample(*stream_, *tables_, run, values, bytes_key_);
  if (keep_samples_) samples_.push_back(values);
}

void HeapProfileBuilder::CompleteTables() {
  if (tables_done_) return;
  tables_done_ = true;
  // The mappings are encoded apart: their has_functions may change when the
  // tables are continued, while the rest only grows.
  pb::Profile* mappings = google::protobuf::Arena::CreateMessage<pb::Profile>(arena_.get());
  for (size_t i = 0; i < mem_.size(); ++i) {
    const MappingState& m = mem_[i];
    if (m.m.fake && i > 0) continue;
    pb::Mapping* pm = mappings->add_mapping();
    pm->set_id(i + 1);
    pm->set_memory_start(m.m.start);
    pm->set_memory_limit(m.m.limit);
    pm->set_file_offset(m.m.offset);
    pm->set_filename(Str(m.m.file));
    pm->set_build_id(Str(m.m.build_id));
    // Names are in the profile only where every lookup in the mapping worked.
    pm->set_has_functions(m.tried && !m.failed);
  }
  std::string part;
  if (!profile_->SerializeToString(&part) ||
      !mappings->SerializeToString(&locations_->mappings_encoded)) {
    throw Error(ErrorKind::kInternal, "protobuf serialization of the profile's tables failed");
  }
  // Continuing, the base's encoding comes first: the string table
  // and the other repeated fields of the two parts concatenate.
  if (continuing_) {
    locations_->encoded += part;
  } else {
    locations_->encoded = std::move(part);
  }
  locations_->strings = base_strings_ + profile_->string_table_size();
  if (auto it = strings_.find(std::string_view("bytes")); it != strings_.end()) {
    locations_->bytes_key = it->second;
  }
  locations_->order_independent = order_independent_ && loc_overwrites_ == 0;
}

std::shared_ptr<const LocationTables> HeapProfileBuilder::FinishLocations() {
  if (!continuing_) throw Error(ErrorKind::kInternal, "FinishLocations of a profile build");
  CompleteTables();
  return locations_;
}

std::unique_ptr<HeapProfileBuilder::Seed> HeapProfileBuilder::TakeSeed() {
  if (continuing_) {
    CompleteTables();
  } else {
    Complete();
  }
  if (!order_independent_ || loc_overwrites_ != 0) return nullptr;
  auto seed = std::make_unique<Seed>();
  seed->strings = std::move(strings_);
  seed->funcs = std::move(funcs_);
  seed->func_fields = std::move(func_fields_);
  seed->locs = std::move(locs_);
  seed->loc_infos = std::move(loc_infos_);
  for (const MappingState& m : mem_) seed->mapping_lookups.emplace_back(m.tried, m.failed);
  order_independent_ = false;  // the caches are gone
  seed->bytes = seed->Count();
  return seed;
}

size_t HeapProfileBuilder::Seed::Count() const {
  // Hash nodes of about 64 bytes besides their keys; each location's PCs
  // are a vector of their own.
  size_t total = locs.ApproximateBytes() + sizeof(LocInfo) * loc_infos.capacity() +
                 sizeof(FuncFields) * func_fields.capacity();
  for (const auto& [s, index] : strings) total += 64 + s.capacity();
  for (const auto& [s, id] : funcs) total += 64 + s.capacity();
  for (const LocInfo& l : loc_infos) total += 8 * l.pcs.capacity();
  return total;
}

void HeapProfileBuilder::Complete() {
  if (finished_) return;
  if (continuing_) throw Error(ErrorKind::kInternal, "a profile completed from continued tables");
  CompleteTables();
  const bool streamed = stream_ != nullptr;
  if (stream_) {
    stream_->Trim();
    if (stream_->HadError()) throw Error(ErrorKind::kIo, "writing the profile's samples failed");
    stream_.reset();
  }
  finished_.emplace(std::move(tables_), std::move(samples_), rate_, time_nanos_,
                    std::vector<std::string>{}, std::move(comments_), bytes_key_,
                    keep_samples_ ? SampleStorage::kKept : SampleStorage::kStreamedAndDropped);
  if (streamed) finished_->MarkSamplesStreamed();
}

const pb::Profile& HeapProfileBuilder::Finish() {
  Complete();
  return finished_->get();
}

FinishedProfile HeapProfileBuilder::TakeProfile() && {
  Complete();
  return std::move(*finished_);
}

}  // namespace goheap2pprof
