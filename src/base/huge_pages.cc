#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>

namespace goheap2pprof {

void AdviseHugePages(const void* p, size_t bytes) {
  if (p == nullptr || bytes < kHugePageBytes) return;
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = begin & ~uintptr_t{kHugePageBytes - 1};
  const uintptr_t last = (begin + bytes + kHugePageBytes - 1) & ~uintptr_t{kHugePageBytes - 1};
  // Unmapped parts of the range fail (ENOMEM) and the rest is advised.
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

std::string TunablesWithMallocHugePages(const char* current) {
  if (current == nullptr || *current == '\0') return "glibc.malloc.hugetlb=1";
  if (std::strstr(current, "glibc.malloc.hugetlb") != nullptr) return current;
  return std::string(current) + ":glibc.malloc.hugetlb=1";
}

}  // namespace goheap2pprof
