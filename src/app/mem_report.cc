#include "app/mem_report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "base/utf8.h"

namespace goheap2pprof {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kClasses = "/memory/classes/";
constexpr std::string_view kBytes = ":bytes";

// One node of the /memory/classes/ tree: a runtime/metrics leaf, or a
// folder whose size is the sum of the leaves below it.
struct ClassNode {
  std::string name;
  uint64_t bytes = 0;
  std::map<std::string, ClassNode> children;
};

ClassNode ClassTree(const GoRuntimeStats& s, std::optional<uint64_t>& total) {
  ClassNode root;
  for (const GoMetric& m : s.metrics) {
    std::string_view n = m.name;
    if (!n.starts_with(kClasses) || !n.ends_with(kBytes) || m.kind != GoMetric::Kind::kUint64) {
      continue;
    }
    n = n.substr(kClasses.size(), n.size() - kClasses.size() - kBytes.size());
    if (n == "total") {
      total = m.u;
      continue;
    }
    ClassNode* node = &root;
    while (!n.empty()) {
      const size_t slash = n.find('/');
      const std::string part(n.substr(0, slash));
      n = slash == std::string_view::npos ? std::string_view() : n.substr(slash + 1);
      node = &node->children[part];
      node->name = part;
      node->bytes += m.u;  // wraps as the runtime's own sums do
    }
  }
  return root;
}

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * static_cast<double>(part) / whole);
  return buf;
}

std::string Row(const std::string& size, uint64_t bytes, const std::string& share, int depth,
                const std::string& name) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%7s %15" PRIu64 " %7s  %*s%s\n", size.c_str(), bytes,
                share.c_str(), 2 * depth, "", name.c_str());
  return buf;
}

// Pre-order, the larger sibling first, as `du | sort -h` reads.
void AppendTree(std::string& out, const ClassNode& node, uint64_t total, int depth) {
  std::vector<const ClassNode*> kids;
  for (const auto& [name, child] : node.children) kids.push_back(&child);
  std::stable_sort(kids.begin(), kids.end(),
                   [](const ClassNode* a, const ClassNode* b) { return a->bytes > b->bytes; });
  for (const ClassNode* k : kids) {
    out += Row(HumanSize(k->bytes), k->bytes, Percent(k->bytes, total), depth, k->name);
    AppendTree(out, *k, total, depth + 1);
  }
}

std::string Size(std::optional<uint64_t> v) { return v ? HumanSize(*v) : "?"; }

void AppendRuntime(std::string& out, const MemReport& r) {
  std::optional<uint64_t> total;
  const ClassNode tree = ClassTree(r.stats, total);
  out += "Go runtime memory (runtime/metrics /memory/classes/, shares of the total):\n";
  out += "   SIZE           BYTES   SHARE  CLASS\n";
  const uint64_t t = total.value_or(tree.bytes);
  out += Row(HumanSize(t), t, Percent(t, t), 0, "total");
  AppendTree(out, tree, t, 1);
}

constexpr uint64_t kNoLimit = uint64_t{INT64_MAX};

void AppendHeap(std::string& out, const MemReport& r) {
  const GoRuntimeStats& s = r.stats;
  const std::optional<uint64_t> live = s.Uint("/gc/heap/live:bytes");
  const uint64_t goal = s.Uint("/gc/heap/goal:bytes").value_or(s.mem.next_gc);
  const std::optional<uint64_t> limit = s.Uint("/gc/gomemlimit:bytes");
  out += "\nHeap:\n";
  if (live) {
    out += "  live        " + HumanSize(*live) + " (" + std::to_string(*live) +
           ") marked live by the last GC, " + Percent(*live, goal) + " of the goal\n";
  } else {
    out += "  live        ? (/gc/heap/live:bytes is Go 1.21+; " + s.go_version + " lacks it)\n";
  }
  out += "  allocated   " + HumanSize(s.mem.heap_alloc) + " (" + std::to_string(s.mem.heap_alloc) +
         ") HeapAlloc: live plus garbage not yet swept\n";
  out += "  goal        " + HumanSize(goal) + " (" + std::to_string(goal) +
         ") the heap size at which the next GC is due\n";
  if (!limit) {
    out += "  GOMEMLIMIT  ? (/gc/gomemlimit:bytes is Go 1.21+; " + s.go_version + " lacks it)\n";
  } else if (*limit >= kNoLimit) {
    out += "  GOMEMLIMIT  none\n";
  } else {
    std::optional<uint64_t> t = s.Uint("/memory/classes/total:bytes");
    out += "  GOMEMLIMIT  " + HumanSize(*limit) + " (" + std::to_string(*limit) + ")" +
           (t ? ", the runtime's total is " + Percent(*t, *limit) + " of it" : "") + "\n";
  }
  if (std::optional<uint64_t> gogc = s.Uint("/gc/gogc:percent")) {
    out += "  GOGC        " +
           (*gogc > uint64_t{INT32_MAX} ? std::string("off") : std::to_string(*gogc)) + "\n";
  }
  out += "  GCs         " + std::to_string(s.mem.num_gc) + " (" +
         std::to_string(s.mem.num_forced_gc) + " forced); goroutines " +
         std::to_string(s.num_goroutine) + "; GOMAXPROCS " + std::to_string(s.gomaxprocs) + "\n";
}

void AppendProcess(std::string& out, const MemReport& r) {
  if (!r.process) {
    out += "\nProcess: no RSS figures (" +
           (r.core.empty() ? std::string("/proc/<pid>/status unreadable")
                           : "read from a core file, which keeps no resident-set figures") +
           ")\n";
    return;
  }
  const ProcStatusMemory& p = *r.process;
  out += "\nProcess (/proc/" + std::to_string(r.pid) + "/status):\n";
  out += "  RSS         " + Size(p.vm_rss) + " (anon " + Size(p.rss_anon) + ", file " +
         Size(p.rss_file) + ", shmem " + Size(p.rss_shmem) + ")";
  if (p.vm_rss && r.stats.Uint("/memory/classes/total:bytes")) {
    out += "; the Go runtime's total is " +
           Percent(*r.stats.Uint("/memory/classes/total:bytes"), *p.vm_rss) + " of RSS";
  }
  out += "\n  peak RSS    " + Size(p.vm_hwm) + " (VmHWM)\n";
  out += "\nNot managed by the Go runtime:\n";
  if (std::optional<uint64_t> not_go = NotManagedByGo(r)) {
    const MemStats& m = r.stats.mem;
    out += "  " + HumanSize(*not_go) + " (" + std::to_string(*not_go) + ") = RSS anon " +
           Size(p.rss_anon) + " - (Sys " + HumanSize(m.sys) + " - HeapReleased " +
           HumanSize(m.heap_released) + "), at least 0\n" +
           "  resident anonymous memory the runtime did not map: cgo and C libraries' malloc,\n"
           "  syscall.Mmap, non-Go thread stacks, written .data/.bss pages; a lower bound\n";
  } else {
    out += "  ? (no RssAnon line in /proc/<pid>/status: Linux before 4.5)\n";
  }
}

void AppendCgroup(std::string& out, const MemReport& r) {
  if (!r.cgroup) {
    if (r.core.empty()) out += "\nCgroup: no memory cgroup visible for this process\n";
    return;
  }
  const CgroupFigures& c = *r.cgroup;
  out += "\nCgroup (" + c.version + " " + c.dir + "):\n";
  out += "  usage       " + Size(c.usage);
  if (c.limit) {
    out += " of limit " + HumanSize(*c.limit) +
           (c.usage ? " (" + Percent(*c.usage, *c.limit) + ")" : std::string());
  } else {
    out += ", no limit";
  }
  if (c.usage && r.process && r.process->vm_rss) {
    out += "; this process's RSS is " + Percent(*r.process->vm_rss, *c.usage) + " of it";
  }
  out += "\n";
}

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

constexpr size_t kTopStackSites = 10;

void AppendStacks(std::string& out, const MemReport& r) {
  if (!r.stacks) {
    if (!r.stacks_error.empty()) out += "\nGoroutine stacks: not read (" + r.stacks_error + ")\n";
    return;
  }
  const GoroutineStacks& g = *r.stacks;
  const uint64_t inuse = r.stats.mem.stack_inuse;
  out += "\nGoroutine stacks by creation site (g.stack.hi - g.stack.lo, summed):\n";
  out += "  " + HumanSize(g.bytes) + " (" + std::to_string(g.bytes) + ") in " +
         std::to_string(g.goroutines) + " goroutines, " + Percent(g.bytes, inuse) +
         " of StackInuse " + HumanSize(inuse) + "\n";
  out += "  the rest: " + std::to_string(g.system) + " system goroutines, " +
         std::to_string(g.running) + " on a CPU and " + std::to_string(g.dropped) +
         " unreadable (left out), each M's g0 and signal stacks, stacks kept for reuse\n";
  out += "   SIZE           BYTES  GOROUTINES  CREATED BY\n";
  for (size_t i = 0; i < g.sites.size() && i < kTopStackSites; ++i) {
    const StackSite& s = g.sites[i];
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%7s %15" PRIu64 " %11" PRIu64 "  ", HumanSize(s.bytes).c_str(),
                  s.bytes, s.goroutines);
    out += buf + s.created_by + "\n";
  }
  if (g.sites.size() > kTopStackSites) {
    out += "  ... " + std::to_string(g.sites.size() - kTopStackSites) +
           " more sites (--format json lists them all)\n";
  }
}

Json StacksJson(const MemReport& r) {
  if (!r.stacks) return r.stacks_error.empty() ? Json(nullptr) : Json{{"error", r.stacks_error}};
  const GoroutineStacks& g = *r.stacks;
  Json sites = Json::array();
  for (const StackSite& s : g.sites) {
    sites.push_back(
        {{"created_by", s.created_by}, {"goroutines", s.goroutines}, {"bytes", s.bytes}});
  }
  return {{"goroutines", g.goroutines},
          {"bytes", g.bytes},
          {"stack_inuse_bytes", r.stats.mem.stack_inuse},
          {"left_out", {{"system", g.system}, {"running", g.running}, {"dropped", g.dropped}}},
          {"sites", std::move(sites)}};
}

}  // namespace

Json MemStatsJson(const MemStats& m) {
  Json j;
  j["Alloc"] = m.alloc;
  j["TotalAlloc"] = m.total_alloc;
  j["Sys"] = m.sys;
  j["Lookups"] = m.lookups;
  j["Mallocs"] = m.mallocs;
  j["Frees"] = m.frees;
  j["HeapAlloc"] = m.heap_alloc;
  j["HeapSys"] = m.heap_sys;
  j["HeapIdle"] = m.heap_idle;
  j["HeapInuse"] = m.heap_inuse;
  j["HeapReleased"] = m.heap_released;
  j["HeapObjects"] = m.heap_objects;
  j["StackInuse"] = m.stack_inuse;
  j["StackSys"] = m.stack_sys;
  j["MSpanInuse"] = m.mspan_inuse;
  j["MSpanSys"] = m.mspan_sys;
  j["MCacheInuse"] = m.mcache_inuse;
  j["MCacheSys"] = m.mcache_sys;
  j["BuckHashSys"] = m.buck_hash_sys;
  j["GCSys"] = m.gc_sys;
  j["OtherSys"] = m.other_sys;
  j["NextGC"] = m.next_gc;
  j["LastGC"] = m.last_gc;
  j["PauseTotalNs"] = m.pause_total_ns;
  j["PauseNs"] = m.pause_ns;
  j["PauseEnd"] = m.pause_end;
  j["NumGC"] = m.num_gc;
  j["NumForcedGC"] = m.num_forced_gc;
  j["GCCPUFraction"] = m.gc_cpu_fraction;
  j["EnableGC"] = m.enable_gc;
  j["DebugGC"] = m.debug_gc;
  Json by_size = Json::array();
  for (const MemStats::SizeClass& c : m.by_size) {
    by_size.push_back({{"Size", c.size}, {"Mallocs", c.mallocs}, {"Frees", c.frees}});
  }
  j["BySize"] = std::move(by_size);
  return j;
}

std::optional<uint64_t> NotManagedByGo(const MemReport& r) {
  if (!r.process || !r.process->rss_anon) return std::nullopt;
  const MemStats& m = r.stats.mem;
  const uint64_t go = m.sys - std::min(m.heap_released, m.sys);
  return *r.process->rss_anon - std::min(go, *r.process->rss_anon);
}

std::string HumanSize(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes);
  static constexpr char kUnits[] = "KMGTPE";
  int u = 0;
  while (u < 5 && bytes >> (10 * (u + 1)) >= 1024) ++u;
  // Integer arithmetic, rounding up: tenths of the unit, then whole units.
  const unsigned __int128 unit = static_cast<unsigned __int128>(1) << (10 * (u + 1));
  const uint64_t tenths =
      static_cast<uint64_t>((static_cast<unsigned __int128>(bytes) * 10 + unit - 1) / unit);
  char buf[32];
  if (tenths < 100) {
    std::snprintf(buf, sizeof(buf), "%" PRIu64 ".%" PRIu64 "%c", tenths / 10, tenths % 10,
                  kUnits[u]);
    return buf;
  }
  const uint64_t whole = static_cast<uint64_t>((bytes + unit - 1) / unit);
  if (whole >= 1024 && u < 5) {
    std::snprintf(buf, sizeof(buf), "1.0%c", kUnits[u + 1]);
  } else {
    std::snprintf(buf, sizeof(buf), "%" PRIu64 "%c", whole, kUnits[u]);
  }
  return buf;
}

std::string RenderMemText(const MemReport& r) {
  std::string out;
  out += r.core.empty() ? "pid " + std::to_string(r.pid)
                        : "core " + r.core + ", pid " + std::to_string(r.pid);
  if (!r.comm.empty()) out += " (" + r.comm + ")";
  out += ", " + r.stats.go_version + "\n\n";
  AppendRuntime(out, r);
  AppendHeap(out, r);
  AppendStacks(out, r);
  AppendProcess(out, r);
  AppendCgroup(out, r);
  return ValidUtf8(out);  // comm, the cgroup's path and the version are the target's bytes
}

std::string RenderMemJson(const MemReport& r) {
  Json j;
  j["pid"] = r.pid;
  j["comm"] = r.comm;
  j["core"] = r.core.empty() ? Json(nullptr) : Json(r.core);
  j["go_version"] = r.stats.go_version;
  Json metrics = Json::object();
  for (const GoMetric& m : r.stats.metrics) {
    metrics[m.name] = m.kind == GoMetric::Kind::kUint64 ? Json(m.u) : Json(m.f);
  }
  j["metrics"] = std::move(metrics);
  j["memstats"] = MemStatsJson(r.stats.mem);
  j["num_goroutine"] = r.stats.num_goroutine;
  j["gomaxprocs"] = r.stats.gomaxprocs;
  j["warnings"] = r.stats.warnings;
  if (r.process) {
    const ProcStatusMemory& p = *r.process;
    j["process"] = {{"rss_bytes", OrNull(p.vm_rss)},
                    {"rss_anon_bytes", OrNull(p.rss_anon)},
                    {"rss_file_bytes", OrNull(p.rss_file)},
                    {"rss_shmem_bytes", OrNull(p.rss_shmem)},
                    {"peak_rss_bytes", OrNull(p.vm_hwm)}};
  } else {
    j["process"] = nullptr;
  }
  j["not_managed_by_go_bytes"] = OrNull(NotManagedByGo(r));
  j["goroutine_stacks"] = StacksJson(r);
  if (r.cgroup) {
    j["cgroup"] = {{"version", r.cgroup->version},
                   {"dir", r.cgroup->dir},
                   {"usage_bytes", OrNull(r.cgroup->usage)},
                   {"limit_bytes", OrNull(r.cgroup->limit)}};
  } else {
    j["cgroup"] = nullptr;
  }
  return JsonText(j, 2) + "\n";
}

}  // namespace goheap2pprof
