#!/usr/bin/env bash
# Soak test of `goheap2pprof serve` (issue 22, defects 0 and 10): minutes of
# mixed load on a 100k-bucket Go target (testdata/benchtarget) -- 6 clients
# asking for heap and allocs profiles, ?seconds=1 deltas (1 request in 20),
# /targets and /metrics -- and the privileged server's resident memory and
# open descriptors stay flat once every kind of request has been served.
#
# Flat means: after a warm-up in which every kind of request ran (deltas
# included) under the same load, the server's VmRSS never exceeds the
# warm-up's peak by more than 64 MiB, and its descriptors at the end (clients
# gone) are no more than at the start plus 4. The margin is a memory figure,
# not a timing one: the server legitimately holds, per request in flight, a
# gzipped profile of this target (a few hundred KB) and its copies, and its
# allocator keeps some freed memory; before issue 22 each delta parsed two
# whole profiles in the server, which kept hundreds of MiB per delta (2.6 GB
# after the warm-up's 10 deltas on dac389b), so a few deltas exceed the
# margin many times over. The
# load is bounded in time (SOAK seconds) and count (MAX_REQUESTS per client);
# the test stops as soon as the margin is exceeded. Last, a server with a
# small --max-capture-bytes answers captures over it with 500 saying why.
#
#   bash tests/e2e/serve_soak_test.sh <goheap2pprof> <profdiff>
#   SOAK=60 BUCKETS=20000 bash tests/e2e/serve_soak_test.sh ...   (quicker)
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_make_work serve-soak
source "$(dirname "$0")/serve_lib.sh"
trap 'e2e_stop_pids -9' EXIT

buckets=${BUCKETS:-100000}
warm=${WARM:-30}
soak=${SOAK:-120}
clients=6
max_requests=${MAX_REQUESTS:-600}
margin_kib=$((64 * 1024))

if ! (cd "$src/testdata/benchtarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/benchtarget" .) \
  >"$work/build.log" 2>&1; then
  fail "build benchtarget" "$work/build.log"
  e2e_finish
fi
e2e_start "$work/target.out" "$work/target.err" "$work/benchtarget" -buckets "$buckets"
tpid=$target_pid
if ! e2e_wait_for_line "$work/target.out" "^READY" "$tpid" 120; then
  fail "benchtarget did not start" "$work/target.err"
  e2e_finish
fi
# A capture may take as long as the clients wait (60 s): this is a memory soak, and on a
# starved machine (other suites beside it, ctest -j) a 100k-bucket delta can outlast serve's
# default 10 s, whose 504 would then fail a test that is not about time.
start_serve soak -- --capture-timeout 55
base="http://$addr/debug/pprof"

kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$serve_pid/status"; }
fds() { find "/proc/$serve_pid/fd" -mindepth 1 -maxdepth 1 | wc -l; }

# One client: request i of a fixed cycle of 20 (1 delta, 8 heap, 6 allocs,
# 3 /targets, 2 /metrics), client n starting n requests before the delta so
# that the warm-up has some, until the file $work/stop exists, `end` (epoch
# seconds) or max_requests; answers go to $work/answers.<phase>.
client() {
  local end=$2 i=$((20 - $1)) url sent=0
  while ((sent < max_requests)) && (($(date +%s) < end)) && [[ ! -e $work/stop ]]; do
    case $((i % 20)) in
      0) url="$base/heap?pid=$tpid&seconds=1" ;;
      1 | 3 | 5 | 7 | 9 | 11 | 13 | 15) url="$base/heap?pid=$tpid" ;;
      2 | 4 | 6 | 8 | 10 | 12) url="$base/allocs?pid=$tpid" ;;
      14 | 16 | 18) url="http://$addr/targets" ;;
      *) url="http://$addr/metrics" ;;
    esac
    echo "$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 "$url") $url" >>"$work/answers.$3"
    i=$((i + 1))
    sent=$((sent + 1))
  done
}

# run_load <phase> <seconds>: the clients, with the server's peak VmRSS over
# the phase sampled every 0.5 s into peak_kib; stops early (over=1) once it
# exceeds limit_kib.
run_load() {
  local phase=$1 seconds=$2 end pids=() n rss
  end=$(($(date +%s) + seconds))
  rm -f "$work/stop"
  for n in $(seq 1 $clients); do
    client "$n" "$end" "$phase" &
    e2e_track_pid $!
  done
  peak_kib=0
  over=0
  while kill -0 "${pids[@]}" 2>/dev/null; do
    rss=$(kib VmRSS)
    ((rss > peak_kib)) && peak_kib=$rss
    if ((rss > limit_kib)); then
      over=1
      touch "$work/stop"
    fi
    sleep 0.5
  done
  wait "${pids[@]}"
}

fds_start=$(fds)
limit_kib=$((1 << 40))
run_load warm "$warm"
warm_peak=$peak_kib
warm_deltas=$(grep -c '^200 .*seconds=1' "$work/answers.warm")
echo "warm-up ($warm s): $(wc -l <"$work/answers.warm") requests, $warm_deltas deltas answered," \
  "server VmRSS peak $((warm_peak / 1024)) MiB"
if ((warm_deltas < 1)); then
  fail "the warm-up served no delta: the load does not exercise deltas" "$work/answers.warm"
  e2e_finish
fi

limit_kib=$((warm_peak + margin_kib))
run_load soak "$soak"
soak_deltas=$(grep -c '^200 .*seconds=1' "$work/answers.soak")
echo "soak ($soak s): $(wc -l <"$work/answers.soak") requests, $soak_deltas deltas answered," \
  "server VmRSS peak $((peak_kib / 1024)) MiB, VmHWM $(($(kib VmHWM) / 1024)) MiB"
awk '{print $1}' "$work/answers.warm" "$work/answers.soak" | sort | uniq -c | sed 's/^/    /'
if ((over == 0)); then
  pass "server VmRSS flat: peak $((peak_kib / 1024)) MiB over $soak_deltas deltas and the rest, within 64 MiB of the warm-up's $((warm_peak / 1024)) MiB"
else
  fail "server VmRSS grew to $((peak_kib / 1024)) MiB, over the warm-up's $((warm_peak / 1024)) MiB + 64 MiB (stopped early after $soak_deltas deltas)"
fi
if ((over == 0 && soak_deltas < 4)); then
  fail "only $soak_deltas deltas answered 200 in the soak: too few to tell" "$work/answers.soak"
fi
bad=$(awk '$1 != 200 && $1 != 503' "$work/answers.warm" "$work/answers.soak" | wc -l)
if ((bad == 0)); then
  pass "every answer 200 or 503 (busy)"
else
  fail "$bad answers neither 200 nor 503: $(awk '$1 != 200 && $1 != 503' "$work"/answers.* | head -n 3)"
fi
# Connections the clients closed are closed by the server too.
for _ in $(seq 1 20); do
  (($(fds) <= fds_start + 4)) && break
  sleep 0.5
done
fds_end=$(fds)
if ((fds_end <= fds_start + 4)); then
  pass "server descriptors flat: $fds_start before the load, $fds_end after"
else
  ls -l "/proc/$serve_pid/fd" >"$work/fds.txt" 2>&1
  fail "server descriptors: $fds_start before the load, $fds_end after" "$work/fds.txt"
fi

# The reply limit: a profile over --max-capture-bytes (this target's is
# several times 64 KiB gzipped) is refused by the worker with a 500 that says
# why, and the server goes on.
start_serve small -- --max-capture-bytes 65536
expect_status "a profile over --max-capture-bytes" 500 "more than the limit of 65536" \
  "http://$addr/debug/pprof/heap?pid=$tpid"
expect_status "a delta over --max-capture-bytes" 500 "more than the limit of 65536" \
  "http://$addr/debug/pprof/heap?pid=$tpid&seconds=1"
expect_status "/metrics after them" 200 "goheap2pprof_" "http://$addr/metrics"
e2e_finish
