#!/usr/bin/env bash
# What `goheap2pprof growth` costs over many snapshots of a large profile
# (issue 25): the report over N heap profiles of testdata/benchtarget with
# 100k buckets, its wall time and peak RSS, for several N. Prints a table; no
# thresholds.
#
#   bash bench/growth.sh                  # N = 25 50 100, 100000 buckets
#   COUNTS="10 100" BUCKETS=20000 bash bench/growth.sh
#   DATA=/tmp/growth-data bash bench/growth.sh   # keeps the captures there
#                                                # and reuses them next time
#
# The snapshots are N real captures (goheap2pprof <pid>) of the idle target,
# so they hold the same samples at different times: the report's work
# (reading, matching every site across the N profiles, the per-site series
# and fits) is what it would be for a growing program with as many sites.
#
# Columns:
#   N            profiles in the directory
#   samples      samples per profile (the target's buckets)
#   sites        distinct stacks over all profiles (the report's sites; a
#                stack has one sample per object size)
#   files MiB    the profiles' total size on disk (gzipped)
#   wall s       elapsed time of `goheap2pprof growth DIR --top 1 --format json`
#   user s       its user CPU time
#   sys s        its system CPU time
#   peak RSS MiB its maximum resident set (GNU time's %M)
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
counts=${COUNTS:-25 50 100}
buckets=${BUCKETS:-100000}
build=${BUILD_DIR:-$src/build}
tool=$build/goheap2pprof
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"
work=$(mktemp -d /tmp/growth-bench.XXXXXX)
# The captures: kept in $DATA when set, so that runs before and after a
# change read the very same files.
data=${DATA:-$work/all}
target_pid=""
cleanup() {
  [[ -n $target_pid ]] && kill "$target_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

[[ -x $tool ]] || { echo "build the tool first: cmake --build $build" >&2; exit 2; }
command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
max=0
for n in $counts; do ((n > max)) && max=$n; done
# The samples per profile, from one capture's JSON summary (written with
# the captures, so that a reused data set needs no target).
if [[ ! -s $data/samples || ! -e $data/heap-$(printf %04d "$max").pb.gz ]]; then
  (cd "$src/testdata/benchtarget" && CGO_ENABLED=0 "${go_cmd[@]}" build -o "$work/benchtarget" .) ||
    exit 1
  "$work/benchtarget" -buckets "$buckets" >"$work/target.out" 2>&1 &
  target_pid=$!
  for _ in $(seq 1 600); do
    grep -q '^READY ' "$work/target.out" && break
    sleep 0.1
  done
  grep -q '^READY ' "$work/target.out" || { echo "benchtarget did not start" >&2; exit 1; }
  mkdir -p "$data"
  rm -f "$data"/heap-*.pb.gz "$data/samples"
  for i in $(seq 1 "$max"); do
    "$tool" "$target_pid" -o "$data/heap-$(printf %04d "$i").pb.gz" || exit 1
  done
  "$tool" "$target_pid" --format json --top 1 | jq .samples >"$data/samples" || exit 1
fi
samples=$(cat "$data/samples")

printf '%6s %9s %7s %10s %8s %8s %7s %13s\n' N samples sites "files MiB" "wall s" "user s" \
  "sys s" "peak RSS MiB"
for n in $counts; do
  rm -rf "$work/dir" && mkdir "$work/dir"
  for i in $(seq 1 "$n"); do
    ln -s "$data/heap-$(printf %04d "$i").pb.gz" "$work/dir/"
  done
  files_mib=$(du -L -s -k "$work/dir" | awk '{printf "%.1f", $1 / 1024}')
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$tool" growth "$work/dir" --top 1 \
    --format json >"$work/report.json" || exit 1
  read -r wall user sys rss_kb <"$work/time"
  printf '%6s %9s %7s %10s %8s %8s %7s %13s\n' "$n" "$samples" "$(jq .sites_total "$work/report.json")" \
    "$files_mib" "$wall" "$user" "$sys" "$(awk -v k="$rss_kb" 'BEGIN {printf "%.0f", k / 1024}')"
done
