// Transparent huge pages for the large buffers a capture fills. Fresh memory
// is what a cold capture pays most for: with THP in "madvise" mode, as on
// most distributions, every 4 KiB of it costs a page fault and a page clear
// unless its owner advises huge pages (one fault per 2 MiB). The owners of
// the large buffers (the bucket records, the stack store, the location runs,
// the inflated DWARF) call these before they fill them.
//
//   std::vector<Bucket> buckets;
//   GrowWithHugePages(buckets, 1);  // before each push_back
//   buckets.push_back(b);
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

namespace goheap2pprof {

// The transparent huge page size on x86-64 and arm64 with 4 KiB pages.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Advises huge pages for the 2 MiB pages that [p, p + bytes) touches, for a
// range of 2 MiB or more. Memory around the range in the same 2 MiB gets the
// hint too: glibc's large blocks start 16 bytes into a mapping that Linux
// aligns to 2 MiB, so rounding inwards would leave out their first 2 MiB. A
// hint: without THP nothing changes.
void AdviseHugePages(const void* p, size_t bytes);

// Makes room in v for `extra` more elements, at least doubling its capacity
// as push_back does. Storage of 2 MiB or more is advised before anything is
// written to it, the old elements included.
template <class T>
void GrowWithHugePages(std::vector<T>& v, size_t extra) {
  if (v.capacity() - v.size() >= extra) return;
  const size_t want = std::max(v.size() + extra, 2 * v.capacity());
  if (want * sizeof(T) < kHugePageBytes) {
    v.reserve(want);
    return;
  }
  std::vector<T> bigger;
  bigger.reserve(want);
  AdviseHugePages(bigger.data(), bigger.capacity() * sizeof(T));
  bigger.insert(bigger.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
  v.swap(bigger);
}

// GLIBC_TUNABLES for a process whose whole malloc should ask for huge pages
// (an agent's capture worker, which keeps its buffers from one capture to
// the next): `current` (the variable's value, or null) with
// glibc.malloc.hugetlb=1 added; `current` unchanged when it sets that
// tunable already, the user's choice.
std::string TunablesWithMallocHugePages(const char* current);

}  // namespace goheap2pprof
