#!/usr/bin/env bash
# The goroutine leak report, `goheap2pprof growth --goroutines`, on real
# targets (testdata/goroutineleak):
#
# - growth (Go 1.26.8): one site leaks 100 goroutines a second, each parked
#   forever on a channel; a pool of 1,000 waits on a shared channel; a third
#   site churns (goroutines that sleep 10 ms and exit). Over 8 snapshots the
#   leaking site must rank first, as STEADY GROWTH at about 100 a second,
#   and neither the pool nor the churn may be called growing; the pool's
#   oldest wait (g.waitsince, stamped by the GC the target runs every 500 ms)
#   must be there. A second, text run: the table's first row is the leak,
#   --fail-above 100000/h (goroutines an hour) exits 20, and --keep writes
#   each snapshot's debug=2 dump.
# - marked (Go 1.27.3): 5 goroutines parked on channels nothing else holds,
#   and the target's own goroutineleak profile written (at debug=1 and 2),
#   which runs the GC that marks them _Gleaked: the report must list as
#   leaked exactly the goroutines the target's debug=2 file calls leaked, as
#   many as its debug=1 profile counts, and none of the pool.
# - Go 1.26.8 without GOEXPERIMENT=goroutineleakprofile has no goroutineleak
#   profile (the target finds pprof.Lookup("goroutineleak") nil) and the
#   report lists none leaked. With GOROUTINE_LEAK_EXPERIMENT=1 the marked
#   case also runs on Go 1.26.8 built with that experiment (a cold build of
#   the runtime with it takes about 40 s, so it is not run by default).
#
#   bash tests/e2e/goroutine_leak_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool"
e2e_make_work goroutine_leak
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

# build_target <version> <output> [VAR=value...]: testdata/goroutineleak
# built with that toolchain, without cgo, with those variables set.
build_target() {
  local version=$1 out=$2 gocmd
  shift 2
  read -r -a gocmd <<<"$(go_cmd "$version")"
  (cd "$src/testdata/goroutineleak" && env CGO_ENABLED=0 "$@" "${gocmd[@]}" build -o "$out" .)
}

# launch <label> <version> <dir> <mode> [VAR=value...]: builds the target
# into <dir> (build_target), runs it in that mode and waits for its ready
# file; sets pid, or reports a failure and returns 1.
launch() {
  local label=$1 version=$2 dir=$3 mode=$4
  shift 4
  mkdir -p "$dir/out"
  if ! build_target "$version" "$dir/target" "$@" >"$dir/build.log" 2>&1; then
    fail "$label: go build of testdata/goroutineleak" "$dir/build.log"
    return 1
  fi
  e2e_start "$dir/target.out" "$dir/target.err" "$dir/target" "$dir/out" "$mode"
  pid=$target_pid
  if ! e2e_wait_until 60 test -e "$dir/out/ready"; then
    fail "$label: the target did not start" "$dir/target.err"
    return 1
  fi
}

check_growth() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
groups = r['groups']
def find(prefix, reason):
    for g in groups:
        if g['created_by'].startswith(prefix) and g['wait_reason'] == reason:
            return g
    sys.exit(f"no group created by {prefix}... waiting on {reason}: {json.dumps(groups)[:2000]}")
leak = find('main.leak at ', 'chan receive')
pool = find('main.main at ', 'chan receive')
churn = find('main.churn at ', 'sleep')
if groups[0] is not leak:
    sys.exit(f"the first group is {groups[0]['created_by']} ({groups[0]['wait_reason']}), not the leak")
if leak['class'] != 'STEADY GROWTH':
    sys.exit(f"the leak is {leak['class']}: {leak}")
if not 0.5 * 360000 < leak['slope_per_hour'] < 1.5 * 360000:
    sys.exit(f"the leak grows {leak['slope_per_hour']:.0f}/h, not about 360000/h (100/s)")
for name, g in (('pool', pool), ('churn', churn)):
    if g['class'] == 'STEADY GROWTH':
        sys.exit(f"the {name} is called growing: {g}")
    if g['rank'] <= leak['rank']:
        sys.exit(f"the {name} ranks before the leak")
if pool['parked'] != [1000] * r['snapshots']:
    sys.exit(f"the pool's counts are {pool['parked']}")
if not pool['oldest_wait_seconds'] or pool['oldest_wait_seconds'] < 0.5:
    sys.exit(f"the pool's oldest wait is {pool['oldest_wait_seconds']}")
print(f"{r['snapshots']} snapshots: the leak first, STEADY GROWTH at {leak['slope_per_hour']/3600:.0f}/s "
      f"({leak['first']} -> {leak['last']}); pool {pool['class']} (oldest waited "
      f"{pool['oldest_wait_seconds']:.1f} s), churn {churn['class']} (rank {churn['rank']})")
PY
}

growth_case() {
  local version=go1.26.8 dir=$work/growth pid
  launch "$version growth" "$version" "$dir" growth || return
  if ! "$tool" growth --goroutines "$pid" --every 500ms --for 3500ms --format json \
    >"$dir/report.json" 2>"$dir/report.err"; then
    fail "$version growth: goheap2pprof growth --goroutines failed" "$dir/report.err"
  elif check_growth "$dir/report.json" >"$dir/check.out" 2>&1; then
    pass "$version growth: $(cat "$dir/check.out")"
  else
    fail "$version growth: the report is wrong ($dir)" "$dir/check.out"
  fi
  # The text table, --fail-above in goroutines an hour (the leak is 360,000)
  # and --keep's debug=2 dumps, one per snapshot.
  "$tool" growth --goroutines "$pid" --every 500ms --for 2s --fail-above 100000/h \
    --keep "$dir/keep" >"$dir/report.txt" 2>"$dir/report_text.err"
  local status=$? kept
  kept=$(grep -l '^goroutine 1 \[' "$dir"/keep/goroutine-{1,2,3,4,5}.txt 2>/dev/null | wc -l)
  if ((status != 20)); then
    fail "$version growth text: exit $status, not 20 (--fail-above 100000/h)" "$dir/report_text.err"
  elif ! grep -qE '^#1 +STEADY GROWTH .* chan receive, main\.leak at ' "$dir/report.txt"; then
    fail "$version growth text: the first row is not the leak" "$dir/report.txt"
  elif ((kept != 5)); then
    fail "$version growth text: --keep wrote $kept of 5 dumps" "$dir/report_text.err"
  else
    pass "$version growth text: the first row is the leak, STEADY GROWTH; --fail-above exit 20; --keep wrote 5 dumps"
  fi
  e2e_stop_pids
}

check_marked() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
total = int(re.match(r'goroutineleak profile: total (\d+)', open(sys.argv[2]).read()).group(1))
theirs = sorted(int(m) for m in re.findall(r'^goroutine (\d+) \[[^\]]*\(leaked\)', open(sys.argv[3]).read(), re.M))
ours = sorted(l['id'] for l in r['leaked'])
if total != 5 or ours != theirs or len(ours) != total:
    sys.exit(f"leaked: ours {ours}, the target's debug=2 {theirs}, its debug=1 total {total}")
for l in r['leaked']:
    if not l['parked_at'].startswith('main.parkOnOwnChannel ') or l['wait_reason'] != 'chan receive':
        sys.exit(f"a leaked goroutine is {l}")
pool = [g for g in r['groups'] if g['last'] == 1000]
if len(pool) != 1 or pool[0]['leaked'] != 0:
    sys.exit(f"the pool is {pool}")
print(f"the {total} goroutines its goroutineleak profile marked (ids {ours[0]}..{ours[-1]}), none of the pool")
PY
}

# marked_case <label> <version> [VAR=value...]: the target's own leak
# profile against our list of leaked goroutines.
marked_case() {
  local label=$1 version=$2 dir=$work/marked-$1 pid
  shift 2
  launch "$label marked" "$version" "$dir" marked "$@" || return
  if [[ -e $dir/out/noleakprofile ]]; then
    fail "$label marked: the runtime has no goroutineleak profile"
  elif ! "$tool" growth --goroutines "$pid" --every 200ms --for 400ms --format json \
    >"$dir/report.json" 2>"$dir/report.err"; then
    fail "$label marked: goheap2pprof growth --goroutines failed" "$dir/report.err"
  elif check_marked "$dir/report.json" "$dir/out/leak.txt" "$dir/out/leak2.txt" \
    >"$dir/check.out" 2>&1; then
    pass "$label marked: listed as leaked $(cat "$dir/check.out")"
  else
    fail "$label marked: the leaked goroutines differ ($dir)" "$dir/check.out"
  fi
  e2e_stop_pids
}

# Go 1.26 without the experiment: no leak profile, so nothing is marked.
unmarked_case() {
  local version=go1.26.8 dir=$work/unmarked pid
  launch "$version unmarked" "$version" "$dir" marked || return
  if [[ ! -e $dir/out/noleakprofile ]]; then
    fail "$version unmarked: Go 1.26 has a goroutineleak profile without GOEXPERIMENT"
  elif ! "$tool" growth --goroutines "$pid" --every 200ms --for 400ms --format json \
    >"$dir/report.json" 2>"$dir/report.err"; then
    fail "$version unmarked: goheap2pprof growth --goroutines failed" "$dir/report.err"
  elif python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(r["leaked"] != [] or not r["runtime_marks_leaks"])' \
    "$dir/report.json"; then
    pass "$version unmarked: no goroutineleak profile without GOEXPERIMENT=goroutineleakprofile; none listed leaked"
  else
    fail "$version unmarked: the report lists leaked goroutines" "$dir/report.json"
  fi
  e2e_stop_pids
}

for version in go1.26.8 go1.27.3; do
  if ! why=$(toolchain_ok "$version"); then
    skip "$version: $why"
    continue
  fi
  case $version in
    go1.26.8)
      growth_case
      unmarked_case
      if [[ ${GOROUTINE_LEAK_EXPERIMENT:-0} == 1 ]]; then
        marked_case "$version+goroutineleakprofile" "$version" GOEXPERIMENT=goroutineleakprofile
      else
        skip "$version+goroutineleakprofile marked: set GOROUTINE_LEAK_EXPERIMENT=1 (a cold build of the runtime with the experiment takes about 40 s)"
      fi
      ;;
    go1.27.3) marked_case "$version" "$version" ;;
  esac
done
e2e_finish
