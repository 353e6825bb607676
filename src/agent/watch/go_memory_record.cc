#include "agent/watch/go_memory_record.h"

#include <limits>
#include <string>
#include <string_view>

#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

constexpr std::string_view kClasses = "/memory/classes/";
constexpr std::string_view kTotal = "/memory/classes/total:bytes";

nlohmann::json OrNull(std::optional<uint64_t> v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json GoMemoryRecord(const GoRuntimeStats& stats, std::optional<uint64_t> rss_anon) {
  nlohmann::json classes = nlohmann::json::object();
  for (const GoMetric& m : stats.metrics) {
    if (m.kind == GoMetric::Kind::kUint64 && m.name.starts_with(kClasses) && m.name != kTotal) {
      classes[m.name] = m.u;
    }
  }
  const std::optional<uint64_t> total = stats.Uint(kTotal);
  nlohmann::json limit = nullptr;
  // math.MaxInt64 is the runtime's "no limit".
  if (const std::optional<uint64_t> l = stats.Uint("/gc/gomemlimit:bytes");
      l && *l != uint64_t{std::numeric_limits<int64_t>::max()}) {
    limit = *l;
  }
  nlohmann::json out = {
      {"go_version", stats.go_version},
      {"classes", std::move(classes)},
      {"total", OrNull(total)},
      {"live_heap", OrNull(stats.Uint("/gc/heap/live:bytes"))},
      {"heap_goal", OrNull(stats.Uint("/gc/heap/goal:bytes"))},
      {"gomemlimit", std::move(limit)},
      {"rss_anon", OrNull(rss_anon)},
      {"not_go", nullptr},
  };
  const std::optional<uint64_t> released = stats.Uint("/memory/classes/heap/released:bytes");
  if (rss_anon && total && released && *released <= *total) {
    const uint64_t go_resident = *total - *released;
    out["not_go"] = static_cast<int64_t>(*rss_anon) - static_cast<int64_t>(go_resident);
  }
  return out;
}

std::optional<uint64_t> RssAnonBytes(pid_t pid) {
  std::optional<ProcStatusMemory> m = ReadProcStatusMemory(pid);
  return m ? m->rss_anon : std::nullopt;
}

}  // namespace goheap2pprof
