#!/usr/bin/env bash
# End-to-end test of what `goheap2pprof push` does with a hostile worker
# reply (issue 38, finding 8): push runs as root and must not decode what a
# compromised worker sends. The worker of one target answers with a gzip
# bomb (GOHEAP2PPROF_SERVE_SEAM=bomb: 1536 MiB of zeros in 1.5 MB) instead of
# its reply. push refuses it with a clear error, its peak RSS stays far
# below what inflating the bomb takes (under 256 MiB; before the fix it
# inflated up to 1 GiB), nothing of that target is pushed, and the other
# target is pushed as usual. The receiver is tests/pushreceiver, as in
# push_test.sh. The targets run as user 65534 so that the agent
# (--allow-uid 65534) leaves the machine's other Go processes alone; that
# needs root.
#
#   bash tests/e2e/push_hostile_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/push_lib.sh"
e2e_init "$@"
e2e_require_seams
e2e_require_go
e2e_require_command setpriv "needs setpriv (util-linux) to run the targets as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the targets run as user 65534, apart from this machine's other Go processes)"
  exit 77
fi
e2e_make_work push_hostile
chmod 755 "$work"
trap 'e2e_stop_pids -9' EXIT

push_build_programs
push_start_receiver
count() { "$receiver" count -dir "$work/rec" -pid "$1" -backend pyroscope; }

# start_target <name>: as user 65534; sets tpid once it is READY.
start_target() {
  e2e_start "$work/$1.out" "$work/$1.err" setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$work/bin/servetarget" -http=false
  tpid=$target_pid
  if ! e2e_wait_for_line "$work/$1.out" "^READY" "$tpid" 20; then
    fail "$1 did not start" "$work/$1.err"
    e2e_finish
  fi
}
start_target bad
bad=$tpid
start_target good
good=$tpid

GOHEAP2PPROF_SERVE_SEAM=bomb:$bad e2e_start "$work/agent.out" "$work/agent.log" "$tool" push \
  --pyroscope "http://$raddr" --parca "http://$raddr" --interval 1s --discover-interval 1 \
  --allow-uid 65534 -v
agent=$target_pid

deadline=$((SECONDS + 30))
until (($(count "$good") >= 1)) && grep -q "pid $bad .*push reply from a worker" "$work/agent.log"; do
  if ((SECONDS >= deadline)); then
    fail "the good target was not pushed, or the bomb not refused" "$work/agent.log"
    e2e_finish
  fi
  sleep 0.2
done
# Two more rounds with the bomb.
kill -USR1 "$good"
sleep 2.5
if (($(count "$good") >= 2)); then
  pass "the other target is pushed as usual ($(count "$good") pushes)"
else
  fail "the other target was pushed only $(count "$good") times" "$work/agent.log"
fi
if (($(count "$bad") == 0)); then
  pass "nothing of the target whose worker sent a bomb is pushed"
else
  fail "the bomb's target was pushed $(count "$bad") times" "$work/agent.log"
fi
line=$(grep -m1 "pid $bad .*push reply from a worker" "$work/agent.log")
pass "the refusal is logged: ${line#*push: }"
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$agent/status")
if ((hwm < 256 * 1024)); then
  pass "push's peak RSS stays at $((hwm / 1024)) MiB (the bomb inflates to 1536 MiB)"
else
  fail "push's peak RSS reached $((hwm / 1024)) MiB: it inflated the bomb" "$work/agent.log"
fi
kill "$agent"
e2e_stop_pids -9
e2e_finish
