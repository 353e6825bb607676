#!/usr/bin/env bash
# What reading a Go process's memory statistics from outside costs (issue
# 23: under 5 ms for a 10 GiB heap, touching no page of the heap), for
# targets holding growing heaps: testdata/memstats with -heap-mib N (N MiB of
# 512-byte objects retained, plus its varied heap). For each size, RUNS
# reads in one memstats_dump process (the executable's analysis, DWARF
# included, happens once before them, as in serve); prints the wall time
# of the analysis and of finding the memory-statistics variables after it
# (from the runtime's code when stripped), the first read's, the median and
# the maximum of all reads, and the distinct 4 KiB pages, read calls and
# bytes of the last read. No thresholds.
#
#   bash bench/memstats_read.sh
#   SIZES="1024 10240" RUNS=50 bash bench/memstats_read.sh
#
# Environment:
#   SIZES      heap sizes in MiB (default "0 1024"; 10240 needs ~11 GiB free)
#   RUNS       reads per size (default 30)
#   BUILD_DIR  the build with tools/memstats_dump (default <repo>/build)
#   GO         the Go command for the target (default "env GOTOOLCHAIN=local go")
#   STRIPPED   1: build the target with -ldflags="-s -w" (no symbols, no DWARF)
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$src/bench/lib.sh"
build=${BUILD_DIR:-$src/build}
dump=$build/memstats_dump
runs=${RUNS:-30}
read -r -a go <<<"${GO:-env GOTOOLCHAIN=local go}"
if [[ ! -x $dump ]]; then
  echo "memstats_read: $dump not built (cmake --build $build --target memstats_dump)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'bench_stop ${target:-}; rm -rf "$work"' EXIT
ldflags=()
[[ ${STRIPPED:-0} == 1 ]] && ldflags=(-ldflags="-s -w")
(cd "$src/testdata/memstats" && CGO_ENABLED=0 "${go[@]}" build "${ldflags[@]}" -o "$work/memstats" .) ||
  exit 1
echo "target: testdata/memstats built with $("${go[@]}" version) ${ldflags[*]}"
echo "machine: $(nproc) CPUs, $(uname -r)"
printf '%-8s %13s %11s %12s %8s %9s %7s %5s %5s %6s %8s\n' heap_MiB HeapAlloc_MiB \
  analysis_ms variables_ms first_ms median_ms max_ms pages calls bytes attempts
for size in ${SIZES:-0 1024}; do
  mkfifo "$work/in.$size"
  exec {fd}<>"$work/in.$size"
  "$work/memstats" -out "$work/view.json" -heap-mib "$size" <"$work/in.$size" >"$work/out.$size" &
  target=$!
  for _ in $(seq 1 1200); do
    grep -q '^READY' "$work/out.$size" 2>/dev/null && break
    sleep 0.1
  done
  if ! grep -q '^READY' "$work/out.$size"; then
    echo "memstats_read: the target of $size MiB did not start" >&2
    exit 1
  fi
  "$dump" --repeat "$runs" "$target" >"$work/read.$size.json" || exit 1
  python3 - "$work/read.$size.json" "$size" <<'PY'
import json, re, statistics, sys
r = json.load(open(sys.argv[1]))
ms = r["read_ms"]
note = [n for n in r["notes"] if n.startswith("memory statistics read in")][-1]
m = re.search(r"(\d+) attempt\(s\), (\d+) read calls, (\d+) bytes, (\d+) pages", note)
print("%-8s %13.0f %11.3f %12.3f %8.3f %9.3f %7.3f %5s %5s %6s %8s" % (
    sys.argv[2], r["memstats"]["HeapAlloc"] / 2**20, r["analysis_ms"], r["variables_ms"], ms[0],
    statistics.median(ms), max(ms), m.group(4), m.group(2), m.group(3), m.group(1)))
PY
  bench_stop "$target"
  target=
  exec {fd}>&-
done
