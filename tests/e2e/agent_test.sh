#!/usr/bin/env bash
# One agent, three roles (issue 24): `goheap2pprof agent` with serve, push
# and watch all on, over one discovery and one pool of capture workers:
#   1. a Go target that grows to a trigger (testdata/oomgrower, --rss-above
#      100M) produces a file in -o DIR, a push with trigger="rss-above-100MiB"
#      (to the receiver the push suites use, tests/pushreceiver) whose
#      in-use top is the grower's growHeap, and its periodic series besides;
#   2. a scrape of /debug/pprof/heap?pid=N of the same process answers a
#      profile;
#   3. all of it came through one pool: /metrics counts the pool's requests
#      of each role (serve, push, watch, discovery) and no more workers
#      started than its --max-concurrent slots (none crashed);
#   4. a hostile target, testdata/damagedtarget (its bucket list is a cycle),
#      costs one capture in each role: the scrape answers 500 naming the
#      damaged list, the watch's baseline of it is recorded as malformed,
#      nothing of it is pushed; and the agent goes on: the grower is
#      scraped and pushed after it.
# The targets run as user 65534 and the agent admits only that user
# (--allow-uid), leaving the machine's other Go processes alone; that needs root.
#
#   bash tests/e2e/agent_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/push_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command jq "jq is not installed (scripts/install-deps.sh installs it)"
e2e_require_command setpriv "needs setpriv (util-linux) to run the targets as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the targets run as user 65534, apart from this machine's other Go processes)"
  exit 77
fi
e2e_make_work agent
chmod 755 "$work"
trap 'e2e_stop_pids -9' EXIT

push_build_programs
e2e_go_build oomgrower "$work/bin/oomgrower"
# The damaged target reaches the runtime's list head with go:linkname.
if ! (cd "$src/testdata/damagedtarget" &&
  CGO_ENABLED=0 "${go[@]}" build -ldflags=-checklinkname=0 -o "$work/bin/damagedtarget" .) \
  >"$work/build-damaged.log" 2>&1; then
  fail "go build of testdata/damagedtarget" "$work/build-damaged.log"
  e2e_finish
fi
push_start_receiver


# The damaged target first, so every role meets it before the grower triggers.
e2e_start_as_nobody damaged "$work/bin/damagedtarget"
dir=$work/out
mkdir "$dir"
e2e_start "$work/agent.out" "$work/agent.log" "$tool" agent --listen 127.0.0.1:0 \
  --pyroscope "http://$raddr" --interval 1s --discover-interval 1 --allow-uid 65534 \
  -o "$dir" --rss-above 100M --poll 100ms --max-concurrent 2 --capture-timeout 20s -v
agent_pid=$target_pid
if ! e2e_wait_for_line "$work/agent.log" "roles: serve on" "$agent_pid" 10; then
  fail "the agent did not start" "$work/agent.log"
  e2e_finish
fi
addr=$(sed -n 's/.*roles: serve on \([^ ]*\) .*/\1/p' "$work/agent.log" | head -n 1)
if grep -q "roles: serve on $addr push watch; 2 capture workers" "$work/agent.log"; then
  pass "one agent with three roles: serve on $addr, push, watch"
else
  fail "the agent's roles" "$work/agent.log"
fi
metric() { curl -s "http://$addr/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

# --- 4a. the damaged target, seen by each role ----------------------------------
damaged_baseline() {
  jq -e --argjson p "$damaged_pid" \
    'select(.pid == $p and .reason == "baseline" and .error_kind != null)' \
    "$dir/watch.jsonl" >/dev/null 2>&1
}
if e2e_wait_until 30 damaged_baseline; then
  pass "watch: the damaged target's capture failed and was recorded: $(jq -r --argjson p "$damaged_pid" 'select(.pid == $p and .reason == "baseline") | .error_kind + ": " + .error' "$dir/watch.jsonl" | head -c 200)"
else
  fail "watch: no failed capture of the damaged target" "$work/agent.log"
fi
code=$(curl -s -o "$work/damaged.txt" -w '%{http_code}' "http://$addr/debug/pprof/heap?pid=$damaged_pid")
if [[ $code == 500 ]] && grep -qi "cycle\|bucket" "$work/damaged.txt"; then
  pass "serve: the damaged target's scrape answers 500: $(head -c 200 "$work/damaged.txt")"
else
  echo "status $code" >>"$work/damaged.txt"
  fail "serve: the damaged target's scrape" "$work/damaged.txt"
fi
if e2e_wait_until 20 grep -q "capture of pid $damaged_pid .*" "$work/agent.log"; then
  pass "push: the damaged target's capture failed and was logged: $(grep -m1 "capture of pid $damaged_pid" "$work/agent.log" | head -c 200)"
else
  fail "push: no failed capture of the damaged target logged" "$work/agent.log"
fi

# --- 1. the grower reaches the trigger --------------------------------------------
e2e_start_as_nobody grower "$work/bin/oomgrower" -max-mib 160 -exit-code 0 -linger 120s
trigger_file() {
  jq -r --argjson p "$grower_pid" 'select(.pid == $p and .reason == "rss-above-100MiB" and .file != null) | .file' \
    "$dir/watch.jsonl" 2>/dev/null | tail -n 1
}
if e2e_wait_until 60 eval '[[ -n $(trigger_file) ]]'; then
  file=$(trigger_file)
  if [[ -s $dir/$file ]]; then
    pass "watch: the trigger wrote $file"
  else
    fail "watch: $file is missing or empty" "$dir/watch.jsonl"
  fi
else
  fail "watch: no rss-above-100MiB profile of the grower" "$work/agent.log"
fi
trigger_push() {
  jq -r --arg p "$grower_pid" 'select(.labels.pid == $p and .labels.trigger == "rss-above-100MiB") | .file' \
    "$work/rec/pyroscope.jsonl" 2>/dev/null | tail -n 1
}
if e2e_wait_until 20 eval '[[ -n $(trigger_push) ]]'; then
  pushed=$(trigger_push)
  labels=$(jq -c --arg p "$grower_pid" 'select(.labels.pid == $p and .labels.trigger != null) | .labels' "$work/rec/pyroscope.jsonl" | tail -n 1)
  pass "push: the triggered profile was pushed with trigger=: $labels"
  top=$("${go[@]}" tool pprof -top -sample_index=inuse_space "$work/rec/$pushed" 2>/dev/null |
    awk 'seen && NF >= 6 {print $6; exit} /flat%/ {seen = 1}')
  if [[ $top == main.growHeap ]]; then
    pass "push: the triggered profile's top in-use site is main.growHeap"
  else
    fail "push: the triggered profile's top in-use site is '$top'"
  fi
else
  fail "push: no push with trigger=rss-above-100MiB for pid $grower_pid" "$work/rec/pyroscope.jsonl"
fi
periodic() {
  jq -e --arg p "$grower_pid" 'select(.labels.pid == $p and .labels.trigger == null)' \
    "$work/rec/pyroscope.jsonl" >/dev/null 2>&1
}
if e2e_wait_until 20 periodic; then
  pass "push: the grower's periodic series is pushed too, without trigger="
else
  fail "push: no periodic push of the grower" "$work/agent.log"
fi

# --- 2. a scrape of the same process --------------------------------------------
code=$(curl -s -o "$work/scrape.pb.gz" -w '%{http_code}' "http://$addr/debug/pprof/heap?pid=$grower_pid")
top=$("${go[@]}" tool pprof -top -sample_index=inuse_space "$work/scrape.pb.gz" 2>/dev/null |
  awk 'seen && NF >= 6 {print $6; exit} /flat%/ {seen = 1}')
if [[ $code == 200 && $top == main.growHeap ]]; then
  pass "serve: a scrape of the grower answers its profile (top in-use site main.growHeap)"
else
  fail "serve: scrape of the grower: status $code, top '$top'" "$work/agent.log"
fi

# --- 4b. nothing of the damaged target was pushed ---------------------------------
if ! jq -e --arg p "$damaged_pid" 'select(.labels.pid == $p)' "$work/rec/pyroscope.jsonl" >/dev/null; then
  pass "push: nothing of the damaged target was pushed"
else
  fail "push: the damaged target was pushed" "$work/rec/pyroscope.jsonl"
fi

# --- 3. one pool ----------------------------------------------------------------------
curl -s "http://$addr/metrics" >"$work/metrics.txt"
ok=1
for role in serve push watch discovery; do
  n=$(awk -v m="goheap2pprof_pool_requests_total{role=\"$role\"}" '$1 == m {print $2}' "$work/metrics.txt")
  ((${n:-0} > 0)) || ok=0
done
started=$(metric goheap2pprof_pool_workers_started_total)
slots=$(metric goheap2pprof_pool_workers)
crashes=$(awk '$1 ~ /^goheap2pprof_worker_restarts_total/ {s += $2} END {print s + 0}' "$work/metrics.txt")
if ((ok && slots == 2 && started >= 1 && started <= slots && crashes == 0)); then
  pass "one pool: requests from every role ($(grep '^goheap2pprof_pool_requests_total' "$work/metrics.txt" | tr '\n' ' ')), $started workers started for $slots slots"
else
  fail "one pool: slots $slots, started $started, worker restarts $crashes" "$work/metrics.txt"
fi
if command -v promtool >/dev/null; then
  if promtool check metrics <"$work/metrics.txt" >"$work/promtool.txt" 2>&1 ||
    ! grep -qv "counter metrics should have \"_total\" suffix\|no help text" "$work/promtool.txt"; then
    pass "the one /metrics parses (promtool check metrics)"
  else
    fail "promtool check metrics" "$work/promtool.txt"
  fi
fi
captures_ok=$(metric 'goheap2pprof_captures_total{outcome="ok"}')
captures_bad=$(awk '$1 ~ /^goheap2pprof_captures_total/ && $1 !~ /outcome="ok"/ {s += $2} END {print s + 0}' "$work/metrics.txt")
if ((${captures_ok:-0} > 0 && captures_bad > 0)); then
  pass "the one capture counter holds every role's: $captures_ok ok, $captures_bad failed (the damaged target)"
else
  fail "captures_total: ok ${captures_ok:-none}, failed $captures_bad" "$work/metrics.txt"
fi

# --- the agent goes on, and stops on SIGTERM ------------------------------------------
if e2e_same_process "$agent_pid" "${pid_start_time[$agent_pid]}"; then
  kill -TERM "$agent_pid"
  e2e_wait_exit "$agent_pid" 30
  if [[ $rc == 0 ]] && jq -e 'select(.event == "watch-end")' "$dir/watch.jsonl" >/dev/null; then
    pass "the agent ran to the end and exits 0 on SIGTERM (watch.jsonl closed)"
  else
    fail "agent exit status $rc" "$work/agent.log"
  fi
else
  fail "the agent died" "$work/agent.log"
fi
e2e_finish
