#!/usr/bin/env bash
# `goheap2pprof growth` on testdata/growthtarget, whose four sites follow
# known shapes in wall time (a leak of 2 MiB/s kept forever, a churning
# batch, a cache that fills in the first 1.5 s of the window and then stays
# full, a sawtooth of period 2 s):
#
# (1) Snapshots at rate 1 and at the default rate: the target takes 12 steps
#     0.5 s apart; after each it writes its own heap profile (the oracle) and
#     waits until we have captured it, so both describe the same instant.
#     Over our 12 snapshots: the leak ranks first as STEADY GROWTH with its
#     slope within 5% of 2 MiB/s at rate 1 and within 4 of its stated sigmas
#     at the default rate; neither the churn nor the cache is STEADY GROWTH
#     (the cache is BOUNDED at rate 1); the sawtooth is SAWTOOTH.
#     At the default rate the leak and the sawtooth are 4 times larger (8 MiB/s,
#     a 24 MiB peak): at 2 MiB/s of 4 KiB objects the runtime records about
#     two objects a step, and a simulation of that sampling (1,000,000 runs of
#     growth.cc on it) called the leak STEADY GROWTH in only 97.9% of runs,
#     the sawtooth SAWTOOTH in 99.9%, and put the true slope outside 2 sigmas
#     in 2.8%. At 4 times, none of 1,000,000 runs missed either class and 17
#     put the slope outside 4 sigmas. The report's 2-sigma bar itself is
#     checked against simulated sampling in tests/unit/growth_test.cc.
# (2) The growth profile (-o) equals `go tool pprof -base first last` over the
#     target's own files, summed per stack (profdiff --aggregate-inuse), and
#     opens in `go tool pprof -top` with the leak first.
# (3) The directory of the runtime's own files gives the same ranking of the
#     sites that changed by 1 MiB or more, with the same changes.
# (4) --fail-above: exit 20 below the leak's rate, 0 above it.
# (5) Live: `growth <pid> --every 500ms --for 5500ms` on the free-running target
#     (a GC every 100 ms) takes 12 captures and keeps those of distinct GC
#     cycles (all 12, or at least 6 with the rest counted as skipped when the
#     target was starved of CPU), ranks the
#     leak first within 5% of its rate at rate 1, and reports RSS and the
#     runtime's /gc/heap/live:bytes growth; its --keep snapshots give the same
#     first site again from files; on an idle
#     target (no GC cycle ends) every capture after the first is skipped and
#     the report refuses to stand on one snapshot (exit 2, saying why).
# (6) watch --report on the free-running target: when the target ends, the
#     report over the watch's profiles is beside them, with the leak first.
#
#   bash tests/e2e/growth_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Uses Go 1.26.8 (`go`, also for go tool pprof) and jq; exit 0 all passed,
# 1 something failed, 77 when they are missing.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
e2e_require_command jq "needs jq (scripts/install-deps.sh installs it)"
e2e_require_go

e2e_make_work growth
export PPROF_TMPDIR=$work/pprof-tmp
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

target=$work/bin/growthtarget
e2e_go_build growthtarget "$target"
# scale <rate>: how many times larger the leak and the sawtooth are at
# <rate> (see above).
scale() { if (($1 == 1)); then echo 1; else echo 4; fi; }
true_rate=$((2 * 1024 * 1024 * 3600)) # the leak at scale 1, bytes per hour

# site <json> <function>: the site whose allocation frame is <function>.
site() {
  jq -c --arg f "$2" '[.sites[] | select(.stack[0] | startswith($f + " "))][0]' "$1"
}

# snapshots <dir> <rate>: runs the target in snapshot mode; its files go to
# <dir>/theirs, ours to <dir>/ours. Returns 1 when a step does not arrive.
snapshots() {
  local dir=$1 rate=$2 i n k
  k=$(scale "$rate")
  mkdir -p "$dir/theirs" "$dir/ours"
  e2e_start "$dir/target.out" "$dir/target.err" "$target" -rate "$rate" \
    -leak-rate $((k * 2 << 20)) -saw-peak $((k * 6 << 20)) \
    -snapshots "$dir/theirs" -count 12 -step 500ms
  for i in $(seq 1 12); do
    n=$(printf %02d "$i")
    if ! e2e_wait_for_line "$dir/target.out" "^SNAP $n\$" "$target_pid" 60; then
      fail "rate $rate: the target did not write snapshot $n" "$dir/target.err"
      return 1
    fi
    if ! "$tool" "$target_pid" -o "$dir/ours/heap-$n.pb.gz" 2>"$dir/capture.err"; then
      fail "rate $rate: capture $n" "$dir/capture.err"
      return 1
    fi
    touch "$dir/theirs/ack-$n"
  done
  e2e_stop_pids
}

# check_classes <json> <rate>: the leak first and within its bar, the other
# sites not growth.
check_classes() {
  local json=$1 rate=$2 leak first bar slope truth
  truth=$(($(scale "$rate") * true_rate))
  first=$(jq -r '.sites[0].stack[0]' "$json")
  leak=$(site "$json" main.leakAlloc)
  if [[ $first == "main.leakAlloc "* && $(jq -r .class <<<"$leak") == "STEADY GROWTH" ]]; then
    pass "rate $rate: the leak ranks first, STEADY GROWTH"
  else
    fail "rate $rate: first is $first; leak: $leak"
  fi
  slope=$(jq -r .slope_bytes_per_hour <<<"$leak")
  if ((rate == 1)); then
    bar=$(jq -n "$truth * 0.05")
  else
    bar=$(jq -r '4 * .slope_sigma_bytes_per_hour' <<<"$leak")
  fi
  if jq -e -n "($slope - $truth | fabs) <= $bar" >/dev/null; then
    pass "rate $rate: leak slope $slope within $bar of $truth"
  else
    fail "rate $rate: leak slope $slope not within $bar of $truth"
  fi
  local fn class
  for fn in main.churnAlloc main.cacheAlloc; do
    class=$(site "$json" "$fn" | jq -r .class)
    if [[ $class != "STEADY GROWTH" && $class != null ]]; then
      pass "rate $rate: $fn is $class, not growth"
    else
      fail "rate $rate: $fn is $class: $(site "$json" "$fn")"
    fi
  done
  if ((rate == 1)); then
    class=$(site "$json" main.cacheAlloc | jq -r .class)
    [[ $class == BOUNDED ]] && pass "rate 1: the cache is BOUNDED" ||
      fail "rate 1: the cache is $class"
  fi
  class=$(site "$json" main.sawAlloc | jq -r .class)
  [[ $class == SAWTOOTH ]] && pass "rate $rate: the sawtooth is SAWTOOTH" ||
    fail "rate $rate: the sawtooth is $class: $(site "$json" main.sawAlloc)"
}

# check_oracle <dir> <rate>: our growth profile against pprof -base.
check_oracle() {
  local dir=$1 rate=$2
  if ! go tool pprof -proto -base "$dir/theirs/heap-01.pb.gz" "$dir/theirs/heap-12.pb.gz" \
    >"$dir/base.pb.gz" 2>"$dir/pprof.err"; then
    fail "rate $rate: go tool pprof -base" "$dir/pprof.err"
    return
  fi
  "$profdiff" --aggregate-inuse "$dir/base.pb.gz" >"$dir/base.txt"
  "$profdiff" --aggregate-inuse "$dir/ours.pb.gz" >"$dir/ours-growth.txt"
  if [[ -s $dir/base.txt ]] && diff "$dir/base.txt" "$dir/ours-growth.txt" >"$dir/oracle.diff"; then
    pass "rate $rate: growth profile = go tool pprof -base first last ($(wc -l <"$dir/base.txt") stacks)"
  else
    fail "rate $rate: growth profile differs from go tool pprof -base" "$dir/oracle.diff"
  fi
  go tool pprof -top -sample_index=inuse_space_per_hour "$dir/ours.pb.gz" >"$dir/top.txt" 2>&1
  if grep -A1 ' flat ' "$dir/top.txt" | tail -n 1 | grep -q 'main.leakAlloc'; then
    pass "rate $rate: go tool pprof -top of the growth profile shows the leak first"
  else
    fail "rate $rate: go tool pprof -top of the growth profile" "$dir/top.txt"
  fi
}

# ranking <json>: the sites that changed by 1 MiB or more, in rank order, with
# their change.
ranking() {
  jq -c '[.sites[] | select((.change_bytes | fabs) >= 1048576) | [.stack, .change_bytes, .class]]' "$1"
}

for rate in 1 524288; do
  dir=$work/rate-$rate
  snapshots "$dir" "$rate" || continue
  if ! "$tool" growth "$dir/ours" --format json --top 0 -o "$dir/ours.pb.gz" \
    >"$dir/ours.json" 2>"$dir/growth.err"; then
    fail "rate $rate: growth over our snapshots" "$dir/growth.err"
    continue
  fi
  if [[ $(jq -r '.snapshots, .memprofile_rate' "$dir/ours.json" | paste -sd ' ') == "12 $rate" ]]; then
    pass "rate $rate: the header says 12 snapshots at MemProfileRate $rate"
  else
    fail "rate $rate: header $(jq -c '{snapshots, memprofile_rate}' "$dir/ours.json")"
  fi
  check_classes "$dir/ours.json" "$rate"
  check_oracle "$dir" "$rate"
  "$tool" growth "$dir/theirs" --format json --top 0 >"$dir/theirs.json" 2>"$dir/theirs.err"
  if [[ -n $(ranking "$dir/ours.json") && $(ranking "$dir/ours.json") == "$(ranking "$dir/theirs.json")" ]]; then
    pass "rate $rate: the runtime's own files rank the same: $(ranking "$dir/ours.json" | jq -c '[.[][0][0]]')"
  else
    fail "rate $rate: rankings differ: ours $(ranking "$dir/ours.json") theirs $(ranking "$dir/theirs.json")"
  fi
done

# (4) --fail-above, on the rate-1 snapshots.
if [[ -d $work/rate-1/ours ]]; then
  "$tool" growth "$work/rate-1/ours" --fail-above 1MiB/h >"$work/fail.txt" 2>&1
  status=$?
  "$tool" growth "$work/rate-1/ours" --fail-above 100GiB/h >"$work/nofail.txt" 2>&1
  status2=$?
  if ((status == 20 && status2 == 0)) && grep -q '^#1 STEADY GROWTH' "$work/fail.txt"; then
    pass "--fail-above: exit 20 below the leak's rate, 0 above it"
  else
    fail "--fail-above: exit $status (want 20) and $status2 (want 0)" "$work/fail.txt"
  fi
fi

# heap_live_grew <json>: the runtime's /gc/heap/live:bytes was read at the
# first and last snapshot and grew (the leak alone adds 11 MiB).
heap_live_grew() {
  jq -e '.totals.heap_live.change > 0' "$1" >/dev/null
}

# (5) Live.
dir=$work/live
mkdir -p "$dir"
e2e_start "$dir/target.out" "$dir/target.err" "$target" -rate 1 -step 100ms
if e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" 60; then
  "$tool" growth "$target_pid" --every 500ms --for 5500ms --warm-up 500ms --format json \
    --keep "$dir/kept" >"$dir/live.json" 2>"$dir/live.err"
  status=$?
  leak=$(site "$dir/live.json" main.leakAlloc)
  # 12 captures; one whose GC cycle had not ended since the last (a target
  # starved of CPU on a loaded machine) is skipped, and says so.
  n=$(jq -r '.snapshots' "$dir/live.json")
  if ((status == 0)) && [[ $n =~ ^[0-9]+$ ]] && ((n >= 6)) &&
    jq -e '.snapshots + .skipped_same_cycle == 12' "$dir/live.json" >/dev/null &&
    [[ $(jq -r '.sites[0].stack[0]' "$dir/live.json") == "main.leakAlloc "* ]] &&
    jq -e -n "($(jq .slope_bytes_per_hour <<<"$leak") - $true_rate | fabs) <= $true_rate * 0.05" >/dev/null &&
    jq -e '.gc_cycles.last > .gc_cycles.first and .totals.rss.last > 0 and .pid > 0' "$dir/live.json" >/dev/null &&
    heap_live_grew "$dir/live.json"; then
    pass "live: $n snapshots of distinct GC cycles ($((12 - n)) skipped as the same cycle), the leak first at $(jq .slope_bytes_per_hour <<<"$leak") B/h"
  else
    fail "live: exit $status, $(jq -c '{snapshots, gc_cycles, skipped_same_cycle}' "$dir/live.json" 2>&1); leak $leak" "$dir/live.err"
  fi
  # --keep: the kept snapshots give the same report again from files.
  "$tool" growth "$dir/kept" --format json >"$dir/kept.json" 2>"$dir/kept.err"
  if [[ $(ls "$dir/kept" | wc -l) == "$n" ]] &&
    jq -e --slurpfile live "$dir/live.json" '.sites[0] == $live[0].sites[0]' "$dir/kept.json" >/dev/null; then
    pass "live --keep: the $n snapshots kept give the same first site from files"
  else
    fail "live --keep: $(ls "$dir/kept" 2>&1 | wc -l) files; first site $(jq -c '.sites[0] | del(.stack)' "$dir/kept.json")" "$dir/kept.err"
  fi
else
  fail "live: the target did not start" "$dir/target.err"
fi
e2e_stop_pids

# An idle target: GC is off and the target sleeps, so no cycle ends.
e2e_start "$dir/idle.out" "$dir/idle.err" "$target" -snapshots "$dir" -count 0
if e2e_wait_for_line "$dir/idle.out" '^DONE' "$target_pid" 60; then
  "$tool" growth "$target_pid" --every 200ms --for 800ms >"$dir/idle.txt" 2>"$dir/idle.log"
  status=$?
  if ((status == 2)) && grep -q 'GC cycle' "$dir/idle.log"; then
    pass "live: captures of one GC cycle are skipped, and one snapshot is refused (exit 2)"
  else
    fail "live idle: exit $status (want 2)" "$dir/idle.log"
  fi
else
  fail "live idle: the target did not start" "$dir/idle.err"
fi
e2e_stop_pids

# (6) watch --report: the watch captures the free-running target every
# 500 ms; when the target ends (killed here; an OOM kill ends it the same
# way) the report over those profiles is written beside them.
dir=$work/watch
mkdir -p "$dir"
e2e_start "$dir/target.out" "$dir/target.err" "$target" -rate 1 -step 100ms
gpid=$target_pid
if e2e_wait_for_line "$dir/target.out" '^READY ' "$gpid" 60; then
  e2e_start "$dir/watch.out" "$dir/watch.err" "$tool" watch "$gpid" -o "$dir" --every 500ms \
    --max-files 50 --report
  wpid=$target_pid
  for _ in $(seq 1 300); do
    written=$(grep -c '"file":"growthtarget-' "$dir/watch.jsonl" 2>/dev/null)
    ((${written:-0} >= 8)) && break
    sleep 0.1
  done
  kill -9 "$gpid"
  wait "$gpid" 2>/dev/null
  e2e_wait_for_line "$dir/watch.jsonl" '"event":"watch-end"' "$wpid" 30
  report=$dir/growthtarget-$gpid-growth.json
  if [[ -f $report && -f ${report%.json}.txt && -f ${report%.json}.pb.gz ]] &&
    jq -e '.snapshots >= 8 and .sites[0].class == "STEADY GROWTH" and
      (.sites[0].stack[0] | startswith("main.leakAlloc "))' "$report" >/dev/null &&
    grep -q '"event":"growth-report"' "$dir/watch.jsonl"; then
    pass "watch --report: the report beside $(jq .snapshots "$report") profiles ranks the leak first"
  else
    fail "watch --report: no report, or not the leak first" "$dir/watch.err"
  fi
else
  fail "watch --report: the target did not start" "$dir/target.err"
fi
e2e_stop_pids

e2e_finish
