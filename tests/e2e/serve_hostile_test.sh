#!/usr/bin/env bash
# `goheap2pprof serve` against hostile clients (issue 22, defects 1, 2, 7
# and 12, and DNS rebinding), all before authentication:
#  - a 1 GiB request line without newline, 512 MiB of 4 KB header lines and
#    a 512 MiB chunked POST each end with an error answer and a closed
#    connection, and the server's peak RSS (VmHWM) stays within 64 MiB of
#    its idle peak;
#  - /metrics and /targets answer within 1 s while 16 slow-loris
#    connections, over 1,000 idle connections from eight other loopback
#    addresses and 16 ?seconds=20 delta requests are all under way; deltas
#    over --max-deltas get 503 with Retry-After;
#  - the Authorization scheme is case-insensitive (bearer, BEARER);
#  - a Host header that is not this server's gets 421 on loopback;
#  - push --metrics-listen follows serve's rule (loopback, or TLS with a
#    token or client certificates, or --insecure-listen) and takes a token.
#
#   bash tests/e2e/serve_hostile_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command python3 "needs python3 for the hostile clients"
e2e_make_work serve-hostile
trap 'e2e_stop_pids -9' EXIT
attack=$src/tests/e2e/http_attack.py

hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

(cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/target" .) \
  >"$work/build.log" 2>&1 || { fail "build servetarget" "$work/build.log"; e2e_finish; }
e2e_start "$work/t.out" "$work/t.err" "$work/target" -http=false
tpid=$target_pid
e2e_wait_for_line "$work/t.out" "^READY" "$tpid" 20 || { fail "target start" "$work/t.err"; e2e_finish; }

echo "== before authentication: bounded memory (defect 1)"
printf 'secret-token-0123456789\n' >"$work/token"
e2e_start "$work/auth.out" "$work/auth.log" "$tool" serve --listen 127.0.0.1:0 --token-file "$work/token"
spid=$target_pid
e2e_wait_for_line "$work/auth.log" "listening on" "$spid" 10 || { fail "serve start" "$work/auth.log"; e2e_finish; }
addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/auth.log" | head -n 1)
curl -s -o /dev/null -H "Authorization: Bearer secret-token-0123456789" "http://$addr/metrics"
idle=$(hwm_kib "$spid")
echo "    idle VmHWM: $((idle / 1024)) MiB"
for a in "line $((1 << 30)) 414" "headers $((512 << 20)) 431" "chunked $((512 << 20)) 405"; do
  set -- $a
  out=$(timeout 150 python3 "$attack" "$1" "$addr" "$2")
  peak=$(hwm_kib "$spid")
  echo "    $1: $out; VmHWM $((peak / 1024)) MiB"
  if ! kill -0 "$spid" 2>/dev/null; then
    fail "$1 attack: the server died" "$work/auth.log"
    e2e_finish
  fi
  if [[ $out == *"answer: HTTP/1.1 $3"* ]] && ((peak - idle < 64 * 1024)); then
    pass "$1 attack ($2 bytes offered): answered $3, peak RSS within 64 MiB of idle (+$(((peak - idle) / 1024)) MiB)"
  else
    fail "$1 attack: want answer $3 and VmHWM within 64 MiB of $((idle / 1024)) MiB; got $out, $((peak / 1024)) MiB"
  fi
done
got=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer secret-token-0123456789" "http://$addr/metrics")
[[ $got == 200 ]] && pass "after the attacks the server answers: $got" || fail "after the attacks: $got"

echo "== the Authorization scheme is case-insensitive (defect 12)"
for scheme in Bearer bearer BEARER; do
  got=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: $scheme secret-token-0123456789" \
    "http://$addr/metrics")
  [[ $got == 200 ]] && pass "Authorization: $scheme <token>: $got" || fail "Authorization: $scheme <token>: $got, want 200"
done
got=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: bearer secret-token-0123456780" "http://$addr/metrics")
[[ $got == 401 ]] && pass "a wrong token with a lower-case scheme: 401" || fail "wrong token: $got, want 401"

echo "== DNS rebinding: Host checked on a loopback listener"
kill "$spid"
e2e_start "$work/host.out" "$work/host.log" "$tool" serve --listen 127.0.0.1:0 --allowed-host profiler.internal
spid=$target_pid
if e2e_wait_for_line "$work/host.log" "listening on" "$spid" 10; then
  addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/host.log" | head -n 1)
  port=${addr##*:}
  for case in "attacker.example:$port 421" "attacker.example 421" "localhost:$port 200" "127.0.0.1:$port 200" \
    "profiler.internal:$port 200" "10.0.0.7 200"; do
    set -- $case
    got=$(curl -s -o "$work/body" -w '%{http_code}' -H "Host: $1" "http://$addr/targets")
    if [[ $got == "$2" ]]; then pass "Host: $1 -> $got"; else fail "Host: $1 -> $got, want $2" "$work/body"; fi
  done
else
  fail "serve --allowed-host did not start" "$work/host.log"
fi

echo "== starvation: /metrics and /targets within 1 s under every attack at once (defect 2)"
kill "$spid"
e2e_start "$work/starve.out" "$work/starve.log" "$tool" serve --listen 127.0.0.1:0 --discover-interval 1
spid=$target_pid
e2e_wait_for_line "$work/starve.log" "listening on" "$spid" 10 || { fail "serve start" "$work/starve.log"; e2e_finish; }
addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/starve.log" | head -n 1)
for _ in $(seq 1 50); do
  curl -s "http://$addr/targets" | grep -q "\"$tpid\"" && break
  sleep 0.2
done
e2e_start "$work/idle.out" "$work/idle.err" python3 "$attack" idle "$addr" 1040 25 \
  127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8,127.0.0.9
idle_pid=$target_pid
e2e_start "$work/loris.out" "$work/loris.err" python3 "$attack" slowloris "$addr" 16 25 3 127.0.0.10
loris_pid=$target_pid
mkdir -p "$work/delta"
for i in $(seq 1 16); do
  (curl -s --interface 127.0.0.11 --max-time 60 -o /dev/null -D "$work/delta/$i.headers" \
    -w '%{http_code}' "http://$addr/debug/pprof/heap?pid=$tpid&seconds=20" >"$work/delta/$i.code") &
done
sleep 3
max=0 bad=0 probes=0
for _ in $(seq 1 20); do
  for path in metrics targets; do
    r=$(curl -s -o /dev/null --max-time 1 -w '%{http_code} %{time_total}' "http://$addr/$path")
    probes=$((probes + 1))
    [[ ${r% *} == 200 ]] || { bad=$((bad + 1)); echo "    /$path: $r"; }
    max=$(awk -v a="$max" -v b="${r#* }" 'BEGIN {print (b > a ? b : a)}')
  done
  sleep 0.5
done
if ((bad == 0)); then
  pass "$probes probes of /metrics and /targets all answered 200 within 1 s (slowest ${max} s)"
else
  fail "$bad of $probes probes of /metrics or /targets failed or took over 1 s"
fi
wait_deadline=$((SECONDS + 60))
while ((SECONDS < wait_deadline)) && (($(cat "$work"/delta/*.code 2>/dev/null | wc -c) < 48)); do sleep 1; done
ok=$(cat "$work"/delta/*.code | grep -o 200 | wc -l)
busy=$(cat "$work"/delta/*.code | grep -o 503 | wc -l)
retry=$(grep -il '^Retry-After: 20' "$work"/delta/*.headers | wc -l)
echo "    16 deltas: $ok answered 200, $busy answered 503 ($retry with Retry-After: 20)"
if ((ok == 4 && busy == 12 && retry == 12)); then
  pass "--max-deltas 4 (default): 4 delta windows ran, 12 got 503 with Retry-After"
else
  fail "deltas: want 4 x 200 and 12 x 503 with Retry-After; got $ok, $busy, $retry"
fi
# The attackers end by themselves after 25 s.
wait "$idle_pid" "$loris_pid" 2>/dev/null
echo "    idle attacker: $(cat "$work/idle.out"); slow-loris: $(cat "$work/loris.out")"
closed=$(sed -n 's/.*; \([0-9]*\) closed by the server/\1/p' "$work/idle.out")
# All of loopback is one source: at most 32 (--max-connections-per-address)
# may stay, so the first round alone has at least 1040 - 256 = 784 closed.
if ((${closed:-0} >= 784)); then
  pass "the per-address cap closed $closed of the idle attacker's connections (reopened twice a second)"
else
  fail "the idle attacker's connections were never closed: $(cat "$work/idle.out")" "$work/idle.err"
fi
got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$addr/metrics")
[[ $got == 200 ]] && pass "after the attackers left: $got" || fail "after the attackers left: $got"

echo "== push --metrics-listen: serve's rule (defect 7)"
timeout 10 "$tool" push --pyroscope http://127.0.0.1:9 --metrics-listen 0.0.0.0:0 >"$work/push-open.log" 2>&1
rc=$?
if [[ $rc == 2 ]] && grep -q "refusing to listen on 0.0.0.0:0" "$work/push-open.log"; then
  pass "push --metrics-listen 0.0.0.0:0 without authentication is refused (exit 2)"
else
  fail "push --metrics-listen 0.0.0.0:0: exit $rc" "$work/push-open.log"
fi
timeout 10 "$tool" push --pyroscope http://127.0.0.1:9 --metrics-listen 0.0.0.0:0 \
  --token-file "$work/token" >"$work/push-clear.log" 2>&1
rc=$?
if [[ $rc == 2 ]] && grep -q "clear text" "$work/push-clear.log"; then
  pass "push --metrics-listen 0.0.0.0:0 with a token but no TLS is refused (exit 2)"
else
  fail "push --metrics-listen 0.0.0.0:0 --token-file: exit $rc" "$work/push-clear.log"
fi
e2e_start "$work/push.out" "$work/push.log" "$tool" push --pyroscope http://127.0.0.1:9 --pid "$tpid" \
  --interval 60s --metrics-listen 127.0.0.1:0 --token-file "$work/token"
ppid_=$target_pid
if e2e_wait_for_line "$work/push.log" "metrics on" "$ppid_" 10; then
  maddr=$(sed -n 's/.*metrics on //p' "$work/push.log" | head -n 1)
  a=$(curl -s -o /dev/null -w '%{http_code}' "http://$maddr/metrics")
  b=$(curl -s -o "$work/push-metrics.txt" -w '%{http_code}' -H "Authorization: bearer secret-token-0123456789" "http://$maddr/metrics")
  c=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer secret-token-0123456789" "http://$maddr/other")
  if [[ $a == 401 && $b == 200 && $c == 404 ]] && grep -q "^goheap2pprof_push_trimmed_profiles_total" "$work/push-metrics.txt"; then
    pass "push's /metrics with --token-file: 401 without it, 200 with it, 404 elsewhere"
  else
    fail "push's /metrics with --token-file: $a $b $c" "$work/push.log"
  fi
else
  fail "push with --token-file did not start" "$work/push.log"
fi
e2e_finish
