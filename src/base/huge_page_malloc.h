// Start-up switch that makes glibc's malloc ask for transparent huge pages.
// A capture fills ~100 MiB of fresh heap (bucket records, the profile
// message); with THP in "madvise" mode, as on most distributions, every 4 KiB
// of it costs a page fault and a page clear, about a third of a cold
// capture's CPU. glibc (>= 2.35) advises huge pages for its heap when the
// tunable glibc.malloc.hugetlb=1 is set, which it reads only at process
// start, so main re-executes the tool once with it set.
//
//   int main(int argc, char** argv) { ReexecWithHugePageMalloc(argv); ... }
#pragma once

namespace goheap2pprof {

// Re-executes /proc/self/exe with argv and GLIBC_TUNABLES extended by
// glibc.malloc.hugetlb=1, unless that tunable is already set (by the user or
// by the first execution). Returns only if it did nothing or the exec failed;
// the tool then runs on as before, with small pages.
void ReexecWithHugePageMalloc(char** argv);

}  // namespace goheap2pprof
