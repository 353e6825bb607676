#!/usr/bin/env bash
# What `goheap2pprof goroutines` costs on a large target, against the
# target's own goroutine profile (issue 41): testdata/goroutines in its
# "bench" mode, N goroutines (100,000) parked under 30 frames of their own.
# Prints a table; no thresholds.
#
#   bash bench/goroutines.sh                 # BUILD_DIR=build, N=100000, RUNS=3
#   BUILD_DIR=build-rel N=10000 RUNS=5 bash bench/goroutines.sh
#
# Use a release build without test seams for figures (docs/goroutines.md).
#
# Rows: ours for --format pprof, debug1 and debug2, then the target's own
# WriteTo at debug=1 and debug=2 (timed inside the target, three writes each,
# to io.Discard; see testdata/goroutines/bench.go). Each figure is the median
# of the runs.
#
# Columns:
#   wall s        elapsed time of the capture (ours) or of the write (theirs)
#   CPU s         our user+system CPU (GNU time), or the target's over its write
#   peak RSS MiB  our maximum resident set (GNU time's %M); "-" for the target
#   target CPU s  the target's user+system CPU (/proc/<pid>/stat) over our
#                 capture, the target otherwise idle; for its own write, the
#                 write's CPU
#   paused s      how long the target's goroutines were stopped: 0 for ours
#                 (never stopped); for its own, the stop-the-world pauses
#                 other than the GC's that runtime/metrics counted over the
#                 write (Go 1.22+; "-" before), total and longest (bucket bounds)
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
source "$src/bench/lib.sh"
n=${N:-100000}
runs=${RUNS:-3}
build=${BUILD_DIR:-$src/build}
tool=$build/goheap2pprof
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"
work=$(mktemp -d /tmp/goroutines-bench.XXXXXX)
target_pid=""
trap 'bench_stop "$target_pid"; rm -rf "$work"' EXIT

[[ -x $tool ]] || { echo "build the tool first: cmake --build $build" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
(cd "$src/testdata/goroutines" && CGO_ENABLED=0 "${go_cmd[@]}" build -o "$work/goroutines" .) ||
  exit 1
mkdir -p "$work/out"
"$work/goroutines" "$work/out" "$n" bench >"$work/target.out" 2>&1 &
target_pid=$!
for _ in $(seq 1 1800); do
  [[ -e $work/out/ready ]] && break
  sleep 0.1
done
[[ -e $work/out/ready ]] || { echo "the target did not start" >&2; exit 1; }

# target_cpu: the target's utime+stime in seconds.
target_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); print ($12 + $13) / hz}' \
    "/proc/$target_pid/stat"
}

# median: of the numbers on standard input, to three decimals.
median() {
  sort -g | awk '{v[NR] = $1} END {m = v[int((NR + 1) / 2)]
    print (!NR || m == "-") ? "-" : (m == int(m) ? m : sprintf("%.3f", m))}'
}

printf 'goroutines: %s (30 frames each), %s, Go %s\n' "$n" "$tool" \
  "$("${go_cmd[@]}" env GOVERSION)"
printf '%-16s %8s %8s %13s %13s %20s\n' what "wall s" "CPU s" "peak RSS MiB" "target CPU s" \
  "paused s (longest)"
for format in pprof debug1 debug2; do
  : >"$work/rows"
  for _ in $(seq 1 "$runs"); do
    before=$(target_cpu)
    /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$tool" goroutines "$target_pid" \
      --format "$format" -o "$work/ours" 2>/dev/null || { echo "capture failed" >&2; exit 1; }
    after=$(target_cpu)
    read -r wall user sys rss <"$work/time"
    echo "$wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') $((rss / 1024)) \
$(awk -v a="$after" -v b="$before" 'BEGIN {print a - b}')" >>"$work/rows"
  done
  printf '%-16s %8s %8s %13s %13s %20s\n' "ours $format" \
    "$(cut -d' ' -f1 "$work/rows" | median)" "$(cut -d' ' -f2 "$work/rows" | median)" \
    "$(cut -d' ' -f3 "$work/rows" | median)" "$(cut -d' ' -f4 "$work/rows" | median)" 0
done
for debug in 1 2; do
  grep "^debug=$debug " "$work/out/own.txt" >"$work/rows"
  col() { awk -v c="$1" '{print $c}' "$work/rows" | median; }
  printf '%-16s %8s %8s %13s %13s %20s\n' "target debug=$debug" "$(col 2)" "$(col 3)" - "$(col 3)" \
    "$(col 6) ($(col 5))"
done
