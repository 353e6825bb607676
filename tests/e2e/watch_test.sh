#!/usr/bin/env bash
# `goheap2pprof watch` on a real kernel, against testdata/oomgrower (grows its
# heap by 4 MiB every 100 ms in main.growHeap):
#   1. cgroup v1: a memory cgroup with a 200 MB limit; watch --above 70% must
#      write a profile before the kernel's OOM kill, with main.growHeap the
#      top in-use site, then exit 0 with the kill in watch.jsonl, whose last
#      trigger line says where the memory was (check_go_memory: the Go
#      runtime's classes against the cgroup's usage);
#      and, from another cgroup namespace (unshare --cgroup), the same
#      cgroup and limit are found;
#   2. the same on cgroup v2 (memory.max), with --on-event max,oom, where the
#      v2 memory controller is available; skipped with a message otherwise;
#   2b. the v2 event path (inotify on memory.events, escalation, oom_kill)
#      on a fake v2 tree, so it runs on v1 machines too, and --working-set
#      there;
#   3. --rss-above without any cgroup limit; the process exits by itself;
#   4. --every 1s with --max-files 3: never more than 3 of our files, and a
#      file that is not ours is never deleted; each heap profile has its
#      goroutine profile beside it, rotated with it; SIGTERM ends the watch with 0;
#   5. --psi on /proc/pressure/memory: registered where PSI exists, a clear
#      error otherwise; SIGINT ends the watch with 0;
#   6. --all finds Go processes as they start and records their ends;
#   7. usage errors.
# The grower is started under a parent that does not reap it at once (as a
# service manager or shell might not), so watch can read its exit status.
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_seams
e2e_require_executables "$tool"
e2e_require_go
e2e_require_command jq "jq is not installed (scripts/install-deps.sh installs it)"
e2e_require_command perl "perl is not installed"
e2e_make_work watch

echo "building testdata/oomgrower with $("${go[@]}" version)"
grower=$work/bin/oomgrower
e2e_go_build oomgrower "$grower"

cgroups=()
cleanup() {
  e2e_stop_pids -9
  local cg
  for cg in "${cgroups[@]}"; do
    # The cgroup is empty once its processes are gone; give the kernel a moment.
    for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg" 2>/dev/null && break; sleep 0.2; done
  done
}
trap cleanup EXIT

# start_grower <name> <cgroup.procs file or -> <grower args...>: starts the
# grower (joining the cgroup first when given) under a perl parent that
# reaps it only when told to stop (SIGTERM, which also kills the grower),
# and sets grower_pid.
start_grower() {
  local name=$1 procs=$2
  shift 2
  e2e_start "$work/$name.out" "$work/$name.err" perl -e '
    my $procs = shift @ARGV;
    my $pid = fork();
    if ($pid == 0) {
      if ($procs ne "-") {
        open(my $f, ">>", $procs) or die "cannot join $procs: $!";
        print $f "$$\n";
        close($f) or die "cannot join $procs: $!";
      }
      exec(@ARGV) or die "exec: $!";
    }
    $SIG{TERM} = sub { kill("KILL", $pid); waitpid($pid, 0); exit 0 };
    sleep 600;' "$procs" "$grower" "$@"
  grower_pid=""
  local _
  for _ in $(seq 100); do
    grower_pid=$(awk '/^READY/ {print $2}' "$work/$name.out" 2>/dev/null)
    [[ -n $grower_pid ]] && return 0
    sleep 0.1
  done
  return 1
}

# top_function <profile>: the function with the most in-use bytes, by
# go tool pprof -top.
top_function() {
  "${go[@]}" tool pprof -top -sample_index=inuse_space "$1" 2>/dev/null |
    awk 'seen && NF >= 6 {print $6; exit} /flat%/ {seen = 1}'
}

# check_go_memory <case> <watch.jsonl>: the last trigger line before the
# kill says where the memory was. Its Go memory is read a few milliseconds
# after the trigger's sample of the cgroup, while the grower adds 4 MiB per
# step (about 2.7 % of the usage at the 70 % trigger), so the bounds leave
# one step of room:
#   - the classes but the released one (what the runtime has mapped and not
#     given back to the kernel: what can be resident) sum to within 4 % of
#     the cgroup's usage (measured in three runs: +1.9 %, +1.9 %, +1.7 %);
#     the whole total, /memory/classes/total:bytes, is printed but not
#     bounded: it includes
#     the released pages, which the scavenger returns as it pleases (it was
#     +4.0 %, +6.7 % and +6.6 % above the usage);
#   - the leaves sum to the total; the heap-objects class is the largest and
#     holds at least 80 % of the total (measured: 94.7 %, 92.1 %, 92.2 %);
#   - the memory not managed by Go (RssAnon - (Sys - HeapReleased)) is under
#     5 % of the total either way: the grower is pure Go (measured: -3.50,
#     -3.57 and -3.49 MB, 2.2-2.3 %; negative because Go counts mapped pages
#     the grower has not touched yet).
check_go_memory() {
  local what=$1 jsonl=$2 line
  line=$(jq -sc '(map(.event) | index("exit")) as $stop | to_entries
      | map(select(.key < $stop and .value.event == "trigger" and .value.usage != null))
      | last | .value' "$jsonl")
  local verdict
  verdict=$(jq -r '.go_memory as $g | .usage as $u
      | if ($g.classes | type) != "object" then "no classes: \($g)" else
        ($g.classes | to_entries | max_by(.value)) as $top
        | ($g.classes["/memory/classes/heap/objects:bytes"]) as $obj
        | ($g.total - $g.classes["/memory/classes/heap/released:bytes"]) as $held
        | (($g.total - $u) / $u * 100 | . * 10 | round / 10) as $pct
        | (($held - $u) / $u * 100 | . * 10 | round / 10) as $held_pct
        | (($g.classes | add) == $g.total) as $sum
        | (if ($held_pct | fabs) <= 4 and $sum
              and $top.key == "/memory/classes/heap/objects:bytes" and $obj >= 0.8 * $g.total
              and ($g.not_go | fabs) < 0.05 * $g.total
           then "ok" else "bad" end)
          + " classes but released \($held) vs cgroup usage \($u): \($held_pct)%;"
          + " with released (total \($g.total)): \($pct)%;"
          + " heap objects \($obj) (\($obj * 1000 / $g.total | round / 10)% of total);"
          + " leaves sum to total: \($sum); not managed by Go \($g.not_go);"
          + " live heap \($g.live_heap), goal \($g.heap_goal)"
        end' <<<"$line" 2>&1)
  if [[ $verdict == ok* ]]; then
    pass "$what: the last trigger line's Go memory: ${verdict#ok }"
  else
    fail "$what: the last trigger line's Go memory: $verdict"
  fi
}

# check_oom_run <case> <dir> <reason>: the checks of an OOM case.
check_oom_run() {
  local what=$1 dir=$2 reason=$3 jsonl=$2/watch.jsonl
  if [[ $rc == 0 ]]; then pass "$what: watch exited 0 after the kill"; else
    fail "$what: watch exit status $rc" "$dir/watch.err"; fi
  # The profiles written before the end record, by a trigger (not the baseline).
  local before
  before=$(jq -rs --arg r "$reason" '(map(.event) | index("exit")) as $stop
      | to_entries | map(select(.key < $stop and .value.event == "trigger"
        and .value.reason == $r and .value.file != null)) | .[].value.file' "$jsonl")
  local last
  last=$(tail -n 1 <<<"$before")
  if [[ -n $last && -f $dir/$last ]]; then
    pass "$what: $(wc -l <<<"$before") $reason profile(s) written before the kill ($last)"
  else
    fail "$what: no $reason profile written before the process ended" "$jsonl"
    return
  fi
  local top
  top=$(top_function "$dir/$last")
  if [[ $top == main.growHeap ]]; then pass "$what: main.growHeap is the top in-use site"; else
    fail "$what: top in-use site is '$top', not main.growHeap"
    "${go[@]}" tool pprof -top "$dir/$last" 2>&1 | head -n 12 | sed 's/^/    /'
  fi
  local end
  end=$(jq -c 'select(.event == "exit")' "$jsonl")
  if [[ $(jq -r '.oom_kill_rose' <<<"$end") == true && $(jq -r '.signal' <<<"$end") == 9 ]]; then
    pass "$what: watch.jsonl records the OOM kill: $(jq -r .text <<<"$end")"
  else
    fail "$what: watch.jsonl does not record an OOM kill: $end"
  fi
  check_go_memory "$what" "$jsonl"
  echo "    watch's peak RSS (VmHWM) after each capture, KiB:" \
    "$(jq -r 'select(.watch_peak_rss_kib != null) | .watch_peak_rss_kib' "$jsonl" | tr '\n' ' ')"
  echo "    watch.jsonl:"
  sed 's/^/      /' "$jsonl"
  echo "    go tool pprof -top $last:"
  "${go[@]}" tool pprof -top "$dir/$last" 2>&1 | sed 's/^/      /' | head -n 12
}

# --- 1. cgroup v1, real OOM kill --------------------------------------------
v1=/sys/fs/cgroup/memory
if [[ $(id -u) != 0 ]]; then
  skip "v1 OOM kill: needs root to create a memory cgroup"
elif [[ ! -w $v1/cgroup.procs || ! -f $v1/memory.limit_in_bytes ]]; then
  skip "v1 OOM kill: no cgroup v1 memory controller mounted at $v1"
else
  cg=$v1/$(e2e_cgroup_name v1)
  cgroups+=("$cg")
  mkdir "$cg"
  echo 200M >"$cg/memory.limit_in_bytes"
  # Without swap accounting the grower could swap instead of being killed.
  echo 0 >"$cg/memory.swappiness" 2>/dev/null
  [[ -f $cg/memory.memsw.limit_in_bytes ]] && echo 200M >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
  dir=$work/v1
  mkdir "$dir"
  if start_grower v1grower "$cg/cgroup.procs"; then
    "$tool" watch "$grower_pid" -o "$dir" --above 70% --poll 100ms \
      >"$dir/watch.out" 2>"$dir/watch.err" &
    e2e_wait_exit $! 120
    check_oom_run "v1 OOM kill" "$dir" above70
  else
    fail "v1 OOM kill: the grower did not start" "$work/v1grower.err"
  fi
  e2e_stop_pids

  # The same cgroup seen from another cgroup namespace: /proc/<pid>/cgroup
  # and the mount root then read "/../..", and the limit must still be found.
  dir=$work/v1ns
  mkdir "$dir"
  if ! unshare --cgroup true 2>/dev/null; then
    skip "v1 cgroup namespace: unshare --cgroup is not available here"
  elif start_grower v1nsgrower "$cg/cgroup.procs" -max-mib 8; then
    unshare --cgroup "$tool" watch "$grower_pid" -o "$dir" --no-baseline \
      >"$dir/watch.out" 2>"$dir/watch.err" &
    watch_pid=$!
    sleep 1
    kill -TERM "$watch_pid"
    e2e_wait_exit "$watch_pid" 20
    start=$(jq -c 'select(.event == "start")' "$dir/watch.jsonl" 2>/dev/null)
    if [[ $rc == 0 && $(jq -r .cgroup.path <<<"$start") == /..* &&
      $(jq -r .cgroup.limit_dir <<<"$start") == "$cg" && $(jq -r .limit <<<"$start") == 209715200 ]]; then
      pass "v1 cgroup namespace: $(jq -r .cgroup.path <<<"$start") resolved to $cg, limit 200 MiB"
    else
      fail "v1 cgroup namespace: exit $rc, start record $start" "$dir/watch.err"
    fi
  else
    fail "v1 cgroup namespace: the grower did not start" "$work/v1nsgrower.err"
  fi
  e2e_stop_pids
fi

# --- 2. cgroup v2, real OOM kill --------------------------------------------
v2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
if [[ -z $v2 ]]; then
  skip "v2 OOM kill: no cgroup2 filesystem is mounted here"
elif ! grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
  skip "v2 OOM kill: the cgroup2 hierarchy at $v2 has no memory controller (on this machine memory is a v1 controller)"
elif [[ $(id -u) != 0 ]]; then
  skip "v2 OOM kill: needs root to create a cgroup"
else
  grep -qw memory "$v2/cgroup.subtree_control" || echo +memory >"$v2/cgroup.subtree_control"
  cg=$v2/$(e2e_cgroup_name v2)
  cgroups+=("$cg")
  if mkdir "$cg" && echo 200M >"$cg/memory.max"; then
    echo 0 >"$cg/memory.swap.max" 2>/dev/null
    dir=$work/v2
    mkdir "$dir"
    if start_grower v2grower "$cg/cgroup.procs"; then
      "$tool" watch "$grower_pid" -o "$dir" --above 70% --on-event max,oom --poll 100ms \
        >"$dir/watch.out" 2>"$dir/watch.err" &
      e2e_wait_exit $! 120
      check_oom_run "v2 OOM kill" "$dir" above70
      if [[ $(jq -r 'select(.event == "start") | .events_file' "$dir/watch.jsonl") == */memory.events ]]; then
        pass "v2: --on-event watches memory.events"
      else
        fail "v2: --on-event did not watch memory.events" "$dir/watch.jsonl"
      fi
    else
      fail "v2 OOM kill: the grower did not start" "$work/v2grower.err"
    fi
    e2e_stop_pids
  else
    skip "v2 OOM kill: cannot create a cgroup with memory.max under $v2"
  fi
fi

# --- 2b. the v2 event path on a fake cgroup v2 tree --------------------------
# Where the machine has no v2 memory controller, a fake tree (regular files,
# GOHEAP2PPROF_TEST_CGROUP_ROOT) stands for one: memory.events changes must
# wake the watch through inotify (--poll is an hour), a higher --above level
# escalates once inside the cool-down, and the end reads oom_kill there.
dir=$work/fakev2
fake=$work/fakev2-root
fcg=$fake/sys/fs/cgroup/app
mkdir -p "$dir" "$fake/proc/self" "$fcg"
if start_grower fakev2grower - -max-mib 8; then
  mkdir -p "$fake/proc/$grower_pid"
  echo "0::/app" >"$fake/proc/$grower_pid/cgroup"
  echo "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate" >"$fake/proc/self/mountinfo"
  echo max >"$fake/sys/fs/cgroup/memory.max"
  echo 209715200 >"$fcg/memory.max"
  echo 104857600 >"$fcg/memory.current"
  echo "inactive_file 0" >"$fcg/memory.stat"
  events() { printf 'low 0\nhigh 0\nmax %s\noom %s\noom_kill %s\noom_group_kill 0\n' "$@" >"$fcg/memory.events"; }
  events 0 0 0
  GOHEAP2PPROF_TEST_CGROUP_ROOT=$fake "$tool" watch "$grower_pid" -o "$dir" --above 90% \
    --on-event max,oom --poll 1h --cooldown 1h >"$dir/watch.out" 2>"$dir/watch.err" &
  watch_pid=$!
  e2e_wait_for_line "$dir/watch.jsonl" '"reason":"baseline"' "$watch_pid" 20
  events 1 0 0
  e2e_wait_for_line "$dir/watch.jsonl" '"reason":"max"' "$watch_pid" 5
  echo 199229440 >"$fcg/memory.current"
  events 1 1 0
  e2e_wait_for_line "$dir/watch.jsonl" '"reason":"above90"' "$watch_pid" 5
  events 1 1 1
  kill -9 "$grower_pid"
  e2e_wait_exit "$watch_pid" 20
  jsonl=$dir/watch.jsonl
  if [[ $(jq -r 'select(.reason == "max") | .file' "$jsonl") == *-max.heap.pb.gz ]]; then
    pass "fake v2: a memory.events 'max' change woke the watch (no poll for an hour) and captured"
  else
    fail "fake v2: no capture on the 'max' event" "$jsonl"
  fi
  if [[ $(jq -r 'select(.reason == "above90") | "\(.escalation) \(.usage_pct)"' "$jsonl") == "true 95" &&
    $(jq -r 'select(.reason == "oom") | .skipped' "$jsonl") == cool-down* ]]; then
    pass "fake v2: above90 escalated inside the cool-down; the oom event there was skipped"
  else
    fail "fake v2: escalation and skip not as expected" "$jsonl"
  fi
  # A skipped trigger's line says where the memory was too.
  if jq -se 'map(select(.reason == "oom")) | length > 0 and all(
      .go_memory.classes["/memory/classes/heap/objects:bytes"] > 0
      and .go_memory.total > 0 and .go_memory.heap_goal > 0)' "$jsonl" >/dev/null; then
    pass "fake v2: the skipped trigger's line carries the Go memory classes"
  else
    fail "fake v2: no go_memory in the skipped trigger's line" "$jsonl"
  fi
  end=$(jq -c 'select(.event == "exit")' "$jsonl")
  if [[ $rc == 0 && $(jq -r .signal <<<"$end") == 9 && $(jq -r .oom_kill_rose <<<"$end") == true ]]; then
    pass "fake v2: the end reads oom_kill from memory.events: $(jq -r .text <<<"$end")"
  else
    fail "fake v2: exit $rc, end record $end" "$dir/watch.err"
  fi
else
  fail "fake v2: the grower did not start" "$work/fakev2grower.err"
fi
e2e_stop_pids

# --- 2c. --working-set on the fake v2 tree ------------------------------------
# Usage at 95% of the limit of which 20 points are inactive file pages: the
# kubelet's working set is 75%, so --above 90% --working-set must wait until
# the inactive pages are gone.
dir=$work/workingset
mkdir -p "$dir"
if start_grower wsgrower - -max-mib 8; then
  mkdir -p "$fake/proc/$grower_pid"
  echo "0::/app" >"$fake/proc/$grower_pid/cgroup"
  echo "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate" >"$fake/proc/self/mountinfo"
  echo max >"$fake/sys/fs/cgroup/memory.max"
  echo 209715200 >"$fcg/memory.max"
  echo 104857600 >"$fcg/memory.current"
  echo "inactive_file 0" >"$fcg/memory.stat"
  GOHEAP2PPROF_TEST_CGROUP_ROOT=$fake "$tool" watch "$grower_pid" -o "$dir" --above 90% \
    --working-set --poll 100ms >"$dir/watch.out" 2>"$dir/watch.err" &
  watch_pid=$!
  e2e_wait_for_line "$dir/watch.jsonl" '"reason":"baseline"' "$watch_pid" 20
  echo "inactive_file 41943040" >"$fcg/memory.stat"
  echo 199229440 >"$fcg/memory.current"
  sleep 1
  if ! grep -q '"reason":"above90"' "$dir/watch.jsonl"; then
    pass "working-set: 95% usage with 20 points of inactive file pages does not fire --above 90%"
  else
    fail "working-set: fired on usage that includes inactive file pages" "$dir/watch.jsonl"
  fi
  echo "inactive_file 0" >"$fcg/memory.stat"
  if e2e_wait_for_line "$dir/watch.jsonl" '"reason":"above90"' "$watch_pid" 5 &&
    [[ $(jq -r 'select(.reason == "above90") | "\(.usage_is_working_set) \(.usage_pct)"' "$dir/watch.jsonl") == "true 95" ]]; then
    pass "working-set: fires once the working set itself reaches 90%"
  else
    fail "working-set: no above90 on the working set" "$dir/watch.jsonl"
  fi
  kill -TERM "$watch_pid"
  e2e_wait_exit "$watch_pid" 20
else
  fail "working-set: the grower did not start" "$work/wsgrower.err"
fi
e2e_stop_pids

# --- 3. --rss-above, no cgroup limit -----------------------------------------
dir=$work/rss
mkdir "$dir"
if start_grower rssgrower - -max-mib 150 -exit-code 3 -linger 2s; then
  "$tool" watch "$grower_pid" -o "$dir" --rss-above 100M --poll 100ms \
    >"$dir/watch.out" 2>"$dir/watch.err" &
  e2e_wait_exit $! 60
  if [[ $rc == 0 ]]; then pass "rss-above: watch exited 0 when the process ended"; else
    fail "rss-above: watch exit status $rc" "$dir/watch.err"; fi
  file=$(jq -r 'select(.reason == "rss-above-100MiB" and .file != null) | .file' "$dir/watch.jsonl" | tail -n 1)
  if [[ -n $file && -f $dir/$file ]]; then
    pass "rss-above: profile written ($file, rss $(jq -r "select(.file == \"$file\") | .rss" "$dir/watch.jsonl"))"
    top=$(top_function "$dir/$file")
    if [[ $top == main.growHeap ]]; then pass "rss-above: main.growHeap is the top in-use site"; else
      fail "rss-above: top in-use site is '$top'"; fi
  else
    fail "rss-above: no rss-above-100MiB profile" "$dir/watch.jsonl"
  fi
  end=$(jq -c 'select(.event == "exit")' "$dir/watch.jsonl")
  if [[ $(jq -r '.how' <<<"$end") == exit && $(jq -r '.exit_code' <<<"$end") == 3 &&
    $(jq -r '.oom_kill_rose' <<<"$end") != true ]]; then
    pass "rss-above: watch.jsonl records exit code 3 and no OOM kill: $(jq -r .text <<<"$end")"
  else
    fail "rss-above: wrong end record: $end"
  fi
else
  fail "rss-above: the grower did not start" "$work/rssgrower.err"
fi
e2e_stop_pids

# --- 4. --every 1s, --max-files 3, SIGTERM -----------------------------------
dir=$work/every
mkdir "$dir"
echo "not ours" >"$dir/foreign-1-20200101T000000.000Z-every.heap.pb.gz"
if start_grower everygrower - -max-mib 16; then
  "$tool" watch "$grower_pid" -o "$dir" --every 1s --max-files 3 --poll 100ms \
    >"$dir/watch.out" 2>"$dir/watch.err" &
  watch_pid=$!
  sleep 5.5
  kill -TERM "$watch_pid"
  e2e_wait_exit "$watch_pid" 20
  if [[ $rc == 0 ]]; then pass "every: watch exited 0 on SIGTERM"; else
    fail "every: watch exit status $rc after SIGTERM" "$dir/watch.err"; fi
  written=$(jq -r 'select(.event == "trigger" and .file != null) | .file' "$dir/watch.jsonl" | wc -l)
  ours=$(find "$dir" -name 'oomgrower-*.heap.pb.gz' | wc -l)
  if ((written >= 5 && ours == 3)); then
    pass "every: $written profiles written, the newest 3 kept (--max-files 3)"
  else
    fail "every: $written written, $ours on disk (want >= 5 and 3)" "$dir/watch.jsonl"
  fi
  # Each heap profile has its goroutine profile beside it, rotated with it;
  # the grower's one goroutine (main.main, asleep) is in it.
  paired=0
  for f in "$dir"/oomgrower-*.heap.pb.gz; do
    [[ -f ${f%.heap.pb.gz}.goroutine.pb.gz ]] && paired=$((paired + 1))
  done
  gfiles=$(find "$dir" -name 'oomgrower-*.goroutine.pb.gz' | wc -l)
  gnamed=$(jq -r 'select(.event == "trigger" and .file != null) | .goroutine_file' "$dir/watch.jsonl" |
    grep -c '\.goroutine\.pb\.gz$')
  gnewest=$(find "$dir" -name 'oomgrower-*.goroutine.pb.gz' | sort | tail -n 1)
  gtop=$("${go[@]}" tool pprof -traces "$gnewest" 2>/dev/null | grep -c 'main\.main')
  if ((paired == 3 && gfiles == 3 && gnamed == written && gtop >= 1)); then
    pass "every: each heap profile has its .goroutine.pb.gz beside it, rotated with it ($gfiles kept; main.main in it)"
  else
    fail "every: $paired of 3 heap files paired, $gfiles goroutine files, $gnamed of $written records name one, main.main $gtop" "$dir/watch.jsonl"
  fi
  if [[ -f $dir/foreign-1-20200101T000000.000Z-every.heap.pb.gz ]]; then
    pass "every: a file watch did not write is left alone"
  else
    fail "every: watch deleted a file it did not write"
  fi
  if [[ $(jq -r 'select(.event == "watch-end") | .reason' "$dir/watch.jsonl") == SIGTERM ]]; then
    pass "every: watch.jsonl says the watch ended on SIGTERM"
  else
    fail "every: no watch-end record for SIGTERM" "$dir/watch.jsonl"
  fi
else
  fail "every: the grower did not start" "$work/everygrower.err"
fi
e2e_stop_pids

# --- 5. PSI, and --on-event on this machine's cgroup version -----------------
dir=$work/psi
mkdir "$dir"
if start_grower psigrower - -max-mib 8; then
  "$tool" watch "$grower_pid" -o "$dir" --psi some:150ms/2s --psi-scope system \
    --on-event max,oom --no-baseline >"$dir/watch.out" 2>"$dir/watch.err" &
  watch_pid=$!
  sleep 1
  if [[ -e /proc/pressure/memory ]]; then
    kill -INT "$watch_pid"
    e2e_wait_exit "$watch_pid" 20
    if [[ $rc == 0 && $(jq -r 'select(.event == "start") | .psi_file' "$dir/watch.jsonl") == /proc/pressure/memory &&
      $(jq -r 'select(.event == "watch-end") | .reason' "$dir/watch.jsonl") == SIGINT ]]; then
      pass "psi: trigger registered on /proc/pressure/memory; SIGINT ends the watch with 0"
    else
      fail "psi: exit $rc" "$dir/watch.err"
    fi
  else
    e2e_wait_exit "$watch_pid" 20
    if [[ $rc != 0 ]] && grep -q "PSI is not available" "$dir/watch.err"; then
      pass "psi: no /proc/pressure/memory on this kernel, and watch says so (exit $rc)"
    else
      fail "psi: without PSI, exit $rc and no clear error" "$dir/watch.err"
    fi
  fi
  start=$(jq -c 'select(.event == "start")' "$dir/watch.jsonl" 2>/dev/null)
  version=$(jq -r '.cgroup.version // "none"' <<<"$start")
  if [[ $version == v2 ]] && jq -e '.events_file' <<<"$start" >/dev/null; then
    pass "on-event: v2 memory.events watched ($(jq -r .events_file <<<"$start"))"
  elif [[ $version != v2 ]] && grep -q -- "--on-event needs cgroup v2" <<<"$start"; then
    pass "on-event: memory cgroup is $version here: skipped with a note, watching went on"
  elif [[ ! -e /proc/pressure/memory ]]; then
    skip "on-event: watch did not start (no PSI)"
  else
    fail "on-event: neither watched nor explained: $start"
  fi
else
  fail "psi: the grower did not start" "$work/psigrower.err"
fi
e2e_stop_pids

# --- 6. --all: Go processes found as they come, their ends recorded ----------
# all_recorded <jsonl> <event> <pid> <seconds>: waits until the file has that
# event for that pid, at most the given seconds (the checks below say if not).
all_recorded() {
  local i
  for ((i = 0; i < $4 * 10; i++)); do
    jq -se --arg e "$2" --argjson p "$3" 'any(.[]; .event == $e and .pid == $p)' "$1" \
      >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}
dir=$work/all
mkdir "$dir"
if start_grower allgrower1 - -max-mib 8; then
  first=$grower_pid first_parent=$target_pid
  # No baseline and no trigger that can fire: other Go processes on this
  # machine are found too, and must not be captured by a test.
  "$tool" watch --all -o "$dir" --no-baseline --rss-above 1T --poll 200ms \
    >"$dir/watch.out" 2>"$dir/watch.err" &
  watch_pid=$!
  # watch checks every process of the machine in its worker first: on a busy
  # machine that takes seconds, so each step waits for its record (bounded).
  all_recorded "$dir/watch.jsonl" start "$first" 30
  if start_grower allgrower2 - -max-mib 8; then
    second=$grower_pid
    all_recorded "$dir/watch.jsonl" start "$second" 30
    kill -TERM "$first_parent"  # kills the first grower
    all_recorded "$dir/watch.jsonl" exit "$first" 30
    kill -TERM "$watch_pid"
    e2e_wait_exit "$watch_pid" 20
    started=$(jq -r 'select(.event == "start") | .pid' "$dir/watch.jsonl")
    if grep -qx "$first" <<<"$started" && grep -qx "$second" <<<"$started"; then
      pass "all: both growers found, the second after the watch began"
    else
      fail "all: growers $first and $second not both found" "$dir/watch.jsonl"
    fi
    if jq -se --argjson p "$first" 'map(select(.event == "exit" and .pid == $p)) | length == 1' \
      "$dir/watch.jsonl" >/dev/null; then
      pass "all: the end of the first grower is recorded"
    else
      fail "all: no exit record for $first" "$dir/watch.jsonl"
    fi
    if [[ $rc == 0 && $(jq -r 'select(.event == "watch-end") | .reason' "$dir/watch.jsonl") == SIGTERM ]]; then
      pass "all: SIGTERM ends the watch with 0"
    else
      fail "all: exit $rc" "$dir/watch.err"
    fi
    if ! grep -q '"file":"' "$dir/watch.jsonl"; then
      pass "all: nothing captured without a trigger"
    else
      fail "all: captured without a trigger" "$dir/watch.jsonl"
    fi
  else
    fail "all: the second grower did not start" "$work/allgrower2.err"
  fi
else
  fail "all: the grower did not start" "$work/allgrower1.err"
fi
e2e_stop_pids

# --- 7. usage errors ---------------------------------------------------------
"$tool" watch -o "$work" >"$work/usage.out" 2>&1
if [[ $? == 2 ]] && grep -q "watch needs pids or --all" "$work/usage.out"; then
  pass "usage: watch without pids exits 2"
else
  fail "usage: watch without pids" "$work/usage.out"
fi
"$tool" watch 1 2 --all -o "$work" >"$work/usage.out" 2>&1
if [[ $? == 2 ]]; then pass "usage: pids and --all exit 2"; else fail "usage: pids and --all" "$work/usage.out"; fi
"$tool" watch "$$" -o "$work/missing-dir" >"$work/usage.out" 2>&1
if [[ $? == 9 ]] && grep -q "does not exist" "$work/usage.out"; then
  pass "usage: a missing output directory exits 9"
else
  fail "usage: missing output directory" "$work/usage.out"
fi
mkdir "$work/notgo"
"$tool" watch "$$" -o "$work/notgo" >"$work/usage.out" 2>&1
if [[ $? == 5 ]] && grep -q '"error_kind"' "$work/notgo/watch.jsonl"; then
  pass "usage: watching a process that is not Go exits 5, with the failed baseline in watch.jsonl"
else
  fail "usage: watching bash" "$work/usage.out"
fi
"$tool" watch "$$" -o "$work" --above 120% >"$work/usage.out" 2>&1
if [[ $? == 2 ]]; then pass "usage: --above 120% exits 2"; else fail "usage: --above 120%" "$work/usage.out"; fi

e2e_finish
