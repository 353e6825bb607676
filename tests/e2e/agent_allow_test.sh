#!/usr/bin/env bash
# End-to-end test of the allow-list in `goheap2pprof agent`'s watch role and
# its triggered pushes (issue 38, finding 12): watch captures the processes
# the agent's discovery admitted, possibly long ago (--discover-interval 60
# here). A target admitted by --allow-uid 65534 that then changes its
# effective uid to 0 (testdata/servetarget -euid-on-usr2: same pid, start
# time and address space, as after an exec of a set-uid program in place)
# must be neither captured to -o DIR nor pushed by a trigger any more; the
# log and watch.jsonl say why. A control target that keeps its uid goes on
# being captured and pushed. The trigger is --every 1s; push's own rounds
# are an hour apart, so every push seen here is a triggered one. The
# receiver is tests/pushreceiver, as in push_test.sh. Needs root (targets
# run with effective uid 65534 and real uid 0).
#
#   bash tests/e2e/agent_allow_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/push_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command jq "jq is not installed (scripts/install-deps.sh installs it)"
e2e_require_command setpriv "needs setpriv (util-linux) to run the targets as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the targets run with effective uid 65534 and may become root)"
  exit 77
fi
e2e_make_work agent_allow
chmod 755 "$work"
trap 'e2e_stop_pids -9' EXIT
nobody=65534

push_build_programs
push_start_receiver
# triggered <pid>: pushes of the process with a trigger= label.
triggered() {
  jq -r --arg p "$1" 'select(.labels.pid == $p and .labels.trigger != null) | .file' \
    "$work/rec/pyroscope.jsonl" 2>/dev/null | wc -l
}
# captured <pid>: profiles watch wrote of the process.
captured() {
  jq -r --argjson p "$1" 'select(.pid == $p and .event == "trigger" and .file != null) | .file' \
    "$dir/watch.jsonl" 2>/dev/null | wc -l
}

push_start_euid_target changer
changer=$tpid
push_start_euid_target control
control=$tpid

dir=$work/out
mkdir "$dir"
# One scan, at the start: watch keeps what it found for a minute.
e2e_start "$work/agent.out" "$work/agent.log" "$tool" agent --pyroscope "http://$raddr" \
  --interval 1h --discover-interval 60 --allow-uid $nobody -o "$dir" --every 1s \
  --poll 100ms -v
agent=$target_pid

# wait_for <count-function> <pid> <at-least> <seconds>
wait_for() {
  local deadline=$((SECONDS + $4))
  until (($($1 "$2") >= $3)); do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
if wait_for triggered "$changer" 1 30 && wait_for triggered "$control" 1 30; then
  pass "both targets are captured and pushed by the trigger while their uid is allowed"
else
  fail "the targets were not pushed by the trigger" "$work/agent.log"
  e2e_finish
fi

kill -USR2 "$changer"
e2e_wait_for_line "$work/changer.out" "^EUID" "$changer" 5 || fail "the target did not change its uid"
sleep 1.5 # a capture under way when the uid changed may still finish
before_pushed=$(triggered "$changer") before_captured=$(captured "$changer")
before_control=$(triggered "$control")
sleep 4 # four more triggers
after_pushed=$(triggered "$changer") after_captured=$(captured "$changer")
if wait_for triggered "$control" $((before_control + 2)) 10; then
  pass "control: still captured and pushed ($(triggered "$control") pushes)"
else
  fail "control: no longer pushed" "$work/agent.log"
fi
if ((after_pushed == before_pushed && after_captured == before_captured)); then
  pass "a target that became root (refused by --allow-uid $nobody) is neither captured nor pushed" \
    "($after_captured files, $after_pushed pushes)"
else
  fail "a target that became root was captured or pushed again: files $before_captured ->" \
    "$after_captured, pushes $before_pushed -> $after_pushed" "$work/agent.log"
fi
if grep -q "pid $changer every.*capture failed: .*no longer admitted by the allow-list.*effective uid is 0" \
  "$work/agent.log"; then
  pass "the log says why: $(grep -m1 -o "pid $changer every.*capture failed.*" "$work/agent.log")"
else
  fail "the log does not say why the capture was refused" "$work/agent.log"
fi
if jq -r --argjson p "$changer" 'select(.pid == $p) | .error // empty | strings' "$dir/watch.jsonl" |
  grep -q "no longer admitted by the allow-list"; then
  pass "watch.jsonl records the refusal"
else
  fail "watch.jsonl does not record the refusal" "$dir/watch.jsonl"
fi
kill "$agent"
e2e_stop_pids -9
e2e_finish
