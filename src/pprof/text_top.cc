#include "pprof/text_top.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "base/error.h"
#include "base/saturating.h"
#include "base/utf8.h"
#include "pprof/profile/view.h"

namespace goheap2pprof {

namespace {

// pprof's memory units; the only unit family a heap profile uses. Other
// units (count) are printed as plain numbers, as pprof does.
struct ByteUnit {
  const char* name;
  std::vector<std::string> aliases;
  double factor;
};
const std::vector<ByteUnit>& ByteUnits() {
  static const std::vector<ByteUnit> units = {
      {"B", {"b", "byte"}, 1},
      {"kB", {"kb", "kbyte", "kilobyte"}, 0x1p10},
      {"MB", {"mb", "mbyte", "megabyte"}, 0x1p20},
      {"GB", {"gb", "gbyte", "gigabyte"}, 0x1p30},
      {"TB", {"tb", "tbyte", "terabyte"}, 0x1p40},
      {"PB", {"pb", "pbyte", "petabyte"}, 0x1p50},
  };
  return units;
}

// The byte unit a unit string names ("bytes", "kB", ...), if any: lower
// case, a plural "s" dropped from names longer than two letters.
const ByteUnit* SniffByteUnit(std::string unit) {
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.size() > 2 && unit.back() == 's') unit.pop_back();
  for (const ByteUnit& u : ByteUnits()) {
    if (std::find(u.aliases.begin(), u.aliases.end(), unit) != u.aliases.end()) return &u;
  }
  return nullptr;
}

// pprof's measurement.Scale: value in from_unit, converted to to_unit
// ("minimum"/"auto": the largest unit in which it is still >= 1).
std::pair<double, std::string> Scale(int64_t value, const std::string& from_unit,
                                     const std::string& to_unit) {
  // Go's check: -value > 0 fails only for INT64_MIN, which pprof then
  // scales as the negative number it is (and so do we, without negating it).
  if (value < 0 && value != kInt64Min) {
    auto [v, u] = Scale(-value, from_unit, to_unit);
    return {-v, u};
  }
  if (const ByteUnit* from = SniffByteUnit(from_unit)) {
    const double v = static_cast<double>(value) * from->factor;
    if (to_unit == "minimum" || to_unit == "auto") {
      double f = 0;
      std::string name;
      for (const ByteUnit& u : ByteUnits()) {
        if (u.factor >= f && v / u.factor >= 1.0) {
          f = u.factor;
          name = u.name;
        }
      }
      if (f == 0) return {v, "B"};
      return {v / f, name};
    }
    const ByteUnit* to = SniffByteUnit(to_unit);
    if (to == nullptr) return {v, "B"};
    return {v / to->factor, to->name};
  }
  if (to_unit == "count" || to_unit == "sample" || to_unit == "unit" || to_unit == "minimum" ||
      to_unit == "auto") {
    return {static_cast<double>(value), ""};
  }
  return {static_cast<double>(value), to_unit};
}

std::string Printf(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

// A graph node: one function (or an unsymbolized location's object file).
struct NodeKey {
  std::string name;
  std::string objfile;  // only when there is no function name
  auto operator<=>(const NodeKey&) const = default;
  std::string Printable() const {
    if (!name.empty()) return name;
    if (!objfile.empty()) {
      std::string base = objfile.substr(objfile.find_last_of('/') + 1);
      return "[" + base + "]";
    }
    return "<unknown>";
  }
};

struct Edge {
  int64_t weight = 0;
  bool inline_call = true;  // every occurrence was an inline call
};

struct Node {
  int64_t flat = 0;
  int64_t cum = 0;
  std::map<size_t, Edge> in;  // by source node
};

// pprof's graph over function nodes, for one sample value.
class Graph {
 public:
  Graph(const ProfileView& view, int value_index) : view_(view), value_index_(value_index) {
    const pb::Profile& p = view.profile();
    for (const pb::Location& loc : p.location()) {
      std::string objfile;
      if (const pb::Mapping* m = view.Mapping(loc.mapping_id())) objfile = view.Str(m->filename());
      std::vector<size_t>& nodes = location_nodes_[loc.id()];
      if (loc.line_size() == 0) nodes.push_back(KeyIndex({"", objfile}));
      for (const pb::Line& line : loc.line()) {
        const pb::Function* fn = view.Function(line.function_id());
        std::string name = fn != nullptr ? view.Str(fn->name()) : "";
        nodes.push_back(KeyIndex({name, name.empty() ? objfile : ""}));
      }
    }
  }

  size_t key_count() const { return keys_.size(); }
  const NodeKey& key(size_t i) const { return keys_[i]; }

  // pprof's newGraph: node values, and edges between the kept nodes (all
  // when kept is empty). Returns the nodes with a non-zero value.
  std::vector<size_t> Build(const std::set<size_t>* kept) {
    nodes_.assign(keys_.size(), Node{});
    std::vector<bool> seen_node(keys_.size());
    std::set<std::pair<size_t, size_t>> seen_edge;
    for (const pb::Sample& s : view_.profile().sample()) {
      if (s.value_size() <= value_index_) continue;
      const int64_t w = s.value(value_index_);
      if (w == 0) continue;
      std::fill(seen_node.begin(), seen_node.end(), false);
      seen_edge.clear();
      std::optional<size_t> parent;
      bool residual = false;
      for (int i = s.location_id_size() - 1; i >= 0; --i) {
        auto it = location_nodes_.find(s.location_id(i));
        if (it == location_nodes_.end()) continue;
        const std::vector<size_t>& loc_nodes = it->second;
        for (size_t ni = loc_nodes.size(); ni-- > 0;) {
          const size_t n = loc_nodes[ni];
          if (kept != nullptr && !kept->contains(n)) {
            residual = true;
            continue;
          }
          if (!seen_node[n]) {
            seen_node[n] = true;
            nodes_[n].cum = SaturatingAdd(nodes_[n].cum, w);
          }
          if (parent && n != *parent && seen_edge.insert({n, *parent}).second) {
            auto [e, inserted] = nodes_[n].in.try_emplace(*parent);
            e->second.weight = SaturatingAdd(e->second.weight, w);
            // The caller-to-callee edge is an inline call when the callee is
            // not the location's outermost frame.
            if (ni + 1 == loc_nodes.size()) e->second.inline_call = false;
          }
          parent = n;
          residual = false;
        }
      }
      if (parent && !residual) nodes_[*parent].flat = SaturatingAdd(nodes_[*parent].flat, w);
    }
    std::vector<size_t> present;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (nodes_[n].cum != 0 || nodes_[n].flat != 0) present.push_back(n);
    }
    return present;
  }

  const Node& node(size_t n) const { return nodes_[n]; }

  // FlatNameOrder: |flat| desc, printable name asc, |cum| desc.
  void Sort(std::vector<size_t>& ns) const {
    std::sort(ns.begin(), ns.end(), [this](size_t l, size_t r) {
      const Node& a = nodes_[l];
      const Node& b = nodes_[r];
      const int64_t flat_a = SaturatingAbs(a.flat), flat_b = SaturatingAbs(b.flat);
      if (flat_a != flat_b) return flat_a > flat_b;
      const std::string pa = keys_[l].Printable(), pb = keys_[r].Printable();
      if (pa != pb) return pa < pb;
      const int64_t cum_a = SaturatingAbs(a.cum), cum_b = SaturatingAbs(b.cum);
      if (cum_a != cum_b) return cum_a > cum_b;
      return keys_[l] < keys_[r];
    });
  }

  void TrimEdges(const std::vector<size_t>& ns, int64_t cutoff) {
    for (size_t n : ns) {
      std::erase_if(nodes_[n].in,
                    [cutoff](const auto& e) { return SaturatingAbs(e.second.weight) < cutoff; });
    }
  }

 private:
  size_t KeyIndex(const NodeKey& key) {
    auto [it, inserted] = key_index_.try_emplace(key, keys_.size());
    if (inserted) keys_.push_back(key);
    return it->second;
  }

  const ProfileView& view_;
  const int value_index_;
  std::vector<NodeKey> keys_;
  std::map<NodeKey, size_t> key_index_;
  std::map<uint64_t, std::vector<size_t>> location_nodes_;
  std::vector<Node> nodes_;
};

// The mapping pprof treats as the main binary (massageMappings): the first
// with a file name that is not a shared library or a [special] region.
const pb::Mapping* MainMapping(const ProfileView& view) {
  const pb::Profile& p = view.profile();
  for (const pb::Mapping& m : p.mapping()) {
    std::string file = view.Str(m.filename());
    for (size_t at; (at = file.find("(deleted)")) != std::string::npos;) file.erase(at, 9);
    while (!file.empty() && std::isspace(static_cast<unsigned char>(file.back()))) file.pop_back();
    while (!file.empty() && std::isspace(static_cast<unsigned char>(file.front()))) {
      file.erase(0, 1);
    }
    if (file.empty() || file[0] == '[') continue;
    // pprof's libRx: ([.]so$|[.]so[._][0-9]+)
    bool library = false;
    for (size_t so = file.find(".so"); so != std::string::npos; so = file.find(".so", so + 1)) {
      const size_t after = so + 3;
      library |= after == file.size() ||
                 (after + 1 < file.size() && (file[after] == '.' || file[after] == '_') &&
                  std::isdigit(static_cast<unsigned char>(file[after + 1])));
    }
    if (library) continue;
    return &m;
  }
  return p.mapping_size() > 0 ? &p.mapping(0) : nullptr;
}

std::string BaseName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) return ".";
  if (path == "/") return "/";
  return path.substr(path.find_last_of('/') + 1);
}

// Go's time.Format("2006-01-02 15:04:05 MST") in the local time zone.
std::string FormatGoLocalTime(int64_t nanos) {
  std::time_t secs = static_cast<std::time_t>(nanos / 1'000'000'000);
  if (nanos < 0 && nanos % 1'000'000'000 != 0) --secs;
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S %Z", &tm);
  return buf;
}

}  // namespace

std::string FormatPprofValue(int64_t value, const std::string& from_unit,
                             const std::string& to_unit) {
  auto [v, unit] = Scale(value, from_unit, to_unit);
  std::string text = Printf("%.2f", v);
  if (text.ends_with(".00")) text.resize(text.size() - 3);
  if (text == "0" || text == "-0") return "0";
  return text + unit;
}

std::string FormatPprofPercentage(int64_t value, int64_t total) {
  double ratio = 0;
  if (total != 0) ratio = std::fabs(static_cast<double>(value) / static_cast<double>(total)) * 100;
  if (ratio >= 99.95 && ratio <= 100.05) return "  100%";
  if (ratio >= 1.0) return Printf("%5.2f%%", ratio);
  return Printf("%5.2g%%", ratio);
}

namespace {

// The graph's nodes as pprof's newTrimmedGraph keeps them: without those
// below the cum cutoff, sorted, the top node_count, edges trimmed.
struct TrimmedNodes {
  std::vector<size_t> nodes;
  int dropped_nodes = 0;  // below the cum cutoff
  int orig_count = 0;     // before the top node_count were taken
};

TrimmedNodes TrimGraph(Graph& g, const TextTopOptions& options) {
  TrimmedNodes out;
  std::vector<size_t>& nodes = out.nodes;
  nodes = g.Build(nullptr);
  int64_t graph_total = 0;
  for (size_t n : nodes) graph_total = SaturatingAdd(graph_total, g.node(n).flat);
  const int64_t node_cutoff =
      SaturatingAbs(SaturatingFromDouble(static_cast<double>(graph_total) * options.node_fraction));
  // pprof's default -edgefraction, which decides which edges (and so which
  // inline labels) survive.
  const int64_t edge_cutoff =
      SaturatingAbs(SaturatingFromDouble(static_cast<double>(graph_total) * 0.001));
  if (node_cutoff > 0) {
    std::set<size_t> kept;
    for (size_t n : nodes) {
      if (SaturatingAbs(g.node(n).cum) >= node_cutoff) kept.insert(n);
    }
    if (kept.size() != nodes.size()) {
      out.dropped_nodes = static_cast<int>(nodes.size() - kept.size());
      nodes = g.Build(&kept);
    }
  }
  out.orig_count = static_cast<int>(nodes.size());
  g.Sort(nodes);
  if (options.node_count > 0) {
    g.TrimEdges(nodes, edge_cutoff);
    if (static_cast<size_t>(options.node_count) < nodes.size()) {
      std::set<size_t> kept(nodes.begin(), nodes.begin() + options.node_count);
      nodes = g.Build(&kept);
      g.Sort(nodes);
    }
  }
  g.TrimEdges(nodes, edge_cutoff);
  return out;
}

std::vector<TopRow> TopRows(Graph& g, const std::vector<size_t>& nodes) {
  std::vector<TopRow> rows;
  for (size_t n : nodes) {
    TopRow row;
    row.name = g.key(n).Printable();
    row.flat = g.node(n).flat;
    row.cum = g.node(n).cum;
    bool inline_in = false, call_in = false;
    for (const auto& [src, e] : g.node(n).in) (e.inline_call ? inline_in : call_in) = true;
    if (inline_in) row.inline_label = call_in ? "(partial-inline)" : "(inline)";
    rows.push_back(std::move(row));
  }
  return rows;
}

// selectOutputUnit ("minimum"): the unit of the smallest non-zero value
// shown, or of 100x it when the total needs a larger unit.
std::string OutputUnit(const TopTable& table) {
  if (table.rows.empty()) return "minimum";
  int64_t min_value = 0;
  for (const TopRow& r : table.rows) {
    int64_t v = SaturatingAbs(r.flat);
    if (v == 0) v = SaturatingAbs(r.cum);
    if (v > 0 && (min_value == 0 || v < min_value)) min_value = v;
  }
  const int64_t max_value = table.total;
  if (min_value == 0) min_value = max_value;
  const std::string min_unit = Scale(min_value, table.sample_unit, "minimum").second;
  const std::string max_unit = Scale(max_value, table.sample_unit, "minimum").second;
  std::string unit = min_unit;
  if (min_unit != max_unit && SaturatingMul(min_value, 100) < max_value) {
    unit = Scale(SaturatingMul(min_value, 100), table.sample_unit, "minimum").second;
  }
  return unit.empty() ? table.sample_unit : unit;
}

// pprof's ProfileLabels: the main binary, the comments, the type and time.
void AddProfileLabels(const ProfileView& view, const TextTopOptions& options, TopTable& table) {
  const pb::Profile& profile = view.profile();
  if (const pb::Mapping* m = MainMapping(view)) {
    if (!view.Str(m->filename()).empty()) {
      table.labels.push_back("File: " + BaseName(view.Str(m->filename())));
    }
    if (!view.Str(m->build_id()).empty()) {
      table.labels.push_back("Build ID: " + view.Str(m->build_id()));
    }
  }
  for (int64_t c : profile.comment()) {
    if (!view.Str(c).starts_with("#")) table.labels.push_back(view.Str(c));
  }
  table.labels.push_back("Type: " + options.sample_index);
  if (profile.time_nanos() != 0) {
    table.labels.push_back("Time: " + FormatGoLocalTime(profile.time_nanos()));
  }
}

// pprof's reportLabels: what the rows account for and what was left out.
void AddReportLabels(const TextTopOptions& options, const TrimmedNodes& trimmed, TopTable& table) {
  auto format = [&](int64_t v) {
    return FormatPprofValue(v, table.sample_unit, table.output_unit);
  };
  int64_t shown = 0;
  for (const TopRow& r : table.rows) shown = SaturatingAdd(shown, r.flat);
  std::string percent = FormatPprofPercentage(shown, table.total);
  percent.erase(0, percent.find_first_not_of(' '));
  table.labels.push_back("Showing nodes accounting for " + format(shown) + ", " + percent + " of " +
                         format(table.total) + " total");
  if (table.total == 0) return;
  const int dropped_nodes = trimmed.dropped_nodes;
  if (dropped_nodes > 0) {
    table.labels.push_back("Dropped " + std::to_string(dropped_nodes) +
                           (dropped_nodes > 1 ? " nodes" : " node") + " (cum <= " +
                           format(SaturatingAbs(SaturatingFromDouble(
                               static_cast<double>(table.total) * options.node_fraction))) +
                           ")");
  }
  const int node_count = static_cast<int>(table.rows.size());
  if (node_count > 0 && node_count < trimmed.orig_count) {
    table.labels.push_back("Showing top " + std::to_string(node_count) + " nodes out of " +
                           std::to_string(trimmed.orig_count));
  }
}

}  // namespace

TopTable ComputeTop(const pb::Profile& profile, const TextTopOptions& options) {
  const ProfileView view(profile);
  const int index = view.SampleIndex(options.sample_index);
  TopTable table;
  table.sample_unit = view.Str(profile.sample_type(index).unit());
  for (const pb::Sample& s : profile.sample()) {
    if (s.value_size() > index) {
      table.total = SaturatingAdd(table.total, SaturatingAbs(s.value(index)));
    }
  }
  Graph g(view, index);
  const TrimmedNodes trimmed = TrimGraph(g, options);
  table.rows = TopRows(g, trimmed.nodes);
  table.output_unit = OutputUnit(table);
  AddProfileLabels(view, options, table);
  AddReportLabels(options, trimmed, table);
  return table;
}

std::string TextTop(const pb::Profile& profile, const TextTopOptions& options) {
  const TopTable table = ComputeTop(profile, options);
  auto format = [&](int64_t v) {
    return FormatPprofValue(v, table.sample_unit, table.output_unit);
  };
  std::string out;
  for (const std::string& label : table.labels) out += label + "\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum",
                "cum");
  out += line;
  int64_t flat_sum = 0;
  for (const TopRow& r : table.rows) {
    flat_sum = SaturatingAdd(flat_sum, r.flat);
    std::snprintf(line, sizeof(line), "%10s %s %s %10s %s  ", format(r.flat).c_str(),
                  FormatPprofPercentage(r.flat, table.total).c_str(),
                  FormatPprofPercentage(flat_sum, table.total).c_str(), format(r.cum).c_str(),
                  FormatPprofPercentage(r.cum, table.total).c_str());
    out += line;
    out += r.name;
    if (!r.inline_label.empty()) out += " " + r.inline_label;
    out += "\n";
  }
  return ValidUtf8(out);  // function names and labels are the target's bytes
}

}  // namespace goheap2pprof
