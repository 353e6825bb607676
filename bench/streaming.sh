#!/usr/bin/env bash
# Issue 42's bench: what a one-shot capture costs in memory and time as the
# target's heap buckets grow, for one bucket shape, against the target's own
# /debug/pprof/heap. Several goheap2pprof binaries can be measured on the same
# target in one run (before/after a change); the rounds are paired: each
# round runs every tool's cold capture, the endpoint, and every tool's
# repeated capture through its own `goheap2pprof serve`.
#
#   TOOLS="before=/tmp/old/goheap2pprof after=build-rel/goheap2pprof" bash bench/streaming.sh
#   N=131072 SHAPE=binary RUNS=5 bash bench/streaming.sh      # build-rel/goheap2pprof
#
# Environment:
#   N       buckets to create (default 131072)
#   SHAPE   binary: one bucket per call path of a binary recursion (testdata/benchtarget
#           -sizes 1; stacks log2(N) frames deep: 17 at 131072);
#           deep: the same below 1,000 frames of recursion (GODEBUG=profstackdepth=1024;
#           about 8 KiB of bucket memory a bucket, so keep N small);
#           short (depth-4 stacks) is not built yet: benchtarget cannot make N distinct
#           short stacks without generated call sites
#   RUNS    paired rounds (default 5); medians and min-max spreads are printed
#   TOOLS   "label=path ..." (default "tool=<repo>/build-rel/goheap2pprof", a Release build)
#   GO      the Go command for the target (default "env GOTOOLCHAIN=local go", Go 1.26.8)
#
# Columns: peak RSS is /usr/bin/time's maximum resident set of the cold capture;
# output is the written .pb.gz and its uncompressed size; cold = a fresh
# `goheap2pprof <pid>`, repeated = a fetch from serve, whose worker keeps the
# process's capture state (its first, unmeasured fetch made it); endpoint = curl
# of the target's own /debug/pprof/heap.
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$src/bench/lib.sh"
n=${N:-131072}
shape=${SHAPE:-binary}
runs=${RUNS:-5}
read -r -a tools <<<"${TOOLS:-tool=$src/build-rel/goheap2pprof}"
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"

die() {
  echo "streaming: $*" >&2
  exit 1
}
[[ -x /usr/bin/time ]] || die "/usr/bin/time missing (apt-get install time)"
for t in "${tools[@]}"; do [[ -x ${t#*=} ]] || die "${t#*=} is not an executable"; done

work=$(mktemp -d "${TMPDIR:-/tmp}/goheap2pprof-streaming.XXXXXX")
target_pid=""
serve_pids=()
cleanup() {
  bench_stop "${serve_pids[@]}" "$target_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

(cd "$src/testdata/benchtarget" && "${go_cmd[@]}" build -o "$work/benchtarget" .) ||
  die "building testdata/benchtarget failed"
case $shape in
  binary) target=("$work/benchtarget" -buckets "$n" -sizes 1) ;;
  deep) target=(env GODEBUG=profstackdepth=1024 "$work/benchtarget" -buckets "$n" -sizes 1 -deep 1000) ;;
  *) die "SHAPE=$shape: binary or deep (short is not built yet)" ;;
esac
"${target[@]}" >"$work/target.out" 2>"$work/target.err" &
target_pid=$!
for _ in $(seq 3000); do
  grep -q '^READY ' "$work/target.out" 2>/dev/null && break
  kill -0 "$target_pid" 2>/dev/null || die "target died: $(cat "$work/target.err")"
  sleep 0.2
done
read -r _ _ port _ <"$work/target.out" || die "target did not print READY"
endpoint=http://127.0.0.1:$port/debug/pprof/heap

# One serve per tool, for the repeated captures.
declare -A serve_addr
for t in "${tools[@]}"; do
  label=${t%%=*}
  "${t#*=}" serve --listen 127.0.0.1:0 -v 2>"$work/serve-$label.log" >/dev/null &
  serve_pids+=($!)
  for _ in $(seq 50); do grep -q 'listening on' "$work/serve-$label.log" && break; sleep 0.1; done
  serve_addr[$label]=$(sed -n 's/.*listening on //p' "$work/serve-$label.log" | head -n 1)
  [[ -n ${serve_addr[$label]} ]] || die "$label serve did not start"
done

# Warm-up: the handler's own first allocations make buckets; then the set is stable.
for _ in 1 2 3; do curl -sf -o /dev/null "$endpoint" || die "endpoint failed"; done
for t in "${tools[@]}"; do
  curl -sf -o /dev/null "http://${serve_addr[${t%%=*}]}/debug/pprof/heap?pid=$target_pid" ||
    die "serve capture failed"
done
read -r buckets bucket_bytes < <(curl -sf "http://127.0.0.1:$port/bucketmem")

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
for ((r = 0; r < runs; r++)); do
  for t in "${tools[@]}"; do
    label=${t%%=*}
    s=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$work/rss" "${t#*=}" "$target_pid" -o "$work/$label.pb.gz" ||
      die "$label capture failed"
    echo "$label cold $(ms_since "$s") $(<"$work/rss") $(stat -c %s "$work/$label.pb.gz")" \
      "$(zcat "$work/$label.pb.gz" | wc -c)" >>"$work/rows"
  done
  s=$(date +%s%N)
  curl -sf -o /dev/null "$endpoint" || die "endpoint failed"
  echo "endpoint endpoint $(ms_since "$s")" >>"$work/rows"
  for t in "${tools[@]}"; do
    label=${t%%=*}
    s=$(date +%s%N)
    curl -sf -o /dev/null "http://${serve_addr[$label]}/debug/pprof/heap?pid=$target_pid" ||
      die "$label serve capture failed"
    echo "$label repeated $(ms_since "$s")" >>"$work/rows"
  done
done
for t in "${tools[@]:1}"; do
  "$src/build-quick/profdiff" "$work/${tools[0]%%=*}.pb.gz" "$work/${t%%=*}.pb.gz" >/dev/null 2>&1 &&
    echo "profdiff ${tools[0]%%=*} vs ${t%%=*}: IDENTICAL" || echo "profdiff ${tools[0]%%=*} vs ${t%%=*}: differ (or no build-quick/profdiff)"
done

# stat <label> <kind> <column>: "median (min-max)" of that column.
stat_of() {
  awk -v l="$1" -v k="$2" -v c="$3" '$1 == l && $2 == k {print $c}' "$work/rows" | sort -n |
    awk '{v[NR] = $1} END {if (NR == 0) {print "-"; exit}
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%s (%s-%s)\n", m, v[1], v[NR]}'
}
echo
echo "$shape, $buckets buckets ($(awk -v b="$bucket_bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB" \
  "of bucket memory), $("${go_cmd[@]}" version | awk '{print $3}'), $runs paired rounds," \
  "load $(cut -d' ' -f1-3 /proc/loadavg); medians (min-max)"
echo
echo "| tool | peak RSS MiB | output KiB (gz / raw) | cold ms | repeated ms | endpoint ms |"
echo "|---|---:|---:|---:|---:|---:|"
for t in "${tools[@]}"; do
  label=${t%%=*}
  rss=$(awk -v l="$label" '$1 == l && $2 == "cold" {print $4}' "$work/rows" | sort -n |
    awk '{v[NR] = $1 / 1024} END {printf "%.1f (%.1f-%.1f)", v[int((NR + 1) / 2)], v[1], v[NR]}')
  size=$(awk -v l="$label" '$1 == l && $2 == "cold" {gz = $5; raw = $6} END {printf "%.0f / %.0f", gz / 1024, raw / 1024}' "$work/rows")
  echo "| $label | $rss | $size | $(stat_of "$label" cold 3) | $(stat_of "$label" repeated 3) |" \
    "$(stat_of endpoint endpoint 3) |"
done
