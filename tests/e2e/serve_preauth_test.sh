#!/usr/bin/env bash
# `goheap2pprof serve --token-file` against clients without credentials
# (issue 38, findings 1 and 2), all on loopback as a local user would:
#  - 512 connections from 127.0.0.2-127.0.0.17 (16 addresses, 32 each),
#    each sending one GET without a token: all get 401 and are closed by
#    the server; meanwhile and after, an authenticated /metrics answers 200
#    within 1 s;
#  - 1,040 connections from 16 addresses that send nothing and reopen as
#    soon as they are closed (the caps full all the time): an authenticated
#    /metrics and the --probe-path without a token still answer 200 within
#    1 s;
#  - 300 connections whose heads hold 16,000 empty fields ("a:") each: all
#    answered 431 and closed;
#  and the server's peak RSS (VmHWM) grows less than 64 MiB over it all.
#
#   bash tests/e2e/serve_preauth_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_command curl "needs curl"
e2e_require_command python3 "needs python3 for the clients without credentials"
e2e_make_work serve-preauth
trap 'e2e_stop_pids -9' EXIT
attack=$src/tests/e2e/http_attack.py
sources=$(seq -s, -f '127.0.0.%g' 2 17)
token=secret-token-0123456789
printf '%s\n' "$token" >"$work/token"

hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

# within_1s <what> <curl options...>: passes when the answer is 200 within 1 s.
within_1s() {
  local what=$1 r
  shift
  r=$(curl -s -o /dev/null --max-time 1 -w '%{http_code} %{time_total}' "$@")
  if [[ ${r% *} == 200 ]]; then
    pass "$what: 200 in ${r#* } s"
  else
    fail "$what: want 200 within 1 s, got $r"
  fi
}

# attack <name> <mode> <args...>: runs http_attack.py in the background,
# waits until its requests are sent (READY); sets attack_pid.
attack() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.err" python3 "$attack" "$@"
  attack_pid=$target_pid
  e2e_wait_for_line "$work/$name.out" "^READY" "$attack_pid" 60 ||
    fail "$name: the attacker did not finish sending" "$work/$name.err"
}

e2e_start "$work/serve.out" "$work/serve.log" "$tool" serve --listen 127.0.0.1:0 \
  --token-file "$work/token" --probe-path /healthz
spid=$target_pid
e2e_wait_for_line "$work/serve.log" "listening on" "$spid" 10 || { fail "serve start" "$work/serve.log"; e2e_finish; }
addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/serve.log" | head -n 1)
auth=(-H "Authorization: Bearer $token" "http://$addr/metrics")
curl -s -o /dev/null "${auth[@]}"
idle=$(hwm_kib "$spid")
echo "    idle VmHWM: $((idle / 1024)) MiB"

echo "== 512 connections that got 401 (finding 1)"
attack noauth noauth "$addr" 512 5 "$sources"
within_1s "authenticated /metrics while the 401 connections are held" "${auth[@]}"
sleep 3
within_1s "authenticated /metrics 3 s later" "${auth[@]}"
wait "$attack_pid"
out=$(cat "$work/noauth.out")
echo "    $out"
if [[ $out == *"answers: 512 x HTTP/1.1 401 Unauthorized;"* && $out == *"; 512 of 512 closed by the server"* ]]; then
  pass "512 requests without a token: all answered 401 and closed by the server"
else
  fail "requests without a token: want 512 answered 401 and closed" "$work/noauth.out"
fi

echo "== caps full of connections that send nothing (finding 1)"
e2e_start "$work/idle.out" "$work/idle.err" python3 "$attack" idle "$addr" 1040 12 "$sources"
idle_pid=$target_pid
sleep 3
bad=0
for i in $(seq 1 10); do
  r=$(curl -s -o /dev/null --max-time 1 -w '%{http_code} %{time_total}' "${auth[@]}")
  p=$(curl -s -o /dev/null --max-time 1 -w '%{http_code} %{time_total}' "http://$addr/healthz")
  [[ ${r% *} == 200 && ${p% *} == 200 ]] || { bad=$((bad + 1)); echo "    probe $i: /metrics $r, /healthz $p"; }
  sleep 0.5
done
wait "$idle_pid"
echo "    idle attacker: $(cat "$work/idle.out")"
if ((bad == 0)); then
  pass "10 rounds: authenticated /metrics and /healthz (no token) answered 200 within 1 s"
else
  fail "$bad of 10 rounds of /metrics and /healthz failed or took over 1 s"
fi

echo "== 300 heads of 16,000 empty fields (finding 2)"
attack fields fields "$addr" 300 16000 "$sources"
wait "$attack_pid"
out=$(cat "$work/fields.out")
echo "    $out"
if [[ $out == *"answers: 300 x HTTP/1.1 431 Request Header Fields Too Large;"* &&
  $out == *"; 300 of 300 closed by the server"* ]]; then
  pass "300 heads of 16,000 fields: all answered 431 and closed"
else
  fail "heads of 16,000 fields: want 300 answered 431 and closed" "$work/fields.out"
fi
within_1s "authenticated /metrics after the attacks" "${auth[@]}"

peak=$(hwm_kib "$spid")
echo "    peak VmHWM: $((peak / 1024)) MiB (+$(((peak - idle) / 1024)) MiB); now VmRSS $(awk '/^VmRSS:/ {print int($2 / 1024)}' "/proc/$spid/status") MiB"
if ((peak - idle < 64 * 1024)); then
  pass "peak RSS within 64 MiB of idle over all the attacks (+$(((peak - idle) / 1024)) MiB)"
else
  fail "peak RSS grew by $(((peak - idle) / 1024)) MiB, want under 64 MiB"
fi
kill -0 "$spid" 2>/dev/null && pass "the server is still running" || fail "the server died" "$work/serve.log"
e2e_finish
