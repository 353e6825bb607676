#!/usr/bin/env bash
# End-to-end test of `goheap2pprof serve`: what it answers for a Go process
# must mean what that process's own net/http/pprof answers (testdata/
# servetarget serves its own on loopback), for Go 1.19.8, 1.26.8 and 1.27.3:
# heap, allocs (with default_sample_type), ?seconds=N deltas over a second
# allocation phase, the /pid/N/ alias; then the error statuses, real and
# test clients (go tool pprof, Alloy's and Parca's acceptance rules in
# tests/serveclient, promtool), the security options, and the faults a
# worker can have (crash, seccomp kill, CPU limit, hang, killed mid-capture).
#
#   bash tests/e2e/serve_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
e2e_init "$@"
e2e_require_seams
e2e_require_go
e2e_require_command curl "needs curl"
e2e_make_work serve
trap 'e2e_stop_pids -9' EXIT

# metric <name-with-labels>: its value from the server at $addr.
metric() {
  curl -s "http://$addr/metrics" | awk -v m="$1" '$1 == m {print $2}'
}

# debug_records <file>: the ?debug=1 text as sorted lines, one per record
# (its header line and frame lines joined by "|", tabs kept), the "heap
# profile:" line first, without the runtime.MemStats block (compared by
# debug_memstats_test.sh). Ties in in-use bytes have no defined order,
# hence the sort.
debug_records() {
  awk '/^# runtime.MemStats/ {exit}
       /^heap profile:/ {print "0 " $0; next}
       /^-?[0-9]+: -?[0-9]+ \[/ {if (rec != "") print rec; rec = "1 " $0; next}
       /^$/ {next}
       {rec = rec "|" $0}
       END {if (rec != "") print rec}' "$1" | sort
}

# same_debug_text <what> <ours-url> <own-url>: as same_as_own for ?debug=1.
same_debug_text() {
  local what=$1 ours=$2 own=$3 attempt
  for attempt in 1 2 3; do
    curl -s -o "$work/ours.txt" "$ours" && curl -s -o "$work/own.txt" "$own" || continue
    debug_records "$work/ours.txt" >"$work/ours.records"
    debug_records "$work/own.txt" >"$work/own.records"
    if [[ -s $work/own.records ]] && cmp -s "$work/ours.records" "$work/own.records" &&
      grep -q "^# runtime.MemStats" "$work/own.txt"; then
      pass "$what (attempt $attempt, $(($(wc -l <"$work/own.records") - 1)) records)"
      return
    fi
  done
  diff "$work/own.records" "$work/ours.records" | tr '|' '\n' >"$work/diff.txt"
  fail "$what" "$work/diff.txt"
}

echo "== building the targets"
mkdir -p "$work/bin"
versions=()
for v in go1.19.8 go1.26.8 go1.27.3; do
  if ! why=$(toolchain_ok "$v"); then
    skip "Go $v cases: $why"
    continue
  fi
  if (cd "$src/testdata/servetarget" && CGO_ENABLED=0 $(go_cmd "$v") build -o "$work/bin/servetarget-$v" .) \
    >"$work/build-$v.log" 2>&1; then
    versions+=("$v")
  else
    fail "build servetarget with $v" "$work/build-$v.log"
  fi
done
(cd "$src/testdata/errtargets/nopprof" && CGO_ENABLED=0 "${go[@]}" build -o "$work/bin/nopprof" .) \
  >"$work/build-nopprof.log" 2>&1 || fail "build nopprof" "$work/build-nopprof.log"
(cd "$src/tests/serveclient" && "${go[@]}" build -o "$work/bin/serveclient" .) \
  >"$work/build-client.log" 2>&1 || fail "build tests/serveclient" "$work/build-client.log"

start_serve main
main_addr=$addr main_pid=$serve_pid
for w in $(pgrep -P "$main_pid"); do
  if grep -q "^Seccomp:[[:space:]]*2" "/proc/$w/status" && grep -q "^NoNewPrivs:[[:space:]]*1" "/proc/$w/status"; then
    pass "worker $w runs under a seccomp filter with no_new_privs"
  else
    fail "worker $w is not confined" "/proc/$w/status"
  fi
done

for v in "${versions[@]}"; do
  echo "== $v"
  e2e_start "$work/target-$v.out" "$work/target-$v.err" "$work/bin/servetarget-$v"
  tpid=$target_pid
  if ! e2e_wait_for_line "$work/target-$v.out" "^READY" "$tpid" 20; then
    fail "$v: target did not start" "$work/target-$v.err"
    continue
  fi
  port=$(awk '/^READY/ {print $3}' "$work/target-$v.out")
  own="http://127.0.0.1:$port/debug/pprof"
  same_as_own "$v heap same as the target's own" "http://$main_addr/debug/pprof/heap?pid=$tpid" "$own/heap"
  same_as_own "$v allocs same as the target's own (default_sample_type alloc_space)" \
    "http://$main_addr/debug/pprof/allocs?pid=$tpid" "$own/allocs"
  same_debug_text "$v ?debug=1: same records and frames as the target's own" \
    "http://$main_addr/debug/pprof/heap?pid=$tpid&debug=1" "$own/heap?debug=1"
  same_as_own "$v /pid/N/ alias same as the target's own" \
    "http://$main_addr/pid/$tpid/debug/pprof/heap" "$own/heap"
  status "http://$main_addr/debug/pprof/heap?pid=$tpid" >/dev/null
  if grep -qi '^Content-Type: application/octet-stream' "$work/headers" &&
    grep -qi '^Content-Disposition: attachment; filename="heap"' "$work/headers" &&
    grep -qi '^X-Content-Type-Options: nosniff' "$work/headers"; then
    pass "$v headers as net/http/pprof"
  else
    fail "$v headers" "$work/headers"
  fi

  # Delta: both windows contain phase 2 (which ends with a GC that
  # publishes it) and no other collection, so both deltas are phase 2.
  curl -s -D "$work/delta-headers" -o "$work/delta-ours.pb.gz" \
    "http://$main_addr/debug/pprof/heap?pid=$tpid&seconds=3" &
  c1=$!
  curl -s -o "$work/delta-own.pb.gz" "$own/heap?seconds=3" &
  c2=$!
  sleep 1
  kill -USR1 "$tpid"
  wait "$c1" "$c2"
  if "$profdiff" "$work/delta-own.pb.gz" "$work/delta-ours.pb.gz" >"$work/diff.txt" 2>&1 &&
    grep -q "PHASE2" "$work/target-$v.out"; then
    pass "$v ?seconds=3 delta same as the target's own delta over phase 2"
  else
    fail "$v ?seconds=3 delta" "$work/diff.txt"
  fi
  if grep -qi 'filename="heap-delta"' "$work/delta-headers"; then
    pass "$v delta filename heap-delta"
  else
    fail "$v delta filename" "$work/delta-headers"
  fi
  if [[ -x $work/bin/serveclient ]]; then
    if "$work/bin/serveclient" scrape "http://$main_addr/debug/pprof/allocs?pid=$tpid" >"$work/client.txt" 2>&1; then
      pass "$v Alloy and Parca acceptance rules ($(grep -c ^PASS "$work/client.txt") checks)"
    else
      fail "$v Alloy and Parca acceptance rules" "$work/client.txt"
    fi
  fi
  last_target=$tpid last_version=$v
done

if [[ -n ${last_target:-} ]]; then
  tpid=$last_target
  echo "== clients and errors (target $last_version, pid $tpid)"
  if "${go[@]}" tool pprof -top "http://$main_addr/debug/pprof/heap?pid=$tpid" >"$work/top.txt" 2>&1 &&
    grep -q " main.main$" "$work/top.txt"; then
    pass "go tool pprof -top http://.../debug/pprof/heap?pid=N"
  else
    fail "go tool pprof -top" "$work/top.txt"
  fi
  if "${go[@]}" tool pprof -top -base "http://$main_addr/debug/pprof/heap?pid=$tpid" \
    "http://$main_addr/debug/pprof/heap?pid=$tpid" >"$work/base.txt" 2>&1 &&
    grep -q "^Showing nodes accounting for 0, 0% of 0 total" "$work/base.txt"; then
    pass "go tool pprof -base between two serve captures (nothing changed: 0 total)"
  else
    fail "go tool pprof -base" "$work/base.txt"
  fi
  h="http://$main_addr/debug/pprof/heap?pid=$tpid"
  expect_status "seconds=0" 400 'invalid value for "seconds" - must be a positive integer' "$h&seconds=0"
  expect_status "seconds with debug" 400 "seconds and debug params are incompatible" "$h&seconds=1&debug=1"
  expect_status "gc=1" 400 "cannot be honoured" "$h&gc=1"
  expect_status "allocs ignores gc=1 as Go does" 200 "" "http://$main_addr/debug/pprof/allocs?pid=$tpid&gc=1"
  expect_status "missing pid" 400 "missing pid" "http://$main_addr/debug/pprof/heap"
  expect_status "unknown profile" 404 "Unknown profile" "http://$main_addr/debug/pprof/block?pid=$tpid"
  sleep 0 & gone=$!
  wait $gone
  expect_status "pid of an exited process" 404 "no such process" "http://$main_addr/debug/pprof/heap?pid=$gone"
  e2e_start "$work/sleep.out" "$work/sleep.err" sleep 300
  expect_status "not a Go program" 404 "not a Go program" "http://$main_addr/debug/pprof/heap?pid=$target_pid"
  if [[ -x $work/bin/nopprof ]]; then
    e2e_start "$work/nopprof.out" "$work/nopprof.err" "$work/bin/nopprof"
    e2e_wait_for_line "$work/nopprof.out" READY "$target_pid" 10
    expect_status "heap profiling compiled out" 409 "heap profiling is compiled out" \
      "http://$main_addr/debug/pprof/heap?pid=$target_pid"
  fi
  expect_status "malformed path escape" 400 "malformed request path" "http://$main_addr/debug/pprof/he%zzap?pid=1"
  long=$(head -c 10000 /dev/zero | tr '\0' a)
  got=$(status "http://$main_addr/debug/pprof/heap?pid=$tpid&x=$long")
  if [[ $got == 414 || $got == 400 ]]; then pass "over-long request line: $got"; else fail "over-long request line: $got"; fi
  hdrs=()
  for i in $(seq 1 80); do hdrs+=(-H "X-Filler-$i: 1"); done
  expect_status "too many header fields" 431 "too many header fields" "$h" "${hdrs[@]}"
  curl -s "http://$main_addr/targets" >"$work/targets.json"
  # (-s: jq -e succeeds on empty input)
  if [[ -s $work/targets.json ]] && jq -e --arg p "$tpid" --arg a "$main_addr" \
    '.[] | select(.labels.pid == $p) | .labels as $l | .targets == [$a] and $l.__param_pid == $p and
     ($l.go_version | startswith("go1.")) and $l.service_name == ("servetarget-" + $l.go_version) and
     ($l.build_id | length > 0) and ($l.start_time | tonumber > 0) and
     ($l.exe | endswith("/servetarget-" + $l.go_version)) and ($l.comm | length > 0)' \
    "$work/targets.json" >/dev/null; then
    pass "/targets lists the target with its labels"
  else
    curl -s "http://$main_addr/targets" | jq --arg p "$tpid" '.[] | select(.labels.pid == $p)' | head -20
    fail "/targets labels"
  fi
  if curl -s "http://$main_addr/" | grep -q "/debug/pprof/heap?pid=$tpid&amp;debug=1"; then
    pass "HTML index links the target's profiles"
  else
    fail "HTML index"
  fi
  addr=$main_addr
  curl -s "http://$addr/metrics" >"$work/metrics.txt"
  if command -v promtool >/dev/null; then
    if promtool check metrics <"$work/metrics.txt" >"$work/promtool.txt" 2>&1; then
      pass "promtool check metrics accepts /metrics"
    else
      fail "promtool check metrics" "$work/promtool.txt"
    fi
  else
    skip "promtool check metrics: no promtool (Debian package prometheus)"
  fi
  ok=$(metric 'goheap2pprof_captures_total{outcome="ok"}')
  if [[ ${ok:-0} -gt 0 ]]; then pass "/metrics counts captures ($ok ok)"; else fail "/metrics ok count" "$work/metrics.txt"; fi

  e2e_start "$work/named.out" "$work/named.err" env G2P_SERVICE=checkout "$work/bin/servetarget-$last_version" -http=false
  named=$target_pid
  e2e_wait_for_line "$work/named.out" "^READY" "$named" 20
  for from in env:G2P_SERVICE comm; do
    start_serve "name-${from%%:*}" -- --service-name-from "$from"
    want=checkout
    [[ $from == comm ]] && want=$(cut -c1-15 <<<"servetarget-$last_version")
    got=""
    for _ in $(seq 1 50); do
      curl -s "http://$addr/targets" >"$work/targets.json"
      got=$(jq -r --arg p "$named" '.[] | select(.labels.pid == $p) | .labels.service_name' "$work/targets.json" 2>/dev/null)
      [[ -n $got ]] && break
      sleep 0.1
    done
    [[ $got == "$want" ]] && pass "--service-name-from $from: service_name $got" ||
      fail "--service-name-from $from: got '$got', want '$want'"
  done

  echo "== security"
  e2e_check_same_process "the target of the security cases" "$tpid" || e2e_finish
  start_serve denied -- --deny-pid "$tpid"
  expect_status "--deny-pid: the process is invisible" 404 "no such process" "http://$addr/debug/pprof/heap?pid=$tpid"
  sleep 1.5
  curl -s "http://$addr/targets" >"$work/targets.json"
  if [[ -s $work/targets.json ]] && jq -e --arg p "$tpid" 'all(.[]; .labels.pid != $p)' "$work/targets.json" >/dev/null; then
    pass "--deny-pid: absent from /targets"
  else
    fail "--deny-pid: listed in /targets"
  fi
  start_serve uidfilter -- --allow-uid 65534
  expect_status "--allow-uid 65534: a root process is invisible" 404 "no such process" "http://$addr/debug/pprof/heap?pid=$tpid"
  start_serve cgfilter -- --allow-cgroup /no/such/cgroup
  expect_status "--allow-cgroup: a process outside the prefix is invisible" 404 "no such process" "http://$addr/debug/pprof/heap?pid=$tpid"
  printf 'secret-token-0123456789\n' >"$work/token"
  start_serve token -- --token-file "$work/token"
  expect_status "token configured, none sent" 401 "unauthorized" "http://$addr/debug/pprof/heap?pid=$tpid"
  expect_status "wrong token" 401 "unauthorized" "http://$addr/debug/pprof/heap?pid=$tpid" -H "Authorization: Bearer secret-token-0123456780"
  expect_status "right token" 200 "" "http://$addr/debug/pprof/heap?pid=$tpid" -H "Authorization: Bearer secret-token-0123456789"
  if "$tool" serve --listen 0.0.0.0:0 >"$work/refused.out" 2>&1; then
    fail "non-loopback --listen without a token was accepted"
  elif [[ $? == 2 ]] && grep -q "not a loopback address" "$work/refused.out"; then
    pass "non-loopback --listen without --token-file is refused at start (exit 2)"
  else
    fail "non-loopback refusal" "$work/refused.out"
  fi
  if command -v setpriv >/dev/null && [[ $(id -u) == 0 ]] && id nobody >/dev/null 2>&1; then
    nobody_dir=$(mktemp -d /tmp/goheap2pprof-serve-nobody.XXXXXX)
    chmod 755 "$nobody_dir"
    cp "$tool" "$nobody_dir/"
    e2e_start "$work/nobody.out" "$work/nobody.log" setpriv --reuid=nobody --regid=nogroup --clear-groups \
      "$nobody_dir/goheap2pprof" serve --listen 127.0.0.1:0
    if e2e_wait_for_line "$work/nobody.log" "listening on" "$target_pid" 10; then
      addr=$(sed -n 's/.*listening on //p' "$work/nobody.log")
      expect_status "as nobody, a root process" 403 "permission denied" "http://$addr/debug/pprof/heap?pid=$tpid"
    else
      fail "serve as nobody did not start" "$work/nobody.log"
    fi
    rm -rf "$nobody_dir"
  else
    skip "403 case: needs root, setpriv and the nobody user"
  fi

  echo "== faults"
  # The target has lived through dozens of servers and workers by now.
  e2e_check_same_process "the target of the fault cases" "$tpid" || e2e_finish
  e2e_start "$work/t2.out" "$work/t2.err" "$work/bin/servetarget-$last_version"
  other=$target_pid
  e2e_wait_for_line "$work/t2.out" "^READY" "$other" 20
  start_serve spin GOHEAP2PPROF_SERVE_SEAM=spin:$tpid -- --capture-timeout 2
  expect_status "a hanging worker" 504 "did not finish" "http://$addr/debug/pprof/heap?pid=$tpid"
  expect_status "after the hang, another target" 200 "" "http://$addr/debug/pprof/heap?pid=$other"
  [[ $(metric 'goheap2pprof_worker_restarts_total{reason="timeout"}') == 1 ]] &&
    pass "/metrics counts the killed worker" || fail "worker_restarts timeout metric"
  start_serve cpu GOHEAP2PPROF_SERVE_SEAM=spin:$tpid -- --capture-timeout 30 --worker-cpu 1
  expect_status "a worker over its CPU limit (RLIMIT_CPU)" 500 "signal" "http://$addr/debug/pprof/heap?pid=$tpid"
  expect_status "after the CPU kill, another target" 200 "" "http://$addr/debug/pprof/heap?pid=$other"
  start_serve hog GOHEAP2PPROF_SERVE_SEAM=hog:$tpid
  expect_status "a worker over its address-space limit (RLIMIT_AS)" 500 "memory limit" "http://$addr/debug/pprof/heap?pid=$tpid"
  expect_status "after the memory limit, another target" 200 "" "http://$addr/debug/pprof/heap?pid=$other"
  start_serve sys GOHEAP2PPROF_SERVE_SEAM=syscall:$tpid
  expect_status "a worker making a system call outside its filter" 500 "seccomp" "http://$addr/debug/pprof/heap?pid=$tpid"
  expect_status "after the seccomp kill, another target" 200 "" "http://$addr/debug/pprof/heap?pid=$other"
  start_serve openw GOHEAP2PPROF_SERVE_SEAM=open-write:$tpid
  rm -f "/tmp/goheap2pprof-serve-seam-$tpid"
  expect_status "a worker opening a file for writing gets EACCES" 500 "O_WRONLY|O_CREAT): Permission denied" \
    "http://$addr/debug/pprof/heap?pid=$tpid"
  [[ ! -e /tmp/goheap2pprof-serve-seam-$tpid ]] && pass "... and no file was created" ||
    fail "the worker created /tmp/goheap2pprof-serve-seam-$tpid"
  rm -f "/tmp/goheap2pprof-serve-seam-$tpid"
  expect_status "read-only opens: captures of another target still work" 200 "" "http://$addr/debug/pprof/heap?pid=$other"
  start_serve crash GOHEAP2PPROF_SERVE_SEAM=crash:$tpid
  expect_status "a crashing worker (abort)" 500 "signal 6" "http://$addr/debug/pprof/heap?pid=$tpid"
  [[ $(metric 'goheap2pprof_captures_total{outcome="worker_crash"}') == 1 ]] &&
    pass "/metrics counts the crash" || fail "worker_crash metric"
  start_serve slow GOHEAP2PPROF_TEST_SEAM=pause-after-walk=3000
  slow_pid=$serve_pid
  status "http://$addr/debug/pprof/heap?pid=$tpid" >"$work/killed.status" &
  c=$!
  e2e_wait_for_line "$work/slow.log" "NEVER" "$slow_pid" 1
  killed=$(pgrep -P "$slow_pid")
  declare -A killed_start=()
  for w in $killed; do
    killed_start[$w]=$(e2e_start_time "$w") && kill -9 "$w"
  done
  wait "$c"
  # Until each killed worker is dead: a zombie the server has not reaped yet,
  # or reaped (its pid free, or another process's: then its start time
  # differs). At most 10 s each.
  for w in $killed; do
    for _ in $(seq 1 200); do
      e2e_same_process "$w" "${killed_start[$w]:-}" &&
        [[ $(awk '{print $3}' "/proc/$w/stat" 2>/dev/null) != Z ]] || break
      sleep 0.05
    done
  done
  if [[ $(cat "$work/killed.status") == 500 ]]; then pass "a worker killed mid-capture: 500"; else fail "killed worker: $(cat "$work/killed.status")"; fi
  e2e_check_same_process "after the killed worker, the same target" "$tpid" &&
    expect_status "after the killed worker, the same target" 200 "" "http://$addr/debug/pprof/heap?pid=$tpid"
  # Concurrent requests for one pid share one capture.
  before=$(metric 'goheap2pprof_captures_total{outcome="ok"}')
  clients=()
  for i in 1 2 3 4 5; do
    curl -s -o /dev/null -w '%{http_code}\n' "http://$addr/debug/pprof/heap?pid=$tpid" >"$work/shared.$i" &
    clients+=($!)
  done
  wait "${clients[@]}"
  after=$(metric 'goheap2pprof_captures_total{outcome="ok"}')
  if [[ $(cat "$work"/shared.* | sort -u) == 200 && $((after - before)) == 1 ]]; then
    pass "5 concurrent requests for one pid share one capture"
  else
    fail "shared capture: statuses $(cat "$work"/shared.* | tr '\n' ' '), captures $((after - before))"
  fi
  start_serve busy GOHEAP2PPROF_TEST_SEAM=pause-after-walk=3000 -- --max-concurrent 1 --timeout 1
  curl -s -o /dev/null "http://$addr/debug/pprof/heap?pid=$tpid" &
  c=$!
  sleep 1.5  # the first capture holds the only worker for 3 s
  expect_status "no free worker within --timeout" 503 "busy" "http://$addr/debug/pprof/heap?pid=$other"
  grep -qi "^Retry-After: 1" "$work/headers" && pass "503 carries Retry-After" || fail "Retry-After" "$work/headers"
  wait "$c"
  start_serve reuse GOHEAP2PPROF_TEST_SEAM=pid-reuse
  expect_status "the pid names another process at the end of the capture (simulated)" 410 "replaced" "http://$addr/debug/pprof/heap?pid=$tpid"
  # A target that exits inside a delta window.
  e2e_start "$work/t3.out" "$work/t3.err" "$work/bin/servetarget-$last_version"
  dying=$target_pid
  e2e_wait_for_line "$work/t3.out" "^READY" "$dying" 20
  status "http://$main_addr/debug/pprof/heap?pid=$dying&seconds=2" >"$work/dying.status" &
  c=$!
  sleep 1
  { kill -9 "$dying" && wait "$dying"; } 2>/dev/null
  wait "$c"
  [[ $(cat "$work/dying.status") == 404 ]] && pass "a target that exits during ?seconds=N: 404" ||
    fail "exit during delta: $(cat "$work/dying.status")"

  echo "== shutdown"
  kill -TERM "$main_pid"
  workers=$(pgrep -P "$main_pid" | tr '\n' ' ')
  declare -A worker_start=()
  for w in $workers; do worker_start[$w]=$(e2e_start_time "$w"); done
  deadline=$((SECONDS + 5))
  while kill -0 "$main_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  wait "$main_pid"
  rc=$?
  left=0
  # A worker's pid may name another process by now: the same start time or none.
  for w in $workers; do e2e_running "$w" "${worker_start[$w]:-}" && left=$((left + 1)); done
  if [[ $rc == 0 && $left == 0 ]] && grep -q "shutting down" "$work/main.log"; then
    pass "SIGTERM: clean exit 0, no worker left"
  else
    fail "SIGTERM: exit $rc, $left workers left" "$work/main.log"
  fi
  if grep -q "\"GET /debug/pprof/heap?pid=$tpid\" 200" "$work/main.log"; then
    pass "-v logs one line per request"
  else
    fail "-v request log" "$work/main.log"
  fi
fi
e2e_finish
