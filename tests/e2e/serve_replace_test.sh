#!/usr/bin/env bash
# End-to-end test of `goheap2pprof serve` against targets that end or are
# replaced while a request for them runs (issue 12): the answer is 404 when
# the process exited, 410 when its pid now names another process, and never
# a profile of the other process. A worker test seam
# (GOHEAP2PPROF_SERVE_SEAM=pause-before-walk=MS:<pid> or pause-after-walk,
# agent/worker/worker.cc) holds the capture at a chosen point and announces it in
# the server's log; the test then
#   - kills the target (404);
#   - makes it exec another executable in place: same pid, same start time
#     (testdata/servetarget -exec-on-usr2), 410;
#   - makes it exec its own executable again: same pid, start time and
#     executable, only the address space differs, 410;
#   - kills it and starts another process under the same pid (pid reuse), 410;
# and checks the same for ?seconds=N deltas whose window sees the
# replacement, against controls where nothing happens (200).
#
# Pid reuse needs a pid namespace of our own, where nothing else forks: run
# as root, the script re-executes itself under `unshare --pid --fork
# --mount-proc` and reuses pids with /proc/sys/kernel/ns_last_pid. Without
# that, the pid-reuse cases are skipped with the reason.
#
#   bash tests/e2e/serve_replace_test.sh <goheap2pprof> <profdiff>
set -u
if [[ -z ${G2P_REPLACE_PIDNS:-} ]]; then
  if [[ $(id -u) == 0 ]] && unshare --pid --fork --mount-proc true 2>/dev/null; then
    # --kill-child: if CTest kills us on a timeout, the namespace goes too.
    exec unshare --pid --fork --kill-child --mount-proc env G2P_REPLACE_PIDNS=1 bash "$0" "$@"
  fi
  export G2P_REPLACE_PIDNS=0
fi
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
e2e_init "$@"
e2e_require_seams
e2e_require_go
e2e_require_command curl "needs curl"
e2e_make_work serve_replace
trap 'e2e_stop_pids -9' EXIT

echo "== building the targets"
mkdir -p "$work/bin"
if ! (cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/bin/servetarget" .) \
  >"$work/build.log" 2>&1; then
  fail "build servetarget" "$work/build.log"
  e2e_finish
fi
# Another executable (another inode) with the same contents.
cp "$work/bin/servetarget" "$work/bin/othertarget"
target_a=$work/bin/servetarget target_b=$work/bin/othertarget

# start_target <name> [args...]: a servetarget without its own HTTP server;
# sets tpid once it is READY.
start_target() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.err" "$target_a" -http=false "$@"
  tpid=$target_pid
  e2e_wait_for_line "$work/$name.out" "^READY" "$tpid" 20 || {
    fail "$name did not start" "$work/$name.err"
    e2e_finish
  }
}

# wait_ready_count <file> <n>: until the file has n READY lines (an exec'd
# image prints its own), at most 20 s.
wait_ready_count() {
  local deadline=$((SECONDS + 20))
  until [[ $(grep -c "^READY" "$1") -ge $2 ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# reuse_pid <pid> <name> <executable> [args...]: starts the program under
# exactly that (free) pid: ns_last_pid is the last pid handed out in this
# namespace, and only this script forks here. Sets tpid.
reuse_pid() {
  local want=$1 name=$2 attempt
  shift 2
  for attempt in 1 2 3; do
    echo $((want - 1)) >/proc/sys/kernel/ns_last_pid
    e2e_start "$work/$name.out" "$work/$name.err" "$@"
    tpid=$target_pid
    [[ $tpid == "$want" ]] && return 0
    kill -9 "$tpid"
    wait "$tpid" 2>/dev/null
  done
  return 1
}

# paused_request <seam> <pid> <url-suffix>: starts a server whose worker
# pauses captures of pid at the seam (3 s), sends the request in the
# background (status in $work/paused.status, body in $work/paused.body) and
# returns once the worker announced the pause.
paused_request() {
  local seam=$1 pid=$2 query=$3 where=${1%%-walk}
  start_serve "paused-$seam-$pid" "GOHEAP2PPROF_SERVE_SEAM=$seam-walk=3000:$pid"
  curl -s -o "$work/paused.body" -w '%{http_code}' "http://$addr/debug/pprof/heap?pid=$pid$query" \
    >"$work/paused.status" &
  client=$!
  if ! e2e_wait_for_line "$work/paused-$seam-$pid.log" "pausing 3000 ms ${where#pause-} the walk" \
    "$serve_pid" 15; then
    fail "the worker did not announce the $seam pause" "$work/paused-$seam-$pid.log"
  fi
}

# expect_answer <what> <want-status> <body-substring>: the paused request's
# answer. A 200 is a gzipped profile; a 410 or 404 carries none: its body is
# the reason as text.
expect_answer() {
  local what=$1 want=$2 text=$3 got gzipped=no
  wait "$client"
  got=$(cat "$work/paused.status")
  [[ $(head -c 2 "$work/paused.body" | od -An -tx1 | tr -d ' \n') == 1f8b ]] && gzipped=yes
  if [[ $got == 200 && $want == 200 && $gzipped == yes ]]; then
    pass "$what: 200 with a profile of $(wc -c <"$work/paused.body") bytes"
  elif [[ $got == "$want" && $want != 200 && $gzipped == no ]] && grep -qF -- "$text" "$work/paused.body"; then
    pass "$what: $got ($(head -c 200 "$work/paused.body" | tr '\n' ' '))"
  else
    echo "    got $got: $(head -c 300 "$work/paused.body")"
    fail "$what: want $want with \"$text\""
  fi
}

# kill_target <pid>: SIGKILL and reap, so that the pid is free.
kill_target() {
  kill -9 "$1"
  wait "$1" 2>/dev/null
}

for seam in pause-before pause-after; do
  echo "== $seam-walk"
  start_target "control-$seam"
  paused_request "$seam" "$tpid" ""
  expect_answer "control: nothing happens during the $seam-walk pause" 200 ""
  kill_target "$tpid"

  start_target "exit-$seam"
  paused_request "$seam" "$tpid" ""
  kill_target "$tpid"
  expect_answer "the target exits during the $seam-walk pause" 404 "exited"

  start_target "exec-other-$seam" -exec-on-usr2 "$target_b"
  paused_request "$seam" "$tpid" ""
  kill -USR2 "$tpid"
  wait_ready_count "$work/exec-other-$seam.out" 2 || fail "exec of $target_b did not happen"
  expect_answer "the target execs another executable during the $seam-walk pause (same pid and start time)" \
    410 "replaced"
  kill_target "$tpid"

  start_target "exec-self-$seam" -exec-on-usr2 "$target_a"
  paused_request "$seam" "$tpid" ""
  kill -USR2 "$tpid"
  wait_ready_count "$work/exec-self-$seam.out" 2 || fail "exec of $target_a did not happen"
  expect_answer "the target execs its own executable during the $seam-walk pause (only the address space differs)" \
    410 "executed another program"
  kill_target "$tpid"

  if [[ $G2P_REPLACE_PIDNS == 1 ]]; then
    start_target "reuse-$seam"
    victim=$tpid
    paused_request "$seam" "$victim" ""
    kill_target "$victim"
    if reuse_pid "$victim" "reused-$seam" "$target_a" -http=false -retain 2; then
      e2e_wait_for_line "$work/reused-$seam.out" "^READY" "$tpid" 20
      expect_answer "the pid is reused by another process (same executable) during the $seam-walk pause" \
        410 "replaced"
      kill_target "$tpid"
    else
      wait "$client"
      fail "could not start a process under pid $victim again"
    fi
  else
    skip "pid reuse during the $seam-walk pause: needs root and unshare --pid (a pid namespace of our own)"
  fi
  e2e_stop_pids -9
done

echo "== ?seconds=N deltas"
start_serve delta
# ok_captures: serve's count of captures that succeeded (a delta's first capture counts
# when it ends).
ok_captures() {
  curl -s "http://$addr/metrics" | awk '/^goheap2pprof_captures_total\{outcome="ok"\}/ {print $2}'
}
# first_capture_done: true once the count has passed delta_request's $before.
first_capture_done() { (($(ok_captures) > before)); }
# delta_request <what> <pid> <want> <text> <action...>: a 3 s delta; the
# action runs once the window's first capture is done (serve's metrics say so),
# not after a fixed sleep: on a loaded machine (ctest -j) the first capture can
# take longer than a second, and an action before it is not in the window.
delta_request() {
  local what=$1 pid=$2 want=$3 text=$4 got before
  shift 4
  before=$(ok_captures)
  curl -s -o "$work/delta.body" -w '%{http_code}' "http://$addr/debug/pprof/heap?pid=$pid&seconds=3" \
    >"$work/delta.status" &
  local c=$!
  if ! e2e_wait_until 30 first_capture_done; then
    fail "$what: the window's first capture did not end within 30 s"
  fi
  "$@"
  wait "$c"
  got=$(cat "$work/delta.status")
  if [[ $got == "$want" ]] && grep -qF -- "$text" "$work/delta.body"; then
    pass "$what: $got"
  else
    echo "    got $got: $(head -c 300 "$work/delta.body")"
    fail "$what: want $want with \"$text\""
  fi
}
start_target delta-control
delta_request "control: a delta window where nothing happens" "$tpid" 200 "" true
kill_target "$tpid"
start_target delta-exec-other -exec-on-usr2 "$target_b"
delta_request "a delta window in which the target execs another executable" "$tpid" 410 "replaced" \
  kill -USR2 "$tpid"
kill_target "$tpid"
start_target delta-exec-self -exec-on-usr2 "$target_a"
delta_request "a delta window in which the target execs its own executable" "$tpid" 410 "replaced" \
  kill -USR2 "$tpid"
kill_target "$tpid"
if [[ $G2P_REPLACE_PIDNS == 1 ]]; then
  start_target delta-reuse
  victim=$tpid
  replace_victim() {
    kill_target "$victim"
    reuse_pid "$victim" delta-reused "$target_a" -http=false || fail "could not reuse pid $victim"
    e2e_wait_for_line "$work/delta-reused.out" "^READY" "$tpid" 20
  }
  delta_request "a delta window in which the pid is reused by another process" "$victim" 410 "replaced" \
    replace_victim
else
  skip "pid reuse in a delta window: needs root and unshare --pid (a pid namespace of our own)"
fi

e2e_stop_pids -9
e2e_finish
