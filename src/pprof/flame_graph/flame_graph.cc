#include "pprof/flame_graph/flame_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "base/saturating.h"
#include "base/utf8.h"
#include "pprof/profile/view.h"
#include "pprof/text_top.h"

namespace goheap2pprof {

namespace {

// Deeper stacks are cut here (their value stays with the frame at the
// bound). Go's own stacks are at most a few hundred frames with inlining;
// the bound is for profiles from elsewhere.
constexpr size_t kMaxDepth = 1024;
// Lines listed on hover per frame.
constexpr size_t kMaxLinesShown = 4;

// A function (with its file), interned.
struct FrameKey {
  std::string name;
  std::string file;
};

// One frame of a location, root side first: the frame, the line, and
// whether it was inlined into the next one toward the root.
struct LocationFrame {
  uint32_t key;
  int64_t line;
  bool inlined;
};

struct TreeNode {
  uint32_t key = 0;
  int64_t value = 0;
  bool all_inlined = true;
  std::vector<uint32_t> children;
  std::map<int64_t, int64_t> lines;  // line -> value
};

// The call tree of one sample type, before layout.
class CallTree {
 public:
  CallTree(const ProfileView& view, int value_index) : view_(view), value_index_(value_index) {
    nodes_.emplace_back();  // the root
    for (const pb::Location& loc : view.profile().location()) {
      location_frames_[loc.id()] = FramesOf(loc);
    }
  }

  void Add(const pb::Sample& sample, FlameGraph& graph) {
    if (sample.value_size() <= value_index_) return;
    const int64_t v = sample.value(value_index_);
    if (v == 0) return;
    if (v < 0) {
      ++graph.skipped_samples;
      return;
    }
    nodes_[0].value = SaturatingAdd(nodes_[0].value, v);
    uint32_t node = 0;
    size_t depth = 0;
    for (int i = sample.location_id_size() - 1; i >= 0; --i) {
      auto it = location_frames_.find(sample.location_id(i));
      if (it == location_frames_.end()) {
        throw Error(ErrorKind::kMalformed, "profile sample refers to missing location ",
                    sample.location_id(i));
      }
      for (const LocationFrame& f : it->second) {
        if (++depth > kMaxDepth) {
          ++graph.truncated_stacks;
          return;
        }
        node = Child(node, f.key);
        TreeNode& n = nodes_[node];
        n.value = SaturatingAdd(n.value, v);
        n.all_inlined = n.all_inlined && f.inlined;
        n.lines[f.line] = SaturatingAdd(n.lines[f.line], v);
      }
    }
  }

  const TreeNode& node(uint32_t i) const { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  const FrameKey& key(uint32_t k) const { return keys_[k]; }

 private:
  std::vector<LocationFrame> FramesOf(const pb::Location& loc) {
    std::vector<LocationFrame> frames;
    // Lines are listed innermost (inlined) first; every line but the last
    // was inlined into the one after it.
    for (int i = loc.line_size() - 1; i >= 0; --i) {
      const pb::Line& line = loc.line(i);
      const pb::Function* fn = view_.Function(line.function_id());
      if (fn == nullptr) continue;
      frames.push_back({Intern({view_.Str(fn->name()), view_.Str(fn->filename())}), line.line(),
                        i + 1 < loc.line_size()});
    }
    if (frames.empty()) {
      // Unsymbolized: the address, in the mapping's file.
      std::string file;
      if (const pb::Mapping* m = view_.Mapping(loc.mapping_id())) file = view_.Str(m->filename());
      frames.push_back({Intern({Hex(loc.address()), file}), 0, false});
    }
    return frames;
  }

  uint32_t Intern(FrameKey key) {
    std::string text = key.name + '\0' + key.file;
    auto [it, inserted] = key_ids_.try_emplace(std::move(text), keys_.size());
    if (inserted) keys_.push_back(std::move(key));
    return it->second;
  }

  uint32_t Child(uint32_t parent, uint32_t key) {
    const uint64_t edge = uint64_t{parent} << 32 | key;
    auto [it, inserted] = edges_.try_emplace(edge, static_cast<uint32_t>(nodes_.size()));
    if (inserted) {
      nodes_.emplace_back();
      nodes_.back().key = key;
      nodes_[parent].children.push_back(it->second);
    }
    return it->second;
  }

  const ProfileView& view_;
  int value_index_;
  std::vector<TreeNode> nodes_;
  std::vector<FrameKey> keys_;
  std::unordered_map<std::string, uint32_t> key_ids_;
  std::unordered_map<uint64_t, uint32_t> edges_;
  std::unordered_map<uint64_t, std::vector<LocationFrame>> location_frames_;
};

// The smallest value a frame needs to be kept: min_fraction of the total,
// and above the value of the (max_frames+1)-th widest frame, so that at
// most max_frames are kept. Either cut keeps every ancestor of a kept frame,
// which is at least as wide.
int64_t KeepThreshold(const CallTree& tree, const FlameGraphOptions& options) {
  const int64_t total = tree.node(0).value;
  const double share = std::ceil(static_cast<double>(total) * options.min_fraction);
  int64_t threshold = std::max<int64_t>(1, SaturatingFromDouble(share));
  if (tree.size() - 1 > options.max_frames) {
    std::vector<int64_t> values;
    values.reserve(tree.size() - 1);
    for (uint32_t i = 1; i < tree.size(); ++i) values.push_back(tree.node(i).value);
    auto nth = values.begin() + static_cast<std::ptrdiff_t>(options.max_frames);
    std::nth_element(values.begin(), nth, values.end(), std::greater<int64_t>());
    threshold = std::max(threshold, SaturatingAdd(*nth, 1));
  }
  return threshold;
}

// "file:12" for one line; "file:12, 40, 7 and 3 more lines" (widest first).
std::string LocationText(const FrameKey& key, const TreeNode& n) {
  if (n.lines.empty() || (n.lines.size() == 1 && n.lines.begin()->first == 0)) return key.file;
  std::vector<std::pair<int64_t, int64_t>> lines(n.lines.begin(), n.lines.end());
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text = key.file + ":";
  for (size_t i = 0; i < lines.size() && i < kMaxLinesShown; ++i) {
    text += (i ? ", " : "") + std::to_string(lines[i].first);
  }
  if (lines.size() > kMaxLinesShown) {
    text += " and " + std::to_string(lines.size() - kMaxLinesShown) + " more lines";
  }
  return text;
}

class Layout {
 public:
  Layout(const CallTree& tree, int64_t threshold, FlameGraph& graph)
      : tree_(tree), threshold_(threshold), graph_(graph) {}

  // Pre-order from node, whose frame starts at x.
  void Emit(uint32_t node, int depth, int64_t x) {
    const TreeNode& n = tree_.node(node);
    FlameFrame frame;
    frame.depth = depth;
    frame.x = x;
    frame.value = n.value;
    if (node == 0) {
      frame.name = "total";
    } else {
      const FrameKey& key = tree_.key(n.key);
      frame.name = key.name;
      frame.location = LocationText(key, n);
      frame.inlined = n.all_inlined;
    }
    graph_.frames.push_back(std::move(frame));
    int64_t child_x = x;
    int64_t merged = 0, merged_value = 0;
    for (uint32_t c : SortedChildren(n)) {
      const int64_t v = tree_.node(c).value;
      if (v >= threshold_) {
        Emit(c, depth + 1, child_x);
        child_x = SaturatingAdd(child_x, v);
      } else {
        ++merged;
        merged_value = SaturatingAdd(merged_value, v);
      }
    }
    if (merged == 0) return;
    graph_.merged_frames = SaturatingAdd(graph_.merged_frames, merged);
    FlameFrame other;
    other.depth = depth + 1;
    other.x = child_x;
    other.value = merged_value;
    other.name = "[" + std::to_string(merged) + " smaller frames]";
    other.merged = merged;
    graph_.frames.push_back(std::move(other));
  }

 private:
  // Widest first, then by name and file: a total order on siblings, which
  // are distinct functions.
  std::vector<uint32_t> SortedChildren(const TreeNode& n) const {
    std::vector<uint32_t> order = n.children;
    std::sort(order.begin(), order.end(), [this](uint32_t a, uint32_t b) {
      const TreeNode& l = tree_.node(a);
      const TreeNode& r = tree_.node(b);
      if (l.value != r.value) return l.value > r.value;
      const FrameKey& kl = tree_.key(l.key);
      const FrameKey& kr = tree_.key(r.key);
      if (kl.name != kr.name) return kl.name < kr.name;
      return kl.file < kr.file;
    });
    return order;
  }

  const CallTree& tree_;
  int64_t threshold_;
  FlameGraph& graph_;
};

std::string DefaultTitle(const ProfileView& view, const std::string& sample_type) {
  const pb::Profile& p = view.profile();
  std::string exe;
  if (p.mapping_size() > 0) {
    const std::string& path = view.Str(p.mapping(0).filename());
    exe = path.substr(path.find_last_of('/') + 1);
  }
  return (exe.empty() ? std::string("heap") : exe) + " " + sample_type;
}

}  // namespace

FlameGraph BuildFlameGraph(const pb::Profile& profile, const FlameGraphOptions& options) {
  const ProfileView view(profile);
  const int index = view.SampleIndex(options.sample_index);
  FlameGraph graph;
  graph.sample_type = options.sample_index;
  graph.unit = view.Str(profile.sample_type(index).unit());
  for (const pb::ValueType& t : profile.sample_type()) graph.types.push_back(view.Str(t.type()));
  graph.title = options.title.empty() ? DefaultTitle(view, graph.sample_type) : options.title;
  CallTree tree(view, index);
  for (const pb::Sample& s : profile.sample()) tree.Add(s, graph);
  graph.total = tree.node(0).value;
  Layout(tree, KeepThreshold(tree, options), graph).Emit(0, 0, 0);
  return graph;
}

}  // namespace goheap2pprof
