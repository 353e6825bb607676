#!/usr/bin/env bash
# End-to-end test of what confines serve's capture workers, seen from
# outside (the seccomp filter itself: tests/unit/serve_sandbox_test.cc):
#  - a worker holds no descriptor of the server's but its own: the server
#    runs with more than 1,024 descriptors open and not close-on-exec (as
#    accepted client sockets were), and neither the first workers nor one
#    respawned after a kill hold any of them (/proc/<worker>/fd against
#    /proc/<server>/fd);
#  - each worker's oom_score_adj is 1000, the server's is left as it was;
#  - what a worker writes to stderr reaches the server's log attributed: the
#    worker's pid and the request it was serving (op and target pid).
#
#   bash tests/e2e/serve_sandbox_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
e2e_init "$@"
e2e_require_seams
e2e_require_go
e2e_require_command curl "needs curl"
e2e_make_work serve_sandbox
trap 'e2e_stop_pids -9' EXIT

e2e_build_oracle
e2e_start "$work/target.out" "$work/target.err" "$binary" -rate 1 -out "$work/oracle.pb.gz"
tpid=$target_pid
if ! e2e_wait_for_line "$work/target.out" '^READY ' "$tpid" 60; then
  fail "the target did not start" "$work/target.err"
  e2e_finish
fi

# workers_of <pid>: the live capture workers of a server (its children).
workers_of() {
  pgrep -P "$1" | while read -r w; do
    [[ $(tr '\0' ' ' <"/proc/$w/cmdline" 2>/dev/null) == *__capture-worker* ]] && echo "$w"
  done
}

# wait_workers <server> <n>: until it has n workers, at most 10 s.
wait_workers() {
  local deadline=$((SECONDS + 10))
  until (($(workers_of "$1" | wc -l) >= $2)); do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# confined <worker>: waits (at most 10 s) until the worker has loaded its
# seccomp filter, its last step before it serves: its descriptors are
# closed then.
confined() {
  local deadline=$((SECONDS + 10))
  until grep -q '^Seccomp:[[:space:]]*2' "/proc/$1/status" 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

# fd_targets <pid> [skip...]: what each descriptor of the process refers to
# ("socket:[N]", "pipe:[N]", a path), one per line, but the descriptors
# named in skip.
fd_targets() {
  local pid=$1 fd
  shift
  for fd in /proc/"$pid"/fd/*; do
    [[ " $* " == *" ${fd##*/} "* ]] || readlink "$fd"
  done 2>/dev/null | sort -u
}

# own_fds_only <label> <worker>: passes when the worker, once confined,
# holds nothing of the server's: besides its stderr pipe (2) and request
# socket (3), no descriptor refers to what one of the server's refers to.
# (It may hold files of its own: the executables a probe reads.)
own_fds_only() {
  local shared
  confined "$2" || fail "$1: worker $2 did not load its filter within 10 s"
  shared=$(comm -12 <(fd_targets "$2" 2 3) <(fd_targets "$serve_pid"))
  if [[ -z $shared ]]; then
    pass "$1: worker $2 holds none of the server's descriptors ($(ls "/proc/$2/fd" | wc -l) open)"
  else
    fail "$1: worker $2 holds $(ls "/proc/$2/fd" | wc -l) descriptors, the server's $(head -c 200 <<<"$shared" | tr '\n' ' ')"
  fi
}

echo "== descriptors"
# 1,100 descriptors above 1,023, not close-on-exec, inherited by the server
# from this shell: what accepted client sockets were. The server's limit is
# raised to hold them.
ulimit -n 4096
held=()
for ((i = 0; i < 1100; i++)); do
  exec {fd}</dev/null
  held+=("$fd")
done
while ((held[-1] < 1100)); do
  exec {fd}</dev/null
  held+=("$fd")
done
start_serve fds -- --max-concurrent 2
for fd in "${held[@]}"; do exec {fd}<&-; done
server_fds=$(ls "/proc/$serve_pid/fd" | wc -l)
((server_fds > 1024)) && pass "the server holds $server_fds descriptors" ||
  fail "the server holds only $server_fds descriptors: the test proves nothing"
if wait_workers "$serve_pid" 2; then
  for w in $(workers_of "$serve_pid"); do own_fds_only "first worker" "$w"; done
else
  fail "serve started no 2 workers"
fi
# A respawned worker: kill them all, then a capture starts a new one.
for w in $(workers_of "$serve_pid"); do kill -9 "$w"; done
expect_status "a capture after the workers were killed" 200 "" "http://$addr/debug/pprof/heap?pid=$tpid"
if wait_workers "$serve_pid" 1; then
  for w in $(workers_of "$serve_pid"); do own_fds_only "respawned worker" "$w"; done
else
  fail "no worker after the respawn"
fi

echo "== oom_score_adj"
server_adj=$(cat "/proc/$serve_pid/oom_score_adj")
shell_adj=$(cat /proc/self/oom_score_adj)
[[ $server_adj == "$shell_adj" ]] && pass "the server's oom_score_adj is left as it was ($server_adj)" ||
  fail "the server's oom_score_adj is $server_adj, its parent's $shell_adj"
for w in $(workers_of "$serve_pid"); do
  adj=$(cat "/proc/$w/oom_score_adj")
  [[ $adj == 1000 ]] && pass "worker $w: oom_score_adj 1000" || fail "worker $w: oom_score_adj $adj"
done

echo "== worker stderr"
# The seam makes the worker announce a pause on its stderr, inside the
# capture of tpid: the server prints it with the worker's pid and request.
start_serve stderr "GOHEAP2PPROF_SERVE_SEAM=pause-before-walk=10:$tpid" -- --max-concurrent 1
wait_workers "$serve_pid" 1
worker=$(workers_of "$serve_pid")
expect_status "a capture whose worker writes to stderr" 200 "" "http://$addr/debug/pprof/heap?pid=$tpid"
line="goheap2pprof worker $worker (heap of pid $tpid): goheap2pprof worker: test seam: pausing 10 ms before the walk of pid $tpid"
if e2e_wait_for_line "$work/stderr.log" "^$line\$" "$serve_pid" 5; then
  pass "the server's log names the worker and its request: \"${line:0:60}...\""
else
  fail "no attributed line \"$line\" in the server's log" "$work/stderr.log"
fi
# Every line from a worker is attributed.
stray=$(grep 'test seam' "$work/stderr.log" | grep -cvE '^goheap2pprof worker [0-9]+ \(heap of pid [0-9]+\): ')
[[ $stray == 0 ]] && pass "every worker line in the log is attributed" ||
  fail "$stray worker lines without the worker's pid and request" "$work/stderr.log"

e2e_finish
