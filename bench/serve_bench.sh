#!/usr/bin/env bash
# Benchmark of `goheap2pprof serve` (issue 12): for one target with BUCKETS
# distinct heap buckets (testdata/benchtarget), the latency of the first and
# of repeated captures through serve, requests per second (sequential, and
# with CLIENTS concurrent clients), what the worker isolation costs per
# capture (serve's round trip to its worker minus the worker's own time),
# the one-shot CLI on the same target, and the target serving its own
# /debug/pprof/heap. Prints a table; no thresholds.
#
#   bash bench/serve_bench.sh                  # uses build/goheap2pprof
#   TOOL=build-bench/goheap2pprof BUCKETS=10000 REQUESTS=50 bash bench/serve_bench.sh
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
tool=$(realpath "${TOOL:-$src/build/goheap2pprof}")
buckets=${BUCKETS:-10000}
requests=${REQUESTS:-50}
clients=${CLIENTS:-4}
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"
work=$(mktemp -d /tmp/goheap2pprof-serve-bench.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

(cd "$src/testdata/benchtarget" && CGO_ENABLED=0 "${go_cmd[@]}" build -o "$work/benchtarget" .) || exit 1
"$work/benchtarget" -buckets "$buckets" >"$work/target.out" 2>&1 &
pids+=($!)
tpid=$!
until grep -q '^READY' "$work/target.out"; do sleep 0.2; done
read -r _ _ tport tbuckets _ <"$work/target.out"
"$tool" serve --listen 127.0.0.1:0 -v --discover-interval 3600 >"$work/serve.out" 2>"$work/serve.log" &
spid=$!
pids+=($spid)
until grep -q 'listening on' "$work/serve.log"; do sleep 0.1; done
addr=$(sed -n 's/.*listening on //p' "$work/serve.log")
url="http://$addr/debug/pprof/heap?pid=$tpid"

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ms() { awk '{printf "%.1f\n", $1 * 1000}'; }

first=$(curl -s -o /dev/null -w '%{time_total}\n' "$url" | ms)
for _ in $(seq 1 "$requests"); do curl -s -o /dev/null -w '%{time_total}\n' "$url"; done >"$work/repeat"
repeat=$(ms <"$work/repeat" | median)
start=$(date +%s.%N)
for _ in $(seq 1 "$requests"); do curl -s -o /dev/null "$url"; done
seq_rps=$(echo "$requests $(date +%s.%N) $start" | awk '{printf "%.1f", $1 / ($2 - $3)}')
start=$(date +%s.%N)
seq 1 "$requests" | xargs -P "$clients" -I{} curl -s -o /dev/null "$url"
par_rps=$(echo "$requests $(date +%s.%N) $start" | awk '{printf "%.1f", $1 / ($2 - $3)}')
# Isolation: each capture's round trip to its worker minus the worker's own
# time, over the sequential requests only (no queueing for a worker).
grep "capture pid $tpid op 2:" "$work/serve.log" | sed -n "2,$((requests + 1))p" |
  sed 's/.*: \([0-9.]*\) ms, \([0-9.]*\) ms in the worker.*/\1 \2/' >"$work/captures"
iso=$(awk '{print $1 - $2}' "$work/captures" | median)
worker=$(awk '{print $2}' "$work/captures" | median)
for _ in $(seq 1 5); do
  /usr/bin/time -f '%e' "$tool" "$tpid" -o "$work/oneshot.pb.gz" 2>&1 >/dev/null | tail -n 1
done >"$work/oneshot"
oneshot=$(ms <"$work/oneshot" | median)
for _ in $(seq 1 5); do curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$tport/debug/pprof/heap"; done >"$work/own"
own=$(ms <"$work/own" | median)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$spid/status")

echo "goheap2pprof serve benchmark: target with $tbuckets heap buckets (runtime's count), $(nproc) CPUs"
printf '%-60s %s\n' \
  "first capture through serve (ms)" "$first" \
  "repeated capture through serve, median of $requests (ms)" "$repeat" \
  "  of which in the worker (ms)" "$worker" \
  "  isolation cost: worker round trip - worker time (ms)" "$iso" \
  "requests/s, 1 client" "$seq_rps" \
  "requests/s, $clients clients (concurrent requests share captures)" "$par_rps" \
  "one-shot goheap2pprof <pid>, wall incl. process start (ms)" "$oneshot" \
  "target's own /debug/pprof/heap, median of 5 (ms)" "$own" \
  "server RSS after the run (kB)" "$rss"
