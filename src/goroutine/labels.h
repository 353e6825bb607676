// A goroutine's pprof labels (g.labels) read from the target: a
// map[string]string up to Go 1.23, a sorted []label from 1.24
// (go-goroutine-facts.md §8). Label maps are built once and never changed,
// but the goroutine may die and its labels be freed while we read, so a read
// that does not add up (a count that disagrees, an unmapped string) is a
// failure for the caller to retry, not an error.
//
//   std::optional<Labels> l = ReadLabels(mem, g_labels_pointer, LabelsEncoding::kSlice);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proc/memory_reader.h"
#include "runtime/goroutine_layout.h"

namespace goheap2pprof {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Limits: a goroutine's labels are few and short; these only keep a corrupt
// or stale pointer from making us read megabytes.
inline constexpr uint64_t kMaxLabels = 1024;
inline constexpr uint64_t kMaxLabelBytes = 64 * 1024;

// The labels `pointer` (g.labels, non-zero) refers to, in the target's order
// (a map's iteration order is its own; the caller sorts where Go does).
// nullopt when they cannot be read consistently.
std::optional<Labels> ReadLabels(MemoryReader& mem, uint64_t pointer, LabelsEncoding encoding);

}  // namespace goheap2pprof
