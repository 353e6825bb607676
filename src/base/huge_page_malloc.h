// Start-up switch that makes glibc's malloc ask for transparent huge pages.
// A capture fills ~100 MiB of fresh heap (bucket records, the profile
// message); with THP in "madvise" mode, as on most distributions, every 4 KiB
// of it costs a page fault and a page clear, about a third of a cold
// capture's CPU. glibc (>= 2.35) advises huge pages for its heap when the
// tunable glibc.malloc.hugetlb=1 is set, which it reads only at process
// start, so main re-executes the tool once with it set.
//
// What that costs and saves (bench/startup.sh, 2026-12-01, 9 paired rounds at
// 100k and 250k buckets): the second start costs about 9 ms of CPU in the
// dynamic build (the loader's relocations of libprotobuf, libstdc++,
// libcrypto) and about 2 ms in the static one; malloc's huge pages save 40 to
// 110 ms of CPU (minor faults 24k -> 5k at 100k, 54k -> 6k at 250k), and 87%
// of the faults they save are in the bucket records and the profile message.
// So the exec stays until those buffers are mapped with MADV_HUGEPAGE (or not
// filled at all) by the code that owns them; re-run bench/startup.sh then,
// and remove this when "no re-exec" is no slower.
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
