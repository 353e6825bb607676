#!/usr/bin/env bash
# End-to-end test of how `goheap2pprof push` delivers, against the test
# receiver (tests/pushreceiver) and its logging forward proxy:
# - rate limits: 429 with Retry-After N (delta-seconds) for the first K
#   requests: the profile arrives, and no retry comes before the time the
#   receiver asked for; 408 with Retry-After as an HTTP-date (Parca); a
#   Retry-After beyond --retry-after-max is cut to it;
# - the queue's byte bound: while the backend hangs, --max-queue-bytes keeps
#   one profile waiting (the newest), drops the older ones and counts them
#   and their bytes in /metrics;
# - proxies from the environment: HTTP_PROXY (upper case) carries an http
#   push, HTTPS_PROXY tunnels an https push (CONNECT, the certificate still
#   checked against --ca-file), NO_PROXY bypasses the proxy.
# The backends listen on 127.0.0.2 and the proxy on 127.0.0.1, so that
# NO_PROXY can name the one and not the other. The target runs as user 65534
# (--allow-uid 65534 keeps the machine's other Go processes out); that needs
# root.
#
#   bash tests/e2e/push_delivery_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/push_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command jq "needs jq"
e2e_require_command setpriv "needs setpriv (util-linux) to run the target as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the target runs as user 65534, apart from this machine's other Go processes)"
  exit 77
fi
e2e_make_work push_delivery
chmod 755 "$work"
trap 'e2e_stop_pids -9' EXIT

push_build_programs

# start_listening <name> <command...>: starts a receiver or proxy that prints
# "LISTENING <addr>"; sets addr.
addr=""
start_listening() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.err" "$@"
  if ! e2e_wait_for_line "$work/$name.out" "^LISTENING" "$target_pid" 10; then
    fail "$name did not start" "$work/$name.err"
    e2e_finish
  fi
  addr=$(sed -n 's/^LISTENING //p' "$work/$name.out")
}

mkdir -p "$work/rec" "$work/rec-tls"
start_listening rec "$receiver" serve -dir "$work/rec" -addr 127.0.0.2:0
raddr=$addr
start_listening rec-tls "$receiver" serve -dir "$work/rec-tls" -addr 127.0.0.2:0 -tls
tls_addr=$addr
start_listening proxy "$receiver" proxy -log "$work/proxy.log"
proxy_addr=$addr
touch "$work/proxy.log"

e2e_start "$work/t.out" "$work/t.err" setpriv --reuid=65534 --regid=65534 --clear-groups \
  "$work/bin/servetarget" -rate 1
if ! e2e_wait_for_line "$work/t.out" "^READY" "$target_pid" 20; then
  fail "the target did not start" "$work/t.err"
  e2e_finish
fi
read -r _ tpid _ < <(grep "^READY" "$work/t.out")

count() { "$receiver" count -dir "$1" -pid "$tpid" -backend "$2"; }
more_than() { (($(count "$1" "$2") > $3)); }

# agent <name> <push options...>: a push agent for the target alone, with the
# proxy variables of this machine cleared (a case sets its own in agent_env)
# and /metrics on $metrics_listen (empty: none).
agent_pid=""
agent() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.log" env -u http_proxy -u https_proxy -u HTTPS_PROXY \
    -u HTTP_PROXY -u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY "${agent_env[@]}" \
    "$tool" push --pid "$tpid" --allow-uid 65534 --interval 1s --discover-interval 1 \
    --metrics-listen "$metrics_listen" "$@"
  agent_pid=$target_pid
}
agent_env=() metrics_listen=""
stop_agent() {
  kill -TERM "$agent_pid" 2>/dev/null
  wait "$agent_pid" 2>/dev/null
}
arm() { curl -s -o /dev/null -X POST "http://$raddr/reply?$1"; }

# retry_order <backend> <accepted-record>: checks, from the receiver's
# replies.jsonl, that each retry came no earlier than the previous answer's
# Retry-After allowed, and the accepted push no earlier than the last one's.
retry_order() {
  jq -s --argjson ok "$2" --arg b "$1" '
    [.[] | select(.backend == $b)] as $r
    | ([range(1; $r | length) | select($r[.].at_ms < $r[. - 1].not_before_ms)] | length == 0)
      and ($ok.at_ms >= $r[-1].not_before_ms)' "$work/rec/replies.jsonl"
}

echo "== 429 with Retry-After in seconds (Pyroscope)"
arm "backend=pyroscope&code=429&count=2&retry-after=2"
agent a429 --pyroscope "http://$raddr" --attempts 5 -v
if e2e_wait_until 30 more_than "$work/rec" pyroscope 0; then
  ok=$(grep "\"pid\":\"$tpid\"" "$work/rec/pyroscope.jsonl" | head -n 1)
  n429=$(jq -s '[.[] | select(.backend == "pyroscope" and .code == 429)] | length' "$work/rec/replies.jsonl")
  first=$(jq -s '[.[] | select(.backend == "pyroscope")][0].at_ms' "$work/rec/replies.jsonl")
  if [[ $(retry_order pyroscope "$ok") == true ]] && ((n429 == 2)); then
    pass "429 twice with Retry-After: 2: the profile arrived $(($(jq .at_ms <<<"$ok") - first)) ms after the first 429, no retry before the time asked"
  else
    fail "429: a retry came before Retry-After allowed ($n429 answers of 429)" "$work/rec/replies.jsonl"
  fi
else
  fail "429: the profile never arrived" "$work/a429.log"
fi
stop_agent
grep -m1 "Retry-After" "$work/a429.log" | sed 's/^/    /'

echo "== 408 with Retry-After as an HTTP-date (Parca)"
arm "backend=parca&code=408&count=1&retry-after=2&form=date"
agent a408 --parca "http://$raddr" --attempts 5 -v
if e2e_wait_until 30 more_than "$work/rec" parca 0; then
  ok=$(grep "\"pid\":\"$tpid\"" "$work/rec/parca.jsonl" | head -n 1)
  if [[ $(retry_order parca "$ok") == true ]]; then
    pass "408 with Retry-After: $(jq -rs '[.[] | select(.backend == "parca")][-1].retry_after' "$work/rec/replies.jsonl"): the profile arrived, not before that time"
  else
    fail "408: the retry came before the HTTP-date" "$work/rec/replies.jsonl"
  fi
else
  fail "408: the profile never arrived" "$work/a408.log"
fi
stop_agent

echo "== a Retry-After beyond --retry-after-max"
n0=$(count "$work/rec" pyroscope)
arm "backend=pyroscope&code=503&count=1&retry-after=3600"
agent acap --pyroscope "http://$raddr" --attempts 5 --retry-after-max 1 -v
if e2e_wait_until 20 more_than "$work/rec" pyroscope "$n0"; then
  pass "503 with Retry-After: 3600 and --retry-after-max 1: the profile arrived within 20 s"
else
  fail "--retry-after-max: the profile did not arrive within 20 s" "$work/acap.log"
fi
stop_agent

echo "== the queue's byte bound"
curl -s -o /dev/null -X POST "http://$raddr/control?backend=pyroscope&mode=hang"
metrics_listen=127.0.0.1:0
agent aqueue --pyroscope "http://$raddr" --push-timeout 60s --queue 64 --max-queue-bytes 1 -v
metrics_listen=""
maddr=""
if e2e_wait_for_line "$work/aqueue.log" "metrics on" "$agent_pid" 10; then
  maddr=$(sed -n 's/.*metrics on //p' "$work/aqueue.log" | head -n 1)
fi
metric() { curl -s "http://$maddr/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# The first profile hangs in the sender; each new phase of the target queues
# one more, and the byte bound lets only the newest wait.
for i in 1 2 3 4; do
  n=$(grep -c "^PHASE2" "$work/t.out")
  kill -USR1 "$tpid"
  e2e_wait_until 20 eval '(($(grep -c "^PHASE2" "$work/t.out") > n))'
  sleep 1.5
done
dropped=$(metric 'goheap2pprof_push_profiles_total{backend="pyroscope",outcome="dropped"}')
dbytes=$(metric 'goheap2pprof_push_dropped_bytes_total{backend="pyroscope"}')
queued=$(metric 'goheap2pprof_push_queue_length{backend="pyroscope"}')
qbytes=$(metric 'goheap2pprof_push_queue_bytes{backend="pyroscope"}')
if ((${dropped:-0} >= 1 && ${dbytes:-0} > 0 && ${queued:-99} == 1)) &&
  grep -q "dropped the oldest profile, pid $tpid" "$work/aqueue.log"; then
  pass "--max-queue-bytes 1 while the backend hangs: 1 profile ($qbytes bytes) waits, $dropped older ones dropped ($dbytes bytes), counted and logged"
else
  fail "queue byte bound: dropped ${dropped:-?} (${dbytes:-?} bytes), queued ${queued:-?}" "$work/aqueue.log"
fi
curl -s -o /dev/null -X POST "http://$raddr/control?backend=pyroscope&mode=ok"
stop_agent

echo "== proxies from the environment"
n0=$(count "$work/rec" pyroscope)
agent_env=("HTTP_PROXY=http://$proxy_addr")
agent aproxy --pyroscope "http://$raddr" -v
if e2e_wait_until 20 more_than "$work/rec" pyroscope "$n0" &&
  grep -q "^POST http://$raddr/push.v1.PusherService/Push" "$work/proxy.log"; then
  pass "HTTP_PROXY: the http push went through the proxy ($(grep -m1 '^POST' "$work/proxy.log"))"
else
  fail "HTTP_PROXY: the push did not go through the proxy" "$work/proxy.log"
  sed 's/^/    /' "$work/aproxy.log" | tail -n 5
fi
stop_agent

agent_env=("HTTPS_PROXY=http://$proxy_addr")
agent atunnel --pyroscope "https://$tls_addr" --ca-file "$work/rec-tls/ca.pem" -v
if e2e_wait_until 20 more_than "$work/rec-tls" pyroscope 0 && grep -q "^CONNECT $tls_addr" "$work/proxy.log"; then
  pass "HTTPS_PROXY: the https push was tunnelled (CONNECT $tls_addr) and accepted"
else
  fail "HTTPS_PROXY: no tunnel through the proxy" "$work/proxy.log"
  sed 's/^/    /' "$work/atunnel.log" | tail -n 5
fi
stop_agent

lines=$(wc -l <"$work/proxy.log")
n0=$(count "$work/rec" pyroscope)
agent_env=("HTTP_PROXY=http://$proxy_addr" "HTTPS_PROXY=http://$proxy_addr" "NO_PROXY=127.0.0.2")
agent abypass --pyroscope "http://$raddr" -v
if e2e_wait_until 20 more_than "$work/rec" pyroscope "$n0" && (($(wc -l <"$work/proxy.log") == lines)); then
  pass "NO_PROXY=127.0.0.2: the push went straight to the receiver, not through the proxy"
else
  fail "NO_PROXY: the proxy saw the push, or it never arrived" "$work/proxy.log"
fi
stop_agent

e2e_stop_pids
e2e_finish
