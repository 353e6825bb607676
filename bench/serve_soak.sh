#!/usr/bin/env bash
# The privileged server's memory under `goheap2pprof serve` load (issue 22,
# defect 0): for one target with BUCKETS distinct heap buckets
# (testdata/benchtarget), prints two tables, with no thresholds:
#
#   1. serve's VmRSS (and its workers') after each of DELTAS consecutive
#      ?seconds=1 deltas, one request after another;
#   2. serve's VmRSS, VmHWM and open descriptors every STEP seconds over a
#      SOAK-second mixed load of CLIENTS clients (heap, allocs, ~5% deltas,
#      /targets, /metrics).
#
#   bash bench/serve_soak.sh                        # uses build/goheap2pprof
#   TOOL=/tmp/main/goheap2pprof BUCKETS=131072 DELTAS=12 SOAK=0 bash bench/serve_soak.sh
#
# Environment: TOOL, BUCKETS (default 131072), DELTAS (default 12; 0 skips
# table 1), SOAK (seconds, default 180; 0 skips table 2), STEP (default 15),
# CLIENTS (default 6), GO (default "env GOTOOLCHAIN=local go").
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
tool=$(realpath "${TOOL:-$src/build/goheap2pprof}")
buckets=${BUCKETS:-131072}
deltas=${DELTAS:-12}
soak=${SOAK:-180}
step=${STEP:-15}
clients=${CLIENTS:-6}
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"
work=$(mktemp -d /tmp/goheap2pprof-serve-soak.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

(cd "$src/testdata/benchtarget" && CGO_ENABLED=0 "${go_cmd[@]}" build -o "$work/benchtarget" .) || exit 1
"$work/benchtarget" -buckets "$buckets" >"$work/target.out" 2>&1 &
tpid=$!
pids+=("$tpid")
until grep -qs '^READY' "$work/target.out"; do sleep 0.2; done
read -r _ _ _ tbuckets _ <"$work/target.out"
"$tool" serve --listen 127.0.0.1:0 --discover-interval 5 >"$work/serve.out" 2>"$work/serve.log" &
spid=$!
pids+=("$spid")
until grep -q 'listening on' "$work/serve.log"; do sleep 0.1; done
addr=$(sed -n 's/.*listening on //p' "$work/serve.log")
base="http://$addr/debug/pprof"

kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$2/status"; }
mib() { awk '{printf "%.0f", $1 / 1024}'; }
# Sum of the workers' VmRSS, or with "VmHWM" the largest worker's peak.
workers_rss() {
  local sum=0 max=0 w v
  for w in $(pgrep -P "$spid"); do
    v=$(kib "${1:-VmRSS}" "$w")
    sum=$((sum + v))
    ((v > max)) && max=$v
  done
  if [[ ${1:-} == VmHWM ]]; then echo "$max"; else echo "$sum"; fi
}
fds() { find "/proc/$spid/fd" -mindepth 1 -maxdepth 1 | wc -l; }

echo "goheap2pprof serve memory: $tool"
echo "target: $tbuckets heap buckets (runtime's count), $(nproc) CPUs"
if ((deltas > 0)); then
  curl -s -o /dev/null "$base/heap?pid=$tpid"
  echo
  printf '%-22s %14s %16s %16s %14s %12s\n' "after" "serve VmRSS" "workers' VmRSS" \
    "a worker's peak" "delta status" "delta bytes"
  printf '%-22s %14s %16s %16s %14s %12s\n' "1 plain profile" "$(kib VmRSS "$spid" | mib) MiB" \
    "$(workers_rss | mib) MiB" "$(workers_rss VmHWM | mib) MiB" "-" "-"
  for i in $(seq 1 "$deltas"); do
    out=$(curl -s -o "$work/delta.pb.gz" -w '%{http_code} %{size_download}' \
      "$base/heap?pid=$tpid&seconds=1")
    case $i in
      1 | 2 | 4 | 8 | 12 | 16 | 24)
        printf '%-22s %14s %16s %16s %14s %12s\n' "$i consecutive deltas" \
          "$(kib VmRSS "$spid" | mib) MiB" "$(workers_rss | mib) MiB" \
          "$(workers_rss VmHWM | mib) MiB" ${out}
        ;;
    esac
  done
fi

# One client of the mixed load: every request is the next of a fixed cycle
# of 20 (8 heap, 6 allocs, 1 delta, 3 /targets, 2 /metrics), starting at a
# different point per client.
client() {
  local n=$1 end=$2 i=$1
  while (($(date +%s) < end)); do
    case $((i % 20)) in
      0) url="$base/heap?pid=$tpid&seconds=1" ;;
      1 | 3 | 5 | 7 | 9 | 11 | 13 | 15) url="$base/heap?pid=$tpid" ;;
      2 | 4 | 6 | 8 | 10 | 12) url="$base/allocs?pid=$tpid" ;;
      14 | 16 | 18) url="http://$addr/targets" ;;
      *) url="http://$addr/metrics" ;;
    esac
    curl -s -o /dev/null -w "%{http_code}\n" --max-time 60 "$url" >>"$work/status.$n"
    i=$((i + 1))
  done
}

if ((soak > 0)); then
  echo
  echo "mixed load: $clients clients for $soak s"
  printf '%8s %14s %14s %16s %8s %10s\n' "second" "serve VmRSS" "serve VmHWM" "workers' VmRSS" "fds" "requests"
  start=$(date +%s)
  end=$((start + soak))
  for n in $(seq 1 "$clients"); do
    client "$n" "$end" &
    pids+=($!)
  done
  t=0
  while ((t <= soak)); do
    done_requests=$(cat "$work"/status.* 2>/dev/null | wc -l)
    printf '%8s %14s %14s %16s %8s %10s\n' "$t" "$(kib VmRSS "$spid" | mib) MiB" \
      "$(kib VmHWM "$spid" | mib) MiB" "$(workers_rss | mib) MiB" "$(fds)" "$done_requests"
    sleep "$step"
    t=$(($(date +%s) - start))
  done
  wait "${pids[@]:2}" 2>/dev/null
  printf '%8s %14s %14s %16s %8s %10s\n' "$(($(date +%s) - start))" "$(kib VmRSS "$spid" | mib) MiB" \
    "$(kib VmHWM "$spid" | mib) MiB" "$(workers_rss | mib) MiB" "$(fds)" "$(cat "$work"/status.* | wc -l)"
  echo "answers by status: $(cat "$work"/status.* | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')"
fi
