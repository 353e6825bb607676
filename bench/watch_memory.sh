#!/usr/bin/env bash
# The memory `goheap2pprof watch` needs while it captures (issue 14): its own
# peak RSS against the target's heap size, with the watch itself confined to
# a small memory cgroup (v1, 32 MiB) so a capture that needed memory in
# proportion to the target's heap would be OOM-killed. Prints a table; no
# thresholds.
#
#   bash bench/watch_memory.sh                 # heaps of 64, 512 and 2048 MiB
#   HEAPS="64 256" bash bench/watch_memory.sh
#
# Columns:
#   heap MiB         what testdata/oomgrower keeps reachable (in 1 MiB objects)
#   target RSS MiB   its VmRSS when the captures ran
#   captures         profiles the watch wrote (--every 1s for ~3.5 s, plus the baseline)
#   capture ms       the slowest capture_ms in watch.jsonl
#   watch VmHWM KiB  the watch's peak RSS after its last capture (watch.jsonl)
#   cgroup peak KiB  memory.max_usage_in_bytes of the watch's own cgroup (its
#                    page cache included), "-" without a v1 memory cgroup
# Needs root for the cgroup; runs without one otherwise (the cgroup column is "-").
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
heaps=${HEAPS:-64 512 2048}
build=${BUILD_DIR:-$src/build}
tool=$build/goheap2pprof
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"
work=$(mktemp -d /tmp/watch-memory.XXXXXX)
cg=""
grower_pid=""
cleanup() {
  [[ -n $grower_pid ]] && kill -9 "$grower_pid" 2>/dev/null
  [[ -n $cg ]] && rmdir "$cg" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

if [[ ! -x $tool ]]; then
  echo "build the tool first: cmake --build $build" >&2
  exit 2
fi
(cd "$src/testdata/oomgrower" && CGO_ENABLED=0 "${go_cmd[@]}" build -o "$work/oomgrower" .) || exit 1

if [[ $(id -u) == 0 && -w /sys/fs/cgroup/memory/cgroup.procs ]]; then
  cg=/sys/fs/cgroup/memory/goheap2pprof-watch-bench.$$
  mkdir "$cg" && echo 32M >"$cg/memory.limit_in_bytes"
fi

printf '%-9s %-15s %-9s %-11s %-16s %s\n' "heap MiB" "target RSS MiB" captures "capture ms" \
  "watch VmHWM KiB" "cgroup peak KiB"
for heap in $heaps; do
  "$work/oomgrower" -max-mib "$heap" -step-mib 64 -every 1ms >"$work/grower.out" 2>&1 &
  grower_pid=$!
  until grep -q CAPPED "$work/grower.out"; do sleep 0.1; done
  rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$grower_pid/status")
  dir=$work/out-$heap
  mkdir "$dir"
  [[ -n $cg ]] && echo 0 >"$cg/memory.max_usage_in_bytes"
  if [[ -n $cg ]]; then
    sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
      "$tool" watch "$grower_pid" -o "$dir" --every 1s --poll 100ms 2>"$dir/watch.err" &
  else
    "$tool" watch "$grower_pid" -o "$dir" --every 1s --poll 100ms 2>"$dir/watch.err" &
  fi
  watch_pid=$!
  sleep 3.5
  kill -TERM "$watch_pid"
  wait "$watch_pid"
  captures=$(jq -r 'select(.file != null and .event == "trigger") | .file' "$dir/watch.jsonl" | wc -l)
  ms=$(jq -s 'map(select(.capture_ms != null) | .capture_ms) | max' "$dir/watch.jsonl")
  hwm=$(jq -s 'map(select(.watch_peak_rss_kib != null) | .watch_peak_rss_kib) | max' "$dir/watch.jsonl")
  peak="-"
  [[ -n $cg ]] && peak=$(($(cat "$cg/memory.max_usage_in_bytes") / 1024))
  printf '%-9s %-15s %-9s %-11s %-16s %s\n' "$heap" "$rss" "$captures" "$ms" "$hwm" "$peak"
  kill -9 "$grower_pid"
  wait "$grower_pid" 2>/dev/null
  grower_pid=""
done
