#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace goheap2pprof {

void AdviseHugePages(const void* p, size_t bytes) {
  if (p == nullptr || bytes < kHugePageBytes) return;
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = begin & ~uintptr_t{kHugePageBytes - 1};
  const uintptr_t last = (begin + bytes + kHugePageBytes - 1) & ~uintptr_t{kHugePageBytes - 1};
  // Unmapped parts of the range fail (ENOMEM) and the rest is advised.
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace goheap2pprof
