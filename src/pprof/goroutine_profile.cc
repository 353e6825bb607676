#include "pprof/goroutine_profile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "heap/buckets.h"
#include "pprof/heap_debug_text.h"

namespace goheap2pprof {

namespace {

// strconv.Quote for the ASCII range (labels are usually plain); other bytes
// as \x escapes, which is what Quote does for invalid UTF-8.
std::string GoQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          out += static_cast<char>(c);
        } else {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        }
    }
  }
  return out + "\"";
}

std::string StackKey(const std::vector<uint64_t>& pcs, const Labels& labels) {
  std::string key = "@";
  char hex[24];
  for (uint64_t pc : pcs) {
    std::snprintf(hex, sizeof hex, " %#llx", static_cast<unsigned long long>(pc));
    key += hex;
  }
  if (!labels.empty()) key += "\n# labels: " + LabelsText(labels);
  return key;
}

}  // namespace

std::string LabelsText(const Labels& labels) {
  std::vector<std::string> pairs;
  for (const auto& [k, v] : labels) pairs.push_back(GoQuote(k) + ":" + GoQuote(v));
  std::sort(pairs.begin(), pairs.end());
  std::string out = "{";
  for (size_t i = 0; i < pairs.size(); ++i) out += (i ? ", " : "") + pairs[i];
  return out + "}";
}

std::vector<GoroutineStack> CountGoroutineStacks(std::span<const Goroutine> goroutines) {
  std::unordered_map<std::string, size_t> index;
  std::vector<GoroutineStack> out;
  for (const Goroutine& g : goroutines) {
    Labels labels = g.labels;
    std::sort(labels.begin(), labels.end());
    std::string key = StackKey(g.pcs, labels);
    auto [it, inserted] = index.try_emplace(key, out.size());
    if (inserted) out.push_back({g.pcs, std::move(labels), 0, std::move(key)});
    ++out[it->second].count;
  }
  std::sort(out.begin(), out.end(), [](const GoroutineStack& a, const GoroutineStack& b) {
    return a.count != b.count ? a.count > b.count : a.key < b.key;
  });
  return out;
}

pb::Profile BuildGoroutineProfile(Symbolizer& symbolizer, const RuntimeTraits& traits,
                                  std::vector<ProfileMapping> mappings, uint64_t bias,
                                  int64_t time_nanos, std::span<const GoroutineStack> stacks,
                                  std::span<const std::string> comments) {
  // The heap builder makes the locations, functions and mappings, with the
  // count profile's types; the samples' values and labels are then ours.
  HeapProfileBuilder builder(symbolizer, traits, std::move(mappings),
                             HeapProfileBuilder::CountProfile{"goroutine"}, time_nanos, bias);
  std::vector<Bucket> buckets(stacks.size());
  for (size_t i = 0; i < stacks.size(); ++i) {
    buckets[i].stack = stacks[i].pcs;
    MemProfileRecord record;
    record.alloc_objects = stacks[i].count;
    record.bucket = &buckets[i];
    builder.AddRecord(record);
  }
  for (const std::string& c : comments) builder.AddComment(c);
  pb::Profile p = builder.Finish();
  std::map<std::string, int64_t> strings;
  auto str = [&p, &strings](const std::string& s) {
    auto [it, inserted] = strings.try_emplace(s, p.string_table_size());
    if (inserted) p.add_string_table(s);
    return it->second;
  };
  for (int i = 0; i < p.string_table_size(); ++i) strings.try_emplace(p.string_table(i), i);
  for (int i = 0; i < p.sample_size(); ++i) {
    pb::Sample* s = p.mutable_sample(i);
    s->clear_value();
    s->add_value(stacks[i].count);
    for (const auto& [k, v] : stacks[i].labels) {
      pb::Label* l = s->add_label();
      l->set_key(str(k));
      l->set_str(str(v));
    }
  }
  return p;
}

std::string GoroutineDebugText(Symbolizer& symbolizer, const RuntimeTraits& traits, uint64_t bias,
                               std::span<const GoroutineStack> stacks) {
  int64_t total = 0;
  for (const GoroutineStack& s : stacks) total += s.count;
  std::string text = "goroutine profile: total " + std::to_string(total) + "\n";
  for (const GoroutineStack& s : stacks) {
    text += std::to_string(s.count) + " " + s.key + "\n";
    AppendStackRecord(text, s.pcs, traits, symbolizer, bias, false);
  }
  return GoTabwriter(text);
}

}  // namespace goheap2pprof
