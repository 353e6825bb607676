#!/usr/bin/env bash
# End-to-end test of `goheap2pprof serve`'s allow-list against a pid that
# changes hands between the request and the capture (issue 22, defect 9).
# The server judges a request on the process the pid names when it comes
# in; the capture runs when a worker is free. Here the only worker
# (--max-concurrent 1) is held by a paused capture of another process
# (GOHEAP2PPROF_SERVE_SEAM=pause-before-walk), the request for the victim
# waits for it, and meanwhile the victim is killed and another process is
# started under its pid (ns_last_pid, as in serve_replace_test.sh):
#   - a process of the same (allowed) uid: 410, never its profile;
#   - with --allow-uid 0, a process of uid 65534: 410 (or 404/403), never
#     200 with a profile of a process the allow-list refuses;
# and the same process changes its effective uid to one the allow-list
# refuses (testdata/servetarget -euid-on-usr2): 404, as for any process the
# filter refuses; against a control where nothing happens (200).
#
# Needs root (a pid namespace of our own, where nothing else forks, and a
# process started as another uid); otherwise the cases are skipped.
#
#   bash tests/e2e/serve_allow_test.sh <goheap2pprof> <profdiff>
set -u
if [[ -z ${G2P_ALLOW_PIDNS:-} ]]; then
  if [[ $(id -u) == 0 ]] && unshare --pid --fork --mount-proc true 2>/dev/null; then
    # --kill-child: if CTest kills us on a timeout, the namespace goes too.
    exec unshare --pid --fork --kill-child --mount-proc env G2P_ALLOW_PIDNS=1 bash "$0" "$@"
  fi
  export G2P_ALLOW_PIDNS=0
fi
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
e2e_init "$@"
if [[ $G2P_ALLOW_PIDNS != 1 ]]; then
  skip "a pid reused between the request and the capture: needs root and unshare --pid (a pid namespace of our own)"
  e2e_finish
fi
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command setpriv "needs setpriv (util-linux) to start a process as another uid"
e2e_make_work serve_allow
trap 'e2e_stop_pids -9; rm -rf "${exe_dir:-}"' EXIT

echo "== building the target"
# Readable by uid 65534 too: $work may be below a directory it cannot enter.
exe_dir=$(mktemp -d /tmp/goheap2pprof-allow.XXXXXX)
chmod 755 "$exe_dir"
if ! (cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$exe_dir/servetarget" .) \
  >"$work/build.log" 2>&1; then
  fail "build servetarget" "$work/build.log"
  e2e_finish
fi
target=$exe_dir/servetarget
nobody=65534

# start_target <name> [command prefix...]: a small idle servetarget; sets
# tpid once it is READY.
start_target() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.err" "$@" "$target" -http=false
  tpid=$target_pid
  e2e_wait_for_line "$work/$name.out" "^READY" "$tpid" 20 || {
    fail "$name did not start" "$work/$name.err"
    e2e_finish
  }
}

# reuse_pid <pid> <name> [command prefix...]: starts a servetarget under
# exactly that (free) pid: ns_last_pid is the last pid handed out in this
# namespace, and only this script forks here. Sets tpid; returns 1 if the
# pid could not be had.
reuse_pid() {
  local want=$1 name=$2 attempt
  shift 2
  for attempt in 1 2 3; do
    echo $((want - 1)) >/proc/sys/kernel/ns_last_pid
    e2e_start "$work/$name.out" "$work/$name.err" "$@" "$target" -http=false -retain 2
    tpid=$target_pid
    if [[ $tpid == "$want" ]]; then
      e2e_wait_for_line "$work/$name.out" "^READY" "$tpid" 20 && return 0
      return 1
    fi
    kill -9 "$tpid"
    wait "$tpid" 2>/dev/null
  done
  return 1
}

# queued_request <name> <victim> [serve options...]: starts a server with
# one worker, holds that worker with a paused capture of a blocker process
# (4 s; started with the command prefix in blocker_as, which the filter must
# admit), then sends the request for the victim, which waits for the worker
# (status in $work/victim.status, body in $work/victim.body).
blocker_as=()
queued_request() {
  local name=$1 victim=$2
  shift 2
  start_target "$name-blocker" "${blocker_as[@]}"
  local blocker=$tpid
  start_serve "$name" "GOHEAP2PPROF_SERVE_SEAM=pause-before-walk=4000:$blocker" -- \
    --max-concurrent 1 --timeout 30 --capture-timeout 30 "$@"
  curl -s -o /dev/null "http://$addr/debug/pprof/heap?pid=$blocker" &
  blocker_client=$!
  if ! e2e_wait_for_line "$work/$name.log" "pausing 4000 ms before the walk" "$serve_pid" 15; then
    fail "$name: the worker did not announce the pause" "$work/$name.log"
  fi
  curl -s -o "$work/victim.body" -w '%{http_code}' "http://$addr/debug/pprof/heap?pid=$victim" \
    >"$work/victim.status" &
  victim_client=$!
  # The server judges the victim (discovery) at once, then waits for the
  # worker, which is paused for seconds still.
  sleep 0.5
}

# expect_answer <what> <allowed statuses> <body-substring>: the victim's
# request's answer; a 200 must be a gzipped profile.
expect_answer() {
  local what=$1 want=$2 text=$3 got gzipped=no
  wait "$victim_client"
  wait "$blocker_client"
  got=$(cat "$work/victim.status")
  [[ $(head -c 2 "$work/victim.body" | od -An -tx1 | tr -d ' \n') == 1f8b ]] && gzipped=yes
  if [[ " $want " == *" $got "* ]] && { [[ $got == 200 && $gzipped == yes ]] ||
    { [[ $got != 200 && $gzipped == no ]] && grep -qF -- "$text" "$work/victim.body"; }; }; then
    if [[ $gzipped == yes ]]; then
      pass "$what: $got with a profile of $(wc -c <"$work/victim.body") bytes"
    else
      pass "$what: $got ($(head -c 200 "$work/victim.body" | tr '\n' ' '))"
    fi
  else
    echo "    got $got: $(head -c 100 "$work/victim.body" | tr -c '[:print:]' '.')"
    fail "$what: want one of $want with \"$text\""
  fi
}

kill_target() {
  kill -9 "$1"
  wait "$1" 2>/dev/null
}

echo "== control: the victim stays"
start_target control
victim=$tpid
queued_request control "$victim" --allow-uid 0
expect_answer "control: a queued request for an allowed process" 200 ""
e2e_stop_pids -9

echo "== the pid is reused by a process of the same uid while the request waits"
start_target same-uid
victim=$tpid
queued_request same-uid "$victim"
kill_target "$victim"
if reuse_pid "$victim" same-uid-reused; then
  expect_answer "a pid reused by another process of the same uid before the capture" 410 "replaced"
else
  wait "$victim_client" "$blocker_client"
  fail "could not start a process under pid $victim again"
fi
e2e_stop_pids -9

echo "== the pid of an allowed uid is reused by a process of a uid the allow-list refuses"
start_target allowed
victim=$tpid
queued_request other-uid "$victim" --allow-uid 0
kill_target "$victim"
if reuse_pid "$victim" other-uid-reused setpriv --reuid=$nobody --regid=$nobody --clear-groups; then
  if [[ $(stat -c %u "/proc/$victim") != "$nobody" ]]; then
    fail "the replacement does not run as uid $nobody"
  fi
  expect_answer "an allowed uid's pid reused by uid $nobody (refused by --allow-uid 0) before the capture" \
    "410 404 403" "pid $victim"
else
  wait "$victim_client" "$blocker_client"
  fail "could not start a process of uid $nobody under pid $victim"
fi
e2e_stop_pids -9

echo "== the same process changes its uid to one the allow-list refuses while the request waits"
# Effective uid 65534 (allowed), real uid 0, so that it may become root.
e2e_start "$work/euid.out" "$work/euid.err" setpriv --euid=$nobody "$target" -http=false -euid-on-usr2 0
victim=$target_pid
if e2e_wait_for_line "$work/euid.out" "^READY" "$victim" 20 &&
  [[ $(stat -c %u "/proc/$victim") == "$nobody" ]]; then
  blocker_as=(setpriv --euid=$nobody)
  queued_request euid "$victim" --allow-uid $nobody
  kill -USR2 "$victim"
  if e2e_wait_for_line "$work/euid.out" "^EUID" "$victim" 5; then
    expect_answer "an allowed process that became root (refused by --allow-uid $nobody) before the capture" \
      404 "no such process: $victim"
  else
    wait "$victim_client" "$blocker_client"
    fail "the target did not change its uid" "$work/euid.err"
  fi
else
  fail "the target did not start with effective uid $nobody" "$work/euid.err"
fi
e2e_stop_pids -9

e2e_finish
