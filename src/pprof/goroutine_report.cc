#include "pprof/goroutine_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "base/utf8.h"

namespace goheap2pprof {

namespace {

// One row of the table: goroutines with one creator and one state.
struct Site {
  std::string created_by;  // "main.main at main.go:12", or "(none)" for goroutine 1
  std::string state;
  int64_t count = 0;
  int64_t oldest_minutes = 0;
};

std::vector<Site> Sites(const GoroutineDumpInput& in, const GoroutineSnapshot& s) {
  std::map<std::pair<std::string, std::string>, Site> by_key;
  GoroutineSymbols symbols(in);
  for (const Goroutine& g : s.goroutines) {
    std::string creator = GoroutineCreatorText(symbols.CreatedBy(g));
    std::string state = GoroutineState(in, g);
    Site& site = by_key[{creator, state}];
    if (site.count == 0) site = Site{std::move(creator), std::move(state), 0, 0};
    ++site.count;
    site.oldest_minutes = std::max(site.oldest_minutes, GoroutineWaitMinutes(in, g));
  }
  std::vector<Site> out;
  for (auto& [key, site] : by_key) out.push_back(std::move(site));
  std::stable_sort(out.begin(), out.end(),
                   [](const Site& a, const Site& b) { return a.count > b.count; });
  return out;
}

nlohmann::ordered_json ReadJson(const GoroutineReadStats& s) {
  return {{"allglen", s.allglen},     {"dead", s.dead},
          {"system", s.system},       {"running", s.running},
          {"retried", s.retried},     {"dropped", s.dropped},
          {"truncated", s.truncated}, {"bytes_read", s.bytes_read}};
}

nlohmann::ordered_json GoroutineJsonOf(const GoroutineDumpInput& in, GoroutineSymbols& symbols,
                                       const Goroutine& g) {
  nlohmann::ordered_json j{{"id", g.goid},
                           {"state", GoroutineState(in, g)},
                           {"wait_minutes", GoroutineWaitMinutes(in, g)},
                           {"locked_to_thread", g.locked_to_thread},
                           {"on_cpu", g.on_cpu}};
  nlohmann::ordered_json labels = nlohmann::ordered_json::object();
  for (const auto& [k, v] : g.labels) labels[k] = v;
  j["labels"] = std::move(labels);
  if (std::optional<GoroutineCreator> c = symbols.CreatedBy(g)) {
    j["created_by"] = {{"function", c->function},
                       {"file", c->file},
                       {"line", c->line},
                       {"goroutine", c->parent_goid}};
  }
  nlohmann::ordered_json frames = nlohmann::ordered_json::array();
  for (const GoroutineFrame& f : symbols.Frames(g)) {
    frames.push_back({{"function", f.function},
                      {"file", f.file},
                      {"line", f.line},
                      {"inlined", f.inlined},
                      {"runtime_hidden", !f.shown}});
  }
  j["frames"] = std::move(frames);
  return j;
}

}  // namespace

std::string GoroutineCreatorText(const std::optional<GoroutineCreator>& c) {
  if (!c) return "(no creator shown)";
  return c->function + " at " + c->file + ":" + std::to_string(c->line);
}

std::string GoroutineCreatorText(const GoroutineDumpInput& in, const Goroutine& g) {
  return GoroutineCreatorText(GoroutineCreatedBy(in, g));
}

std::string GoroutineTopText(const GoroutineDumpInput& in, const GoroutineSnapshot& snapshot) {
  const int64_t total = static_cast<int64_t>(snapshot.goroutines.size());
  std::string out = "goroutines: " + std::to_string(total) + " (" +
                    std::to_string(snapshot.stats.running) +
                    " running on a CPU, listed without a stack; " +
                    std::to_string(snapshot.stats.dropped) + " dropped while read)\n";
  char line[96];
  std::snprintf(line, sizeof line, "%10s %7s %8s  %-24s %s\n", "count", "share", "oldest", "state",
                "created by");
  out += line;
  for (const Site& s : Sites(in, snapshot)) {
    std::snprintf(line, sizeof line, "%10lld %6.2f%% %4lld min  %-24s ",
                  static_cast<long long>(s.count), total ? 100.0 * s.count / total : 0.0,
                  static_cast<long long>(s.oldest_minutes), ValidUtf8(s.state).c_str());
    out += line + ValidUtf8(s.created_by) + "\n";
  }
  return out;
}

std::string GoroutineJson(const GoroutineDumpInput& in, const GoroutineSnapshot& snapshot) {
  nlohmann::ordered_json j{{"goroutines", snapshot.goroutines.size()},
                           {"read", ReadJson(snapshot.stats)}};
  nlohmann::ordered_json sites = nlohmann::ordered_json::array();
  for (const Site& s : Sites(in, snapshot)) {
    sites.push_back({{"created_by", s.created_by},
                     {"state", s.state},
                     {"count", s.count},
                     {"oldest_wait_minutes", s.oldest_minutes}});
  }
  j["sites"] = std::move(sites);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  GoroutineSymbols symbols(in);
  for (const Goroutine& g : snapshot.goroutines) list.push_back(GoroutineJsonOf(in, symbols, g));
  j["list"] = std::move(list);
  return JsonText(j, 1) + "\n";
}

}  // namespace goheap2pprof
