#!/usr/bin/env bash
# serve's clients cannot starve the agent's own captures (issue 38, finding
# 11). One agent with serve and watch shares a pool of 2 workers; the test
# seam GOHEAP2PPROF_SERVE_SEAM makes every capture of target A pause 8 s, so
# that clients of A hold workers at will.
#   1. two clients asking for the same flame graph of A share one capture;
#   2. while clients of A hold every worker serve may use, a new process B
#      (testdata/oomgrower) that crosses --rss-above is found, probed and
#      captured by watch within 4 s: push, watch and discovery go first in the
#      pool's queue, and one worker is kept for them;
#   3. a capture whose client disconnected while it waited for a worker is
#      dropped from the queue (goheap2pprof_captures_total{outcome="cancelled"}).
# The targets run as user 65532 and the agent admits only that user; needs root.
#
#   bash tests/e2e/agent_priority_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_seams
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command jq "jq is not installed (scripts/install-deps.sh installs it)"
e2e_require_command setpriv "needs setpriv (util-linux) to run the targets as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the targets run as user 65532, apart from this machine's other Go processes)"
  exit 77
fi
# A user of its own: other suites' targets (user 65534) stay out of its agent.
e2e_nobody_uid=65532
e2e_make_work agent_priority
chmod 755 "$work"
clients=()
trap 'kill "${clients[@]}" 2>/dev/null; e2e_stop_pids -9' EXIT

e2e_go_build servetarget "$work/bin/servetarget"
e2e_go_build oomgrower "$work/bin/oomgrower"

e2e_start_as_nobody slow "$work/bin/servetarget" -http=false

dir=$work/out
mkdir "$dir"
e2e_start "$work/agent.out" "$work/agent.log" env \
  "GOHEAP2PPROF_SERVE_SEAM=pause-before-walk=8000:$slow_pid" "$tool" agent \
  --listen 127.0.0.1:0 --allow-uid "$e2e_nobody_uid" --discover-interval 1 --max-concurrent 2 \
  --capture-timeout 30s --timeout 30 -o "$dir" --rss-above 40M --poll 100ms --no-baseline -v
agent_pid=$target_pid
if ! e2e_wait_for_line "$work/agent.log" "roles: serve on" "$agent_pid" 10; then
  fail "the agent did not start" "$work/agent.log"
  e2e_finish
fi
addr=$(sed -n 's/.*roles: serve on \([^ ;]*\).*/\1/p' "$work/agent.log" | head -n 1)
listed() { curl -s -m 5 "http://$addr/targets" | grep -q "\"pid\":\"$1\""; }
if ! e2e_wait_until 20 listed "$slow_pid"; then
  fail "discovery did not list the slow target" "$work/agent.log"
  e2e_finish
fi
# captures <outcome>: goheap2pprof_captures_total of that outcome (0 if absent).
captures() {
  curl -s -m 2 "http://$addr/metrics" |
    awk -v o="goheap2pprof_captures_total{outcome=\"$1\"}" '$1 == o {n = $2} END {print n + 0}'
}
pauses() { grep -c "test seam: pausing" "$work/agent.log"; }

# --- 1. one flame graph capture for two clients ---------------------------------
# Counted by serve's own log line per capture it ran (-v): the metric counts
# watch's captures too.
flame_captures() { grep -c "capture pid $slow_pid op 8:" "$work/agent.log"; }
before=$(flame_captures)
flame="http://$addr/pid/$slow_pid/flamegraph?sample_index=inuse_space"
curl -s -m 30 -o "$work/flame1.html" -w '%{http_code}' "$flame" >"$work/flame1.code" &
f1=$!
sleep 0.5
curl -s -m 30 -o "$work/flame2.html" -w '%{http_code}' "$flame" >"$work/flame2.code" &
f2=$!
wait "$f1" "$f2"
after=$(flame_captures)
if [[ $(cat "$work/flame1.code") == 200 && $(cat "$work/flame2.code") == 200 ]] &&
  ((after - before == 1)); then
  pass "two clients of the same flame graph share one capture"
else
  fail "flame graphs: status $(cat "$work/flame1.code") and $(cat "$work/flame2.code"), $((after - before)) captures (want 1)" \
    "$work/agent.log"
fi

# --- 2. watch's capture goes first ---------------------------------------------
seen=$(pauses)
for what in heap allocs "heap?debug=1"; do
  url="http://$addr/debug/pprof/$what"
  [[ $what == *\?* ]] && url+="&pid=$slow_pid" || url+="?pid=$slow_pid"
  curl -s -m 40 -o /dev/null "$url" &
  clients+=($!)
done
if ! e2e_wait_until 10 eval '(($(pauses) > seen))'; then
  fail "serve's captures of the slow target did not start" "$work/agent.log"
fi
e2e_start_as_nobody grower "$work/bin/oomgrower" -step-mib 8 -every 100ms -max-mib 64 -exit-code 0 -linger 60s
started=$SECONDS
triggered() {
  jq -e --argjson p "$grower_pid" 'select(.pid == $p and .reason == "rss-above-40MiB" and .file != null)' \
    "$dir/watch.jsonl" >/dev/null 2>&1
}
if e2e_wait_until 20 triggered && ((SECONDS - started <= 4)); then
  pass "watch captured the new process within $((SECONDS - started)) s while serve's clients held the workers"
else
  fail "watch's capture of the new process took $((SECONDS - started)) s (4 s allowed) while serve's clients held the workers" \
    "$work/agent.log"
fi

# --- 3. a capture nobody waits for leaves the queue ------------------------------
# serve's worker is busy with the slow target's captures: this one queues,
# and its client gives up after 1 s.
curl -s -m 1 -o /dev/null "http://$addr/pid/$slow_pid/flamegraph?sample_index=alloc_space"
if e2e_wait_until 5 eval '(($(captures cancelled) >= 1))'; then
  pass "the capture of a client that disconnected while it queued was cancelled"
else
  fail "no capture was cancelled after its client disconnected" "$work/agent.log"
fi

e2e_check_same_process "the agent" "$agent_pid" && pass "the agent is still running"
e2e_finish
