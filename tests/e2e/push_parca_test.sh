#!/usr/bin/env bash
# `goheap2pprof push --parca` into a real Parca server (v0.28.0), in memory
# on loopback with debuginfod off: the agent pushes through WriteRaw on
# Parca's HTTP gateway, and the stored profiles are queried back through
# Parca's query API: the series carries push's labels, and at each state of
# a target at MemProfileRate 1 (collector off between its allocation
# phases) the stored alloc_space and inuse_space totals equal the target's
# own /debug/pprof/heap; and with --profiles heap,goroutine the goroutine
# profile is stored as Parca's goroutine type, its total a direct capture's.
#
# Parca is not in any package registry: scripts/install-deps.sh --test builds it
# once per machine (or see tests/e2e/serve_parca_test.sh); without it, or
# GOHEAP2PPROF_PARCA, the test is skipped and says so.
#
#   bash tests/e2e/push_parca_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_parca
e2e_make_work push-parca
trap 'e2e_stop_pids -9' EXIT

mkdir -p "$work/bin"
(cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/bin/target" .) \
  >"$work/build.log" 2>&1 || { fail "build servetarget" "$work/build.log"; e2e_finish; }
(cd "$src/tests/pushreceiver" && "${go[@]}" build -o "$work/bin/pushreceiver" .) \
  >"$work/build-receiver.log" 2>&1 || { fail "build tests/pushreceiver" "$work/build-receiver.log"; e2e_finish; }

e2e_start_parca

e2e_start "$work/t.out" "$work/t.err" "$work/bin/target" -rate 1
tpid=$target_pid
e2e_wait_for_line "$work/t.out" "^READY" "$tpid" 20 || { fail "target start" "$work/t.err"; e2e_finish; }
tport=$(awk '/^READY/ {print $3}' "$work/t.out")
e2e_start "$work/push.out" "$work/push.log" "$tool" push --parca "http://127.0.0.1:$pport" \
  --interval 1s --discover-interval 1 --pid "$tpid" --label env=e2e --metrics-listen "" -v \
  --profiles heap,goroutine

# stored <sample type> [profile type]: the newest value of the pid's series
# of that type.
stored() {
  curl -s -G "$papi/profiles/query_range" \
    --data-urlencode "query=${2:-memory:$1:bytes:space:bytes}{pid=\"$tpid\"}" \
    --data-urlencode "start=$(date -u -d '-10 min' +%Y-%m-%dT%H:%M:%SZ)" \
    --data-urlencode "end=$(date -u -d '+1 min' +%Y-%m-%dT%H:%M:%SZ)" \
    --data-urlencode "step=1s" >"$work/range-$1.json"
  jq -r '[.series[0].samples[] | {t: .timestamp, v: .value}] | sort_by(.t) | last | .v' \
    "$work/range-$1.json" 2>/dev/null
}

# expect_state <name>: the stored totals equal the target's own profile.
expect_state() {
  local own want_alloc want_inuse got_alloc got_inuse
  own=$work/own-$1.pb.gz
  curl -s -o "$own" "http://127.0.0.1:$tport/debug/pprof/heap"
  want_alloc=$("$work/bin/pushreceiver" total "$own" alloc_space)
  want_inuse=$("$work/bin/pushreceiver" total "$own" inuse_space)
  for _ in $(seq 1 60); do
    got_alloc=$(stored alloc_space)
    got_inuse=$(stored inuse_space)
    [[ $got_alloc == "$want_alloc" && $got_inuse == "$want_inuse" ]] && break
    sleep 0.5
  done
  if [[ $got_alloc == "$want_alloc" && $got_inuse == "$want_inuse" ]]; then
    pass "$1: Parca's stored alloc_space $got_alloc and inuse_space $got_inuse bytes equal the target's own"
  else
    fail "$1: Parca stored alloc_space ${got_alloc:-none}, inuse_space ${got_inuse:-none}; the target's own: $want_alloc, $want_inuse" "$work/push.log"
  fi
}

expect_state "state 1"
if jq -e --arg p "$tpid" '
    .series[0].labelset.labels as $l |
    ($l | any(.name == "pid" and .value == $p)) and ($l | any(.name == "service_name" and .value == "target")) and
    ($l | any(.name == "env" and .value == "e2e")) and ($l | any(.name == "go_version"))' \
  "$work/range-alloc_space.json" >/dev/null 2>&1; then
  pass "Parca's series carries push's labels: $(jq -c '[.series[0].labelset.labels[] | "\(.name)=\(.value)"]' "$work/range-alloc_space.json")"
else
  fail "Parca series labels" "$work/range-alloc_space.json"
fi
kill -USR1 "$tpid"
e2e_wait_for_line "$work/t.out" "^PHASE2" "$tpid" 20
expect_state "state 2"
# The goroutine profile (--profiles goroutine) is stored as Parca's
# goroutine type, its total the goroutines of a direct capture.
for _ in $(seq 1 20); do
  "$tool" goroutines "$tpid" -o "$work/own-g.pb.gz" 2>/dev/null
  want_g=$("$work/bin/pushreceiver" total "$work/own-g.pb.gz" goroutine)
  got_g=$(stored goroutine goroutine:goroutine:count:goroutine:count)
  [[ $got_g == "$want_g" ]] && break
  sleep 0.5
done
if [[ $got_g == "$want_g" ]] &&
  jq -e '.series[0].labelset.labels | any(.name == "service_name" and .value == "target")' \
    "$work/range-goroutine.json" >/dev/null 2>&1; then
  pass "Parca stores goroutine:goroutine:count:goroutine:count for the pid: $got_g goroutines, as a direct capture"
else
  fail "Parca's goroutine series: ${got_g:-none} goroutines, a direct capture $want_g" "$work/range-goroutine.json"
fi
e2e_stop_pids
e2e_finish
