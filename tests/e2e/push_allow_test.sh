#!/usr/bin/env bash
# End-to-end test of `goheap2pprof push`'s allow-list on the process it
# captured (issue 22, defect 9): push captures what its last discovery scan
# found, which can be a while ago (--discover-interval 60 here). A target
# admitted by --allow-uid 65534 that then changes its effective uid to 0
# (testdata/servetarget -euid-on-usr2: same pid, start time and address
# space) must not be pushed any more, though its profile changes; a control
# target that keeps its uid is pushed again for the same change. The
# receiver is tests/pushreceiver, as in push_test.sh. Needs root (targets
# run with effective uid 65534 and real uid 0).
#
#   bash tests/e2e/push_allow_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/push_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command setpriv "needs setpriv (util-linux) to run the targets as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the targets run with effective uid 65534 and may become root)"
  exit 77
fi
e2e_make_work push_allow
chmod 755 "$work"
trap 'e2e_stop_pids -9' EXIT
nobody=65534

push_build_programs
push_start_receiver
count() { "$receiver" count -dir "$work/rec" -pid "$1" -backend pyroscope; }

push_start_euid_target changer
changer=$tpid
push_start_euid_target control
control=$tpid

# One scan, at the start: the agent captures what it found for a minute.
e2e_start "$work/agent.out" "$work/agent.log" "$tool" push --pyroscope "http://$raddr" \
  --interval 1s --discover-interval 60 --allow-uid $nobody -v
agent=$target_pid

# wait_pushed <pid> <at-least> <seconds>
wait_pushed() {
  local deadline=$((SECONDS + $3))
  until (($(count "$1") >= $2)); do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
if wait_pushed "$changer" 1 20 && wait_pushed "$control" 1 20; then
  pass "both targets are pushed while their uid is allowed"
else
  fail "the targets were not pushed" "$work/agent.log"
  e2e_finish
fi

kill -USR2 "$changer"
e2e_wait_for_line "$work/changer.out" "^EUID" "$changer" 5 || fail "the target did not change its uid"
before_changer=$(count "$changer") before_control=$(count "$control")
# A new profile cycle in both: pushed for a process the filter admits.
kill -USR1 "$changer" "$control"
e2e_wait_for_line "$work/changer.out" "^PHASE2" "$changer" 10 || fail "no phase 2 in the changer"
e2e_wait_for_line "$work/control.out" "^PHASE2" "$control" 10 || fail "no phase 2 in the control"
if wait_pushed "$control" $((before_control + 1)) 15; then
  pass "control: its new profile cycle is pushed ($(count "$control") pushes)"
else
  fail "control: its new profile cycle was not pushed" "$work/agent.log"
fi
sleep 2  # two more rounds
after=$(count "$changer")
if ((after == before_changer)); then
  pass "a target that became root (refused by --allow-uid $nobody) is no longer pushed ($after pushes)"
else
  fail "a target that became root was pushed again: $before_changer -> $after pushes" "$work/agent.log"
fi
if grep -q "capture of pid $changer .*no such process: $changer" "$work/agent.log"; then
  pass "the agent logs the refused capture"
else
  fail "the agent did not log the refused capture" "$work/agent.log"
fi
kill "$agent"
e2e_stop_pids -9
e2e_finish
