#!/usr/bin/env bash
# Cold captures of one running target by several builds, taking turns: each
# round runs every build once, in the order given, so that the machine's slow
# and fast spells fall on all of them alike. Prints a table of medians (and
# min-max) of the capture's own walk and total (its --stats) and of the wall
# time around the process. For comparing two versions of the code on one
# target; streaming.sh compares them against the target's endpoint.
#
#   bash bench/interleaved.sh <pid> <rounds> <goheap2pprof>...
#   bash bench/interleaved.sh 4242 20 /tmp/before/goheap2pprof build-rel/goheap2pprof
#
# The target is any running Go process (testdata/benchtarget prints its pid
# on its READY line). Each capture is written to a scratch file and removed.
set -euo pipefail

(($# >= 3)) || {
  echo "usage: $0 <pid> <rounds> <goheap2pprof>..." >&2
  exit 2
}
pid=$1 rounds=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for ((r = 0; r < rounds; r++)); do
  for ((i = 1; i <= $#; i++)); do
    tool=${!i}
    start=$(date +%s%N)
    out=$("$tool" "$pid" -o "$work/capture.pb.gz" --stats 2>&1) || {
      echo "$tool: $out" >&2
      exit 1
    }
    end=$(date +%s%N)
    walk=$(awk '/time walk/ {print $3}' <<<"$out")
    total=$(awk '/time total/ {print $3}' <<<"$out")
    echo "$walk $total $(((end - start) / 1000))" >>"$work/$i"
  done
done

# column <file> <n>: "median (min-max)" of column n, divided by div.
column() {
  sort -g -k"$2,$2" "$1" | awk -v c="$2" -v div="${3:-1}" \
    '{v[NR] = $c / div} END {printf "%.1f (%.1f-%.1f)", v[int((NR + 1) / 2)], v[1], v[NR]}'
}

echo "| build | walk ms | total ms | wall ms |"
echo "|---|---|---|---|"
for ((i = 1; i <= $#; i++)); do
  echo "| ${!i} | $(column "$work/$i" 1) | $(column "$work/$i" 2) | $(column "$work/$i" 3 1000) |"
done
echo "$rounds rounds, pid $pid; medians (min-max)"
