#!/usr/bin/env bash
# Harmlessness under load (issue 5): the churn target (testdata/churn: many
# goroutines allocating and freeing, GC many times a second) reports its own
# throughput; this script measures it over windows of WINDOW seconds
#   - baseline: nobody profiles it,
#   - ours:     goheap2pprof captures it every 100 ms,
#   - curl:     its own /debug/pprof/heap is fetched every 100 ms,
#   - control:  goheap2pprof captures *another* process (an idle benchtarget
#               with a similar number of buckets) every 100 ms: the same
#               profiler work, but nothing read from the churn target,
# alternating the four ROUNDS times (so drifting background load hits all
# alike) and printing the median of each with the change from baseline. Each
# window also records the target's CPU time (utime+stime), so the table shows
# work items per CPU-second of the target as well: on a loaded machine the
# target's CPU share moves with everything else running, and "control" shows
# how much of a change comes from the machine rather than from the target.
#
#   bash bench/harm.sh                 # ~130 s
#   WINDOW=5 ROUNDS=1 bash bench/harm.sh
#
# With 2 or more CPUs the target is pinned to CPU 0 (GOMAXPROCS=1) and the
# profilers to the other CPUs, so the figure shows what a capture costs the
# target, not the machine: on a real server the profiler runs on another core
# too. PIN=0 turns that off. CHURN_ARGS: churn flags (default "-live 64 -gogc
# 50", tens of GCs a second; "" gives churn's own ~1000/s). PERIOD_MS (100) is
# the interval between the starts of two captures (or fetches).
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$src/bench/lib.sh"
build=${BUILD_DIR:-$src/build-bench}
window=${WINDOW:-10}
rounds=${ROUNDS:-3}
period_ms=${PERIOD_MS:-100}
pin=${PIN:-1}
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"
read -r -a churn_args <<<"${CHURN_ARGS--live 64 -gogc 50}"  # ~60 GC/s pinned to one CPU

die() {
  echo "harm: $*" >&2
  exit 1
}
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$build" -j"$(nproc)" --target goheap2pprof >/dev/null || die "build failed"
fi
tool=$build/goheap2pprof
[[ -x $tool ]] || die "$tool missing"
work=$(mktemp -d "${TMPDIR:-/tmp}/goheap2pprof-harm.XXXXXX")
target_pid=""
cleanup() {
  rm -f "$work/stop"
  bench_stop "${control_pid:-}" "$target_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
(cd "$src/testdata/churn" && "${go_cmd[@]}" build -o "$work/churn" .) || die "building testdata/churn failed"
(cd "$src/testdata/benchtarget" && "${go_cmd[@]}" build -o "$work/benchtarget" .) ||
  die "building testdata/benchtarget failed"
"$work/benchtarget" -buckets 300 >"$work/control.out" 2>&1 &
control_pid=$!

target_cpus="" profiler_cpus=""
ncpu=$(nproc)
if [[ $pin == 1 ]] && ((ncpu >= 2)) && command -v taskset >/dev/null; then
  target_cpus=0 profiler_cpus=1-$((ncpu - 1))
  taskset -c "$target_cpus" env GOMAXPROCS=1 "$work/churn" "${churn_args[@]}" >"$work/churn.out" 2>&1 &
else
  "$work/churn" "${churn_args[@]}" >"$work/churn.out" 2>&1 &
fi
target_pid=$!
until grep -q '^READY ' "$work/churn.out" 2>/dev/null; do
  kill -0 "$target_pid" 2>/dev/null || die "churn failed: $(cat "$work/churn.out")"
  sleep 0.1
done
read -r _ _ port <"$work/churn.out"
url=http://127.0.0.1:$port
run_profiler() {
  if [[ -n $profiler_cpus ]]; then taskset -c "$profiler_cpus" "$@"; else "$@"; fi
}

# poll <mode>: until $work/stop exists, start one capture (or fetch) every
# PERIOD_MS (back to back if one takes longer); counts them in $work/count.
poll() {
  local mode=$1 n=0 s e left
  while [[ ! -e $work/stop ]]; do
    s=$(date +%s%N)
    case $mode in
      ours) run_profiler "$tool" "$target_pid" -o "$work/p.pb.gz" --stats 2>>"$work/ours.stats" >/dev/null ;;
      control) run_profiler "$tool" "$control_pid" -o "$work/p.pb.gz" >/dev/null 2>&1 ;;
      curl) run_profiler curl -sf -o "$work/p.pb.gz" "$url/debug/pprof/heap" ;;
    esac
    n=$((n + 1))
    e=$(date +%s%N)
    left=$((period_ms * 1000000 - (e - s)))
    ((left > 0)) && sleep "$(awk -v ns=$left 'BEGIN {printf "%.3f", ns / 1e9}')"
  done
  echo "$n" >"$work/count"
}

# cpu_ticks <pid>: utime+stime of the whole process, in clock ticks.
cpu_ticks() {
  local stat
  stat=$(<"/proc/$1/stat") || return 1
  stat=${stat##*) }
  read -r -a f <<<"$stat"
  echo $((f[11] + f[12]))
}
clk_tck=$(getconf CLK_TCK)

# window <mode>: prints "items/s gcs/s profiles target-CPU-fraction".
window() {
  local mode=$1 a b c0 c1 poller=""
  rm -f "$work/stop" "$work/count"
  echo 0 >"$work/count"
  if [[ $mode != baseline ]]; then
    poll "$mode" &
    poller=$!
    sleep 0.5  # the first capture's start-up is not part of the window
  fi
  a=$(curl -sf "$url/stats") || die "churn /stats failed"
  c0=$(cpu_ticks "$target_pid")
  sleep "$window"
  b=$(curl -sf "$url/stats") || die "churn /stats failed"
  c1=$(cpu_ticks "$target_pid")
  touch "$work/stop"
  [[ -n $poller ]] && wait "$poller"
  echo "$a $b $(cat "$work/count") $((c1 - c0))" |
    awk -v hz="$clk_tck" '{d = ($12 - $6) / 1e9; printf "%.0f %.1f %d %.3f\n", ($8 - $2) / d, ($10 - $4) / d, $13, $14 / hz / d}'
}

sleep 2  # steady state
modes="baseline ours curl control"
declare -A thr gcs count share eff
for ((r = 1; r <= rounds; r++)); do
  for mode in $modes; do
    read -r t g c cpu < <(window "$mode")
    echo "round $r $mode: $t items/s, $g GC/s, $c profiles, target CPU $cpu" >&2
    thr[$mode]+="$t " gcs[$mode]+="$g " count[$mode]+="$c " share[$mode]+="$cpu "
    eff[$mode]+="$(awk -v t="$t" -v c="$cpu" 'BEGIN {printf "%.0f", (c > 0 ? t / c : 0)}') "
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
torn=$(awk '/^  walks / {n++; if ($2 > 1) r++; t += substr($3, 2)} END {printf "%d captures, %d retried, %d walks discarded", n, r, t}' "$work/ours.stats" 2>/dev/null)
gave_up=$(grep -c 'changed during each' "$work/ours.stats" 2>/dev/null)

echo "Harmlessness: churn target throughput over ${window}s windows, median of $rounds rounds (alternating)"
if [[ -n $target_cpus ]]; then
  echo "target pinned to CPU $target_cpus (GOMAXPROCS=1), profilers to CPUs $profiler_cpus; load average $(cut -d' ' -f1-3 /proc/loadavg)"
else
  echo "no CPU pinning; load average $(cut -d' ' -f1-3 /proc/loadavg)"
fi
echo
base=$(echo "${thr[baseline]}" | median)
base_eff=$(echo "${eff[baseline]}" | median)
change() { awk -v m="$1" -v b="$2" 'BEGIN {printf "%+.1f%%", (m - b) * 100 / b}'; }
echo "| every ${period_ms} ms | work items/s | change | per-round items/s | target CPU share | items per target CPU-s | change | GC/s | profiles per window |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---|"
for mode in $modes; do
  med=$(echo "${thr[$mode]}" | median)
  med_eff=$(echo "${eff[$mode]}" | median)
  name=$mode
  [[ $mode == baseline ]] && name="nothing (baseline)"
  [[ $mode == ours ]] && name="goheap2pprof captures the target"
  [[ $mode == curl ]] && name="curl /debug/pprof/heap of the target"
  [[ $mode == control ]] && name="goheap2pprof captures another process"
  echo "| $name | $med | $(change "$med" "$base") | ${thr[$mode]% } | $(echo "${share[$mode]}" | median) |" \
    "$med_eff | $(change "$med_eff" "$base_eff") | $(echo "${gcs[$mode]}" | median) | ${count[$mode]% } |"
done
echo
echo "our captures during the windows: $torn; $gave_up gave up (cycle changed in every walk)"
