#!/usr/bin/env bash
# Replies of `goheap2pprof serve` that are large or never read (issue 38,
# findings 3 and 5), on a Go target with enough heap buckets that its
# ?debug=1 text is about 4 MB (testdata/benchtarget).
#
# 1. The text is larger than --max-capture-bytes (1 MiB here): it is still
#    200 with the whole text, the records and frames exactly as the one-shot
#    `goheap2pprof <pid> --format debug1` gives them (the MemStats block that
#    ends both is read at another moment, so only its presence is checked).
#    Before, the worker refused the reply and the client got 500.
# 2. 60 clients ask for that text and never read it (receive buffers as
#    small as the kernel allows), with --write-timeout 5. The server's peak
#    VmRSS stays within 64 MiB of its VmRSS after one such reply was served
#    (idle plus what one reply leaves with the allocator), /metrics answers
#    within 1 s meanwhile, and the stalled connections are closed by the
#    write deadline. Before, each connection kept its own 4 MB copy: 60 of
#    them held about 240 MB until the deadline. Then 4 clients that read
#    1 KiB every 0.2 s are closed by the same deadline: the progress of a
#    trickle does not move it.
# 3. With --max-reply-bytes-in-flight 256 KiB, the same clients beyond the
#    budget get 503 with Retry-After instead of a share of the server's
#    memory.
#
#   bash tests/e2e/serve_replies_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command python3 "needs python3 (the clients that do not read)"
e2e_make_work serve-replies
source "$(dirname "$0")/serve_lib.sh"
trap 'e2e_stop_pids -9' EXIT

attack=$src/tests/e2e/http_attack.py
clients=60
margin_kib=$((64 * 1024))

e2e_go_build benchtarget "$work/benchtarget"
e2e_start "$work/target.out" "$work/target.err" "$work/benchtarget" -buckets 3000
tpid=$target_pid
if ! e2e_wait_for_line "$work/target.out" "^READY" "$tpid" 60; then
  fail "benchtarget did not start" "$work/target.err"
  e2e_finish
fi

kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$serve_pid/status"; }
fds() { find "/proc/$serve_pid/fd" -mindepth 1 -maxdepth 1 | wc -l; }
# The text before its MemStats block.
records() { sed '/^# runtime.MemStats$/,$d' "$1"; }
stop_server() {
  kill "$serve_pid" 2>/dev/null
  wait "$serve_pid" 2>/dev/null
}

# 1. Larger than --max-capture-bytes, served whole.
start_serve big -- --max-capture-bytes 1048576
url="http://$addr/debug/pprof/heap?pid=$tpid&debug=1"
started=$(date +%s%N)
got=$(status "$url" --max-time 60)
took_ms=$((($(date +%s%N) - started) / 1000000))
cp "$work/body" "$work/served.txt"
"$tool" "$tpid" --format debug1 -o "$work/oneshot.txt" 2>"$work/oneshot.err"
size=$(stat -c %s "$work/served.txt")
echo "?debug=1: $got, $size bytes in $took_ms ms; the one-shot text $(stat -c %s "$work/oneshot.txt") bytes"
if [[ $got == 200 ]] && ((size > 1048576)) &&
  cmp -s <(records "$work/served.txt") <(records "$work/oneshot.txt") &&
  grep -q "^# runtime.MemStats$" "$work/served.txt" &&
  grep -qi "^content-length: $size" "$work/headers"; then
  pass "?debug=1 of $size bytes over --max-capture-bytes 1 MiB: 200, the one-shot debug1 text"
else
  echo "    $(head -c 300 "$work/body")"
  diff <(records "$work/served.txt") <(records "$work/oneshot.txt") | head -n 5
  fail "?debug=1 over --max-capture-bytes: want 200 with the one-shot's text"
fi
stop_server

# 2. 60 clients that never read, for 25 s. All come from 127.0.0.1: the per-address
# cap is raised over them, or it would refuse 28 of them before any reply.
start_serve unread -- --write-timeout 5 --max-connections-per-address 100
url="http://$addr/debug/pprof/heap?pid=$tpid&debug=1"
curl -s -o /dev/null "$url"
sleep 1
idle_kib=$(kib VmRSS)
fds_idle=$(fds)
# attack <n> <out> [trickle]: n clients that do not read (or trickle) the
# text for 25 s, meanwhile the server's peak VmRSS in peak_kib, /metrics
# asked every 2 s of the first 10 (asked; slow counts those not answered
# 200 within 1 s), and in closed_after the seconds after which the server
# had closed every one of the connections, once they were open, while their
# clients still held them.
attack() {
  local n=$1 out=$2 started attacker fds_now opened=""
  started=$(date +%s)
  python3 "$attack" unread "$addr" "$n" 25 "/debug/pprof/heap?pid=$tpid&debug=1" ${3:-} \
    >"$out" 2>&1 &
  attacker=$!
  e2e_track_pid "$attacker"
  peak_kib=$idle_kib slow=0 asked=0 closed_after=""
  while kill -0 "$attacker" 2>/dev/null; do
    rss=$(kib VmRSS)
    ((rss > peak_kib)) && peak_kib=$rss
    if ((asked < 6 && $(date +%s) - started >= 2 * asked)); then
      t=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://$addr/metrics")
      [[ $t == 200 ]] || slow=$((slow + 1))
      asked=$((asked + 1))
    fi
    fds_now=$(fds)
    ((fds_now >= fds_idle + n)) && opened=1
    if [[ -z $closed_after && -n $opened ]] && ((fds_now <= fds_idle + 2)); then
      closed_after=$(($(date +%s) - started))
    fi
    sleep 0.25
  done
  wait "$attacker"
}

attack "$clients" "$work/unread.out"
echo "$clients unread clients: $(cat "$work/unread.out"); server VmRSS idle $((idle_kib / 1024))" \
  "MiB, peak $((peak_kib / 1024)) MiB; all closed by the server ${closed_after:-never} s in"
if grep -q "HTTP/1.1 200 OK: $clients" "$work/unread.out"; then
  pass "$clients clients that never read got 200 (their replies were being written)"
else
  fail "$clients unread clients: want 200 for each" "$work/unread.out"
fi
if ((peak_kib - idle_kib < margin_kib)); then
  pass "server VmRSS peak $((peak_kib / 1024)) MiB, within 64 MiB of its $((idle_kib / 1024)) MiB after one reply"
else
  fail "server VmRSS peak $((peak_kib / 1024)) MiB, more than 64 MiB over its $((idle_kib / 1024)) MiB after one reply"
fi
if ((slow == 0)); then
  pass "/metrics answered within 1 s, $asked times, during the attack"
else
  fail "/metrics: $slow of $asked answers took over 1 s or failed"
fi
# The writes begin as the captures end (a few seconds for 60 requests);
# 25 s leaves the 5 s deadline ample room on a loaded machine.
if [[ -n $closed_after && $closed_after -lt 25 ]]; then
  pass "the stalled connections were closed by the 5 s write deadline, $closed_after s in, before their clients left"
else
  fail "the server kept the stalled connections until their clients left (25 s)"
fi
# A client that reads 1 KiB every 0.2 s moves the write along, which must
# not move its deadline: at 5 KiB/s the 3.4 MB would take minutes.
attack 4 "$work/trickle.out" trickle
echo "4 trickling clients: $(cat "$work/trickle.out"); closed by the server ${closed_after:-never} s in"
if [[ -n $closed_after && $closed_after -lt 25 ]]; then
  pass "clients reading 1 KiB every 0.2 s were closed by the 5 s write deadline, $closed_after s in"
else
  fail "clients reading 1 KiB every 0.2 s kept their connections until they left (25 s)"
fi
stop_server

# 3. Beyond --max-reply-bytes-in-flight: 503 with Retry-After.
start_serve budget -- --write-timeout 5 --max-connections-per-address 100 \
  --max-reply-bytes-in-flight 262144
python3 "$attack" unread "$addr" "$clients" 3 "/debug/pprof/heap?pid=$tpid&debug=1" \
  >"$work/budget.out" 2>&1
echo "with --max-reply-bytes-in-flight 256 KiB: $(cat "$work/budget.out")"
if grep -q "HTTP/1.1 503 Service Unavailable with Retry-After" "$work/budget.out" &&
  grep -q "HTTP/1.1 200 OK" "$work/budget.out"; then
  pass "over --max-reply-bytes-in-flight: some 200, the rest 503 with Retry-After"
else
  fail "over --max-reply-bytes-in-flight: want some 200 and some 503 with Retry-After" \
    "$work/budget.out"
fi
stop_server

e2e_finish
