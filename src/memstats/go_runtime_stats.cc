#include "memstats/go_runtime_stats.h"

#include <algorithm>

namespace goheap2pprof {
namespace {

const GoMetric* Find(const std::vector<GoMetric>& metrics, std::string_view name) {
  auto it = std::find_if(metrics.begin(), metrics.end(),
                         [&](const GoMetric& m) { return m.name == name; });
  return it == metrics.end() ? nullptr : &*it;
}

}  // namespace

std::optional<uint64_t> GoRuntimeStats::Uint(std::string_view name) const {
  const GoMetric* m = Find(metrics, name);
  if (m == nullptr || m->kind != GoMetric::Kind::kUint64) return std::nullopt;
  return m->u;
}

std::optional<double> GoRuntimeStats::Float(std::string_view name) const {
  const GoMetric* m = Find(metrics, name);
  if (m == nullptr || m->kind != GoMetric::Kind::kFloat64) return std::nullopt;
  return m->f;
}

}  // namespace goheap2pprof
