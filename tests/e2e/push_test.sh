#!/usr/bin/env bash
# End-to-end test of `goheap2pprof push` against test receivers built from
# the backends' own code (tests/pushreceiver: Pyroscope's Push on the
# published pushv1connect handler, Parca's WriteRaw route), which apply the
# servers' validation rules and record what they accepted:
# - meaning: a target at MemProfileRate 1 (testdata/servetarget, which turns
#   its collector off between allocation phases and serves its own
#   /debug/pprof/heap): the inuse values of each push equal the target's own
#   profile at that time, the alloc deltas summed over the pushes equal its
#   own final alloc values, nothing is pushed while its cycle stands still;
#   the labels each backend gets;
# - faults: the receiver answers 500 for a while (every profile arrives
#   exactly once), 400 (no retry, counted, logged), hangs (other processes
#   are still captured and pushed to the other backend; the queue stays
#   bounded, the oldest dropped and counted); the agent restarted mid-run
#   (its first push carries no alloc delta, and no allocation is pushed
#   twice); https with --ca-file (and refused without it), bearer and basic
#   auth from files;
# - goroutines: with --profiles heap,goroutine, a goroutine profile under
#   __name__=goroutine reaches both backends with the goroutine counts per
#   stack of a direct `goheap2pprof goroutines` capture.
# The targets run as user 65534 so that the agent (--allow-uid 65534) leaves
# the machine's other Go processes alone; that needs root.
#
#   bash tests/e2e/push_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/push_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command setpriv "needs setpriv (util-linux) to run the targets as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the targets run as user 65534, apart from this machine's other Go processes)"
  exit 77
fi
e2e_make_work push
chmod 755 "$work"
trap 'e2e_stop_pids -9' EXIT

push_build_programs
push_start_receiver

agent_pid="" maddr=""
# start_agent <name>: the agent, pushing to both receivers every second.
start_agent() {
  e2e_start "$work/$1.out" "$work/$1.log" "$tool" push --pyroscope "http://$raddr" \
    --parca "http://$raddr" --interval 1s --discover-interval 1 --allow-uid 65534 \
    --metrics-listen 127.0.0.1:0 --label env=e2e --tenant team-a --push-timeout 2s \
    --queue 2 --attempts 40 --backoff-max 1 -v
  agent_pid=$target_pid
  if ! e2e_wait_for_line "$work/$1.log" "metrics on" "$agent_pid" 10; then
    fail "push agent $1 did not start" "$work/$1.log"
    e2e_finish
  fi
  maddr=$(sed -n 's/.*metrics on //p' "$work/$1.log" | head -n 1)
}

# metric <name-with-labels>: its value from the agent.
metric() {
  curl -s "http://$maddr/metrics" | awk -v m="$1" '$1 == m {print $2}'
}

count() { "$receiver" count -dir "$work/rec" -pid "$1" -backend "${2:-pyroscope}"; }

more_than() { (($(count "$1" "${3:-pyroscope}") > $2)); }
metric_at_least() { (($(metric "$1" || echo 0) >= $2)); }

# start_target <name>: servetarget at MemProfileRate 1 as user 65534; sets
# tpid and tport.
start_target() {
  e2e_start "$work/$1.out" "$work/$1.err" setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$work/bin/servetarget" -rate 1
  if ! e2e_wait_for_line "$work/$1.out" "^READY" "$target_pid" 20; then
    fail "target $1 did not start" "$work/$1.err"
    e2e_finish
  fi
  read -r _ tpid tport < <(grep "^READY" "$work/$1.out")
}

# phase <name>: the target's next allocation phase (its own GC publishes it,
# then its collector is off again).
phase() {
  local f=$work/$1.out n
  n=$(grep -c "^PHASE2" "$f")
  kill -USR1 "$tpid"
  e2e_wait_until 20 eval '(($(grep -c "^PHASE2" "$f") > n))'
}

own() { curl -s -o "$work/$1.pb.gz" "http://127.0.0.1:$tport/debug/pprof/heap"; }

# checks <what> <checker options...>: the receiver's checker, as one case.
checks() {
  local what=$1
  shift
  if "$receiver" check -dir "$work/rec" -pid "$tpid" "$@" >"$work/check.txt" 2>&1; then
    pass "$what"
    sed 's/^/    /' "$work/check.txt"
  else
    fail "$what" "$work/check.txt"
  fi
}

echo "== meaning"
start_agent agent1
start_target t1
t1pid=$tpid
if e2e_wait_until 20 more_than "$tpid" 0; then
  pass "the target's first profile was pushed"
else
  fail "nothing pushed for pid $tpid in 20 s" "$work/agent1.log"
fi
# The target's collector is off now: wait until the agent has seen the cycle
# stand still at least twice.
u0=$(metric goheap2pprof_push_unchanged_total)
e2e_wait_until 20 metric_at_least goheap2pprof_push_unchanged_total $((u0 + 2))
own own1
checks "state 1: inuse of the last push equals the target's own; alloc deltas sum to its own" \
  -last-inuse "$work/own1.pb.gz" -sum-alloc "$work/own1.pb.gz"

n1=$(count "$tpid")
u1=$(metric goheap2pprof_push_unchanged_total)
sleep 4
n2=$(count "$tpid")
u2=$(metric goheap2pprof_push_unchanged_total)
if ((n1 == n2 && u2 >= u1 + 3)); then
  pass "nothing pushed while the cycle stood still ($n1 pushes; $((u2 - u1)) captures unchanged in 4 s)"
else
  fail "pushes went from $n1 to $n2 while the cycle stood still (unchanged captures $u1 -> $u2)"
fi

phase t1
if e2e_wait_until 20 more_than "$tpid" "$n2"; then
  own own2
  checks "state 2: inuse of the new push equals the target's own; alloc deltas sum to its own" \
    -last-inuse "$work/own2.pb.gz" -sum-alloc "$work/own2.pb.gz"
else
  fail "no push after the target's second phase" "$work/agent1.log"
fi

line=$(grep "\"pid\":\"$tpid\"" "$work/rec/pyroscope.jsonl" | tail -n 1)
want_labels='"labels":{"__delta__":"false","__name__":"memory","env":"e2e","go_version":"go1.26.8","pid":"'$tpid'","service_name":"servetarget"}'
if [[ $line == *"$want_labels"* && $line == *'"tenant":"team-a"'* ]]; then
  pass "Pyroscope labels and X-Scope-OrgID: ${want_labels#\"labels\":} team-a"
else
  echo "    $line"
  fail "Pyroscope labels: want $want_labels and tenant team-a"
fi
pline=$(grep "\"pid\":\"$tpid\"" "$work/rec/parca.jsonl" | tail -n 1)
want_parca='"labels":{"__name__":"memory","env":"e2e","go_version":"go1.26.8","pid":"'$tpid'","service_name":"servetarget"}'
if [[ $pline == *"$want_parca"* && $pline == *'"normalized":false'* ]] && (($(count "$tpid" parca) >= 2)); then
  pass "Parca WriteRaw accepted $(count "$tpid" parca) cumulative profiles, labels ${want_parca#\"labels\":}, normalized=false"
else
  echo "    $pline"
  fail "Parca: want labels $want_parca, normalized=false, 2 profiles"
fi
sizes=$(grep "\"pid\":\"$tpid\"" "$work/rec/pyroscope.jsonl" | sed -n 's/.*"samples":\([0-9]*\),"raw_bytes":\([0-9]*\).*/\1 samples, \2 bytes gzipped/p' | tr '\n' ';')
echo "    Pyroscope pushes of pid $tpid: $sizes"

curl -s "http://$maddr/metrics" >"$work/metrics.txt"
if command -v promtool >/dev/null; then
  if promtool check metrics <"$work/metrics.txt" >"$work/promtool.txt" 2>&1; then
    pass "promtool check metrics accepts the agent's /metrics"
  else
    fail "promtool check metrics" "$work/promtool.txt"
  fi
else
  skip "promtool check metrics: promtool is not installed (Debian package prometheus)"
fi

# With each pushed profile the agent reads the process's Go memory
# statistics (nothing is attached to the profile): counted on /metrics, and
# logged with -v.
reads=$(awk '$1 == "goheap2pprof_memory_stats_reads_total{outcome=\"ok\"}" {print $2}' "$work/metrics.txt")
failed_reads=$(grep -c '^goheap2pprof_memory_stats_reads_total{outcome="[^o]' "$work/metrics.txt")
if ((${reads:-0} >= 2 && failed_reads == 0)) &&
  grep -q "pid $tpid (servetarget): Go runtime total [1-9][0-9]* bytes" "$work/agent1.log"; then
  pass "memory-statistics reads counted on /metrics ($reads ok, none failed) and logged with -v"
else
  fail "memory-statistics reads: ok ${reads:-none}, $failed_reads failure series" "$work/metrics.txt"
fi

echo "== faults"
ctl() { curl -s -o /dev/null -X POST "http://$raddr/control?backend=$1&mode=$2"; }
r0=$(metric 'goheap2pprof_push_retries_total{backend="pyroscope"}')
n0=$(count "$tpid")
ctl pyroscope 500
phase t1
if e2e_wait_until 20 metric_at_least 'goheap2pprof_push_retries_total{backend="pyroscope"}' $((r0 + 3)); then
  pass "500: the agent retries ($(($(metric 'goheap2pprof_push_retries_total{backend="pyroscope"}') - r0)) retries so far)"
else
  fail "500: no retries" "$work/agent1.log"
fi
ctl pyroscope ok
if e2e_wait_until 20 more_than "$tpid" "$n0"; then
  own own3
  checks "500 then recovery: every profile arrived exactly once (alloc deltas sum to the target's own, no ID twice)" \
    -last-inuse "$work/own3.pb.gz" -sum-alloc "$work/own3.pb.gz"
else
  fail "500 then recovery: the profile never arrived" "$work/agent1.log"
fi

x0=$(metric 'goheap2pprof_push_profiles_total{backend="pyroscope",outcome="rejected"}')
n0=$(count "$tpid")
ctl pyroscope 400
phase t1
if e2e_wait_until 20 metric_at_least 'goheap2pprof_push_profiles_total{backend="pyroscope",outcome="rejected"}' $((x0 + 1)); then
  sleep 2
  r1=$(metric 'goheap2pprof_push_retries_total{backend="pyroscope"}')
  sleep 2
  r2=$(metric 'goheap2pprof_push_retries_total{backend="pyroscope"}')
  if ((r1 == r2)) && grep -q "pyroscope: rejected, not retried: pid $tpid" "$work/agent1.log" &&
    (($(count "$tpid") == n0)); then
    pass "400: counted as rejected, logged, not retried"
    grep "rejected, not retried" "$work/agent1.log" | head -n 1 | sed 's/^/    /'
  else
    fail "400: retries $r1 -> $r2, or not logged" "$work/agent1.log"
  fi
else
  fail "400: not counted as rejected" "$work/agent1.log"
fi
ctl pyroscope ok

ctl pyroscope hang
d0=$(metric 'goheap2pprof_push_profiles_total{backend="pyroscope",outcome="dropped"}')
start_target t2
t2pid=$tpid
if e2e_wait_until 20 more_than "$t2pid" 0 parca; then
  pass "hang: while Pyroscope hangs, a new process is still captured and pushed to Parca"
else
  fail "hang: pid $t2pid not pushed to Parca while Pyroscope hangs" "$work/agent1.log"
fi
tpid=$t1pid tport=$(awk '/^READY/ {print $3}' "$work/t1.out")
for i in 1 2 3 4 5 6; do
  phase t1
  sleep 1.2
done
d1=$(metric 'goheap2pprof_push_profiles_total{backend="pyroscope",outcome="dropped"}')
q=$(metric 'goheap2pprof_push_queue_length{backend="pyroscope"}')
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$agent_pid/status")
if ((d1 > d0 && q <= 2)); then
  pass "hang: the queue stays bounded ($q of 2 queued, $((d1 - d0)) oldest dropped and counted; agent RSS ${rss} KiB)"
else
  fail "hang: dropped $d0 -> $d1, queue $q" "$work/agent1.log"
fi
ctl pyroscope ok
sleep 3
checks "hang then recovery: no profile accepted twice, no alloc pushed twice" \
  -sum-alloc "$(own own4 && echo "$work/own4.pb.gz")" -at-most

echo "== restart"
kill -TERM "$agent_pid"
wait "$agent_pid" 2>/dev/null
# After the old agent's exit: it sends what it still had queued.
before=$(count "$tpid")
own own_restart
start_agent agent2
if e2e_wait_until 20 more_than "$tpid" "$before"; then
  checks "restart: the first push of the new agent carries no alloc delta" -first-no-alloc $((before + 1))
else
  fail "restart: nothing pushed by the new agent" "$work/agent2.log"
fi
after=$(count "$tpid")
phase t1
if e2e_wait_until 20 more_than "$tpid" "$after"; then
  own own5
  checks "restart: the next push has deltas again, none pushed twice" \
    -last-inuse "$work/own5.pb.gz" -sum-alloc "$work/own5.pb.gz" -at-most
  checks "restart: the deltas pushed since the new agent's baseline are exactly the target's allocations since the restart" \
    -sum-alloc "$work/own5.pb.gz" -base "$work/own_restart.pb.gz" -after "$before"
else
  fail "restart: no push after the next phase" "$work/agent2.log"
fi
b=$(metric goheap2pprof_push_baselines_total)
if ((b >= 1)); then
  pass "restart: counted as $b baseline(s) in /metrics"
else
  fail "restart: no baseline counted"
fi

echo "== TLS and authentication"
mkdir -p "$work/rec-tls" "$work/rec-basic"
printf 'test-token-0123456789\n' >"$work/token"
printf 'pusher:pa55word\n' >"$work/basic"
e2e_start "$work/rec-tls.out" "$work/rec-tls.err" "$receiver" serve -dir "$work/rec-tls" -tls \
  -auth "Bearer test-token-0123456789"
e2e_wait_for_line "$work/rec-tls.out" "^LISTENING" "$target_pid" 10
tls_addr=$(sed -n 's/^LISTENING //p' "$work/rec-tls.out")
e2e_start "$work/rec-basic.out" "$work/rec-basic.err" "$receiver" serve -dir "$work/rec-basic" \
  -auth "Basic $(printf 'pusher:pa55word' | base64)"
e2e_wait_for_line "$work/rec-basic.out" "^LISTENING" "$target_pid" 10
basic_addr=$(sed -n 's/^LISTENING //p' "$work/rec-basic.out")
e2e_start "$work/agent3.out" "$work/agent3.log" "$tool" push --pyroscope "https://$tls_addr" \
  --ca-file "$work/rec-tls/ca.pem" --pyroscope-token-file "$work/token" \
  --parca "http://$basic_addr" --parca-basic-auth-file "$work/basic" \
  --interval 1s --discover-interval 1 --allow-uid 65534 --metrics-listen "" --pid "$tpid"
e2e_start "$work/agent4.out" "$work/agent4.log" "$tool" push --pyroscope "https://$tls_addr" \
  --pyroscope-token-file "$work/token" --interval 1s --discover-interval 1 --allow-uid 65534 \
  --metrics-listen "" --pid "$tpid" --attempts 1
tls_more() { (($("$receiver" count -dir "$work/rec-tls" -pid "$tpid") > 0)); }
basic_more() { (($("$receiver" count -dir "$work/rec-basic" -pid "$tpid" -backend parca) > 0)); }
if e2e_wait_until 20 tls_more && grep -q '"auth":"Bearer test-token-0123456789"' "$work/rec-tls/pyroscope.jsonl"; then
  pass "https with --ca-file and a bearer token from a file: Pyroscope push accepted"
else
  fail "https with --ca-file and a bearer token: nothing accepted" "$work/agent3.log"
fi
if e2e_wait_until 20 basic_more; then
  pass "basic auth from a file: Parca push accepted"
else
  fail "basic auth: nothing accepted" "$work/agent3.log"
fi
if e2e_wait_until 20 grep -q "gave up after 1 attempts.*SSL" "$work/agent4.log"; then
  pass "https without --ca-file: the self-signed certificate is refused (system CA store)"
  grep -m1 "gave up" "$work/agent4.log" | sed 's/^/    /'
else
  fail "https without --ca-file: no certificate error" "$work/agent4.log"
fi

echo "== goroutine profiles (--profiles heap,goroutine)"
mkdir -p "$work/rec-g"
e2e_start "$work/rec-g.out" "$work/rec-g.err" "$receiver" serve -dir "$work/rec-g"
e2e_wait_for_line "$work/rec-g.out" "^LISTENING" "$target_pid" 10
g_addr=$(sed -n 's/^LISTENING //p' "$work/rec-g.out")
e2e_start "$work/agent5.out" "$work/agent5.log" "$tool" push --pyroscope "http://$g_addr" \
  --parca "http://$g_addr" --profiles heap,goroutine --interval 1s --discover-interval 1 \
  --allow-uid 65534 --metrics-listen "" --pid "$t2pid"
g_count() { grep -c "\"__name__\":\"$1\".*\"pid\":\"$t2pid\"" "$work/rec-g/$2.jsonl" 2>/dev/null; }
g_both() { (($(g_count goroutine pyroscope) > 0 && $(g_count goroutine parca) > 0 && $(g_count memory pyroscope) > 0)); }
if e2e_wait_until 20 g_both; then
  pass "the heap (__name__=memory) and the goroutine profile (__name__=goroutine) both pushed to both backends"
else
  fail "no goroutine push for pid $t2pid" "$work/agent5.log"
fi
gline=$(grep "\"__name__\":\"goroutine\".*\"pid\":\"$t2pid\"" "$work/rec-g/pyroscope.jsonl" | tail -n 1)
want_g='"labels":{"__delta__":"false","__name__":"goroutine","go_version":"go1.26.8","pid":"'$t2pid'","service_name":"servetarget"}'
if [[ $gline == *"$want_g"* ]]; then
  pass "Pyroscope goroutine series labels ${want_g#\"labels\":}"
else
  echo "    $gline"
  fail "Pyroscope goroutine labels: want $want_g"
fi
# The target holds still: a direct capture has the pushes' counts. A push
# of the same second may race a goroutine's move, so a few tries.
for backend in pyroscope parca; do
  for _ in 1 2 3 4 5; do
    "$tool" goroutines "$t2pid" -o "$work/own-g.pb.gz" 2>/dev/null
    "$receiver" goroutines -dir "$work/rec-g" -pid "$t2pid" -backend "$backend" \
      -own "$work/own-g.pb.gz" >"$work/check-g.txt" 2>&1 && break
    sleep 1.2
  done
  if grep -q '^PASS' "$work/check-g.txt"; then
    pass "$backend: $(sed -n 's/^PASS: //p' "$work/check-g.txt")"
  else
    fail "$backend: goroutine counts differ from a direct capture" "$work/check-g.txt"
  fi
done

e2e_stop_pids
e2e_finish
