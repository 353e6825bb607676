#!/usr/bin/env bash
# The goroutine oracle: testdata/goroutines, as the go_programs fixture
# (tests/go_programs.sh) built it with every Go toolchain of
# tests/go_toolchains.txt, parks goroutines in known ways (channels, select,
# mutex, WaitGroup, sleep, sync.Cond, network accept, an inlined frame, pprof
# labels, 10,000 from one site), writes its own goroutine profile
# (runtime/pprof at debug=0 and debug=1) and holds still; `goheap2pprof
# goroutines` must then mean the same: every sample (stack, count, labels,
# locations, functions, mappings) equal, and the debug=1 text byte for byte,
# except the goroutine that wrote the profile, which the target's files show
# inside runtime/pprof and ours shows parked where it went next (select{} in
# main.main). Nothing else may differ, and nothing may have been dropped.
# The debug=2 dump (runtime.Stack of every goroutine) must list the same
# goroutines in the same order with the same headers (wait reasons; minutes
# within one), frames, file:line +0xoff and created-by lines, argument lists
# masked (we print "(...)"; the runtime prints stack slots), but for the
# writer, which the target's dump shows [running] inside runtime/pprof.
#
#   bash tests/e2e/goroutines_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# The same target built as a stripped PIE (no .symtab, no DWARF: the
# runtime's variables recovered from its code) must give the same debug=1
# and debug=2 on every toolchain; so must a stripped, externally linked cgo
# PIE on GOROUTINES_CGO_VERSIONS (by default lib.sh's goroutines_cgo_versions,
# go1.19.8 go1.26.8: the toolchains the fixture makes that build with).
#
# A busy variant of the target (its goroutines come and go, up to 50,000 a
# second) is captured five times on two toolchains: every capture must
# complete, keep every stable goroutine with its count, and return no stack
# the target does not make; the retries and drops are reported.
#
# No torn stack: the target's record mode churns goroutines that record
# their own stacks before they park (GOROUTINES_TORN_VERSIONS, the busy
# case's two toolchains); every goroutine five debug=2 captures show asleep
# must have exactly one of the stacks it recorded.
#
# On two toolchains (GOROUTINES_CORE_VERSIONS) the target is also dumped
# with gcore right after a live capture: `goroutines --core` must give the
# same debug=1 and debug=2, byte for byte; so must the kernel's core of a
# second target, run with GOTRACEBACK=crash and killed with SIGABRT.
#
# On go1.26.8 with GODEBUG=tracebacklabels=1 and on go1.27.3 (a go 1.27
# module: labels by default) the debug=2 headers show the goroutines' pprof
# labels, and ours must show the same (GOROUTINES_LABELS_VERSIONS).
#
# GOROUTINES_VERSIONS="go1.26.8 ..." picks toolchains (GOROUTINES_BUSY_VERSIONS
# those of the busy case, GOROUTINES_TORN_VERSIONS of the torn one); GOROUTINES_COUNT sets the goroutines of the one
# site (10000). A toolchain that the go_programs
# fixture could not use fails, or skips when it was allowed to be missing.
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/goroutine_checks.sh"

e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
e2e_make_work goroutines
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM
count=${GOROUTINES_COUNT:-10000}

# check_reports <ours2.txt> <ours.json> <ours.top>: the JSON lists the
# dump's goroutines in its order with its states, and both the JSON's sites
# and the text table rank first the one site of $count goroutines.
check_reports() {
  python3 - "$1" "$2" "$3" "$count" <<'PY'
import json, re, sys
dump = re.findall(r'^goroutine (\d+) \[([^,\]]*)', open(sys.argv[1]).read(), re.M)
j = json.load(open(sys.argv[2]))
listed = [(str(g['id']), g['state']) for g in j['list']]
if listed != dump or j['goroutines'] != len(dump):
    sys.exit("the JSON's goroutines are not the dump's")
n = int(sys.argv[4])
top = j['sites'][0]
if top['count'] != n or top['state'] != 'chan receive' or not top['created_by'].startswith('main.main at '):
    sys.exit(f"the JSON's first site is {top}")
row = open(sys.argv[3]).read().splitlines()[2].split()
if row[0] != str(n) or 'main.main' not in row:
    sys.exit(f"the table's first row is {row}")
print(f"{len(dump)} goroutines as in the dump; first site {n} x chan receive from {top['created_by'].split()[0]}")
PY
}

# core_case <version> <dir> <pid>: gcore the target (it stops it for a
# moment) right after a live debug=1 and debug=2 capture; the core's must
# be the same, byte for byte.
core_case() {
  local version=$1 dir=$2 pid=$3 f
  if ! command -v gcore >/dev/null; then
    skip "$version core: no gcore (gdb) on this machine"
    return
  fi
  for f in 1 2; do
    "$tool" goroutines "$pid" --format "debug$f" -o "$dir/live$f.txt" 2>>"$dir/live.err" ||
      { fail "$version core: the live capture failed" "$dir/live.err"; return; }
  done
  if ! timeout 120 gcore -o "$dir/core" "$pid" >"$dir/gcore.log" 2>&1; then
    fail "$version core: gcore failed" "$dir/gcore.log"
    return
  fi
  for f in 1 2; do
    if ! "$tool" goroutines --core "$dir/core.$pid" --format "debug$f" -o "$dir/core$f.txt" \
      2>"$dir/core$f.err"; then
      fail "$version core debug=$f: goheap2pprof goroutines --core failed" "$dir/core$f.err"
    elif cmp -s "$dir/live$f.txt" "$dir/core$f.txt"; then
      pass "$version core debug=$f: the gcore core's is the live capture's, byte for byte"
    else
      diff "$dir/live$f.txt" "$dir/core$f.txt" | head -40 >"$dir/core$f.diff"
      fail "$version core debug=$f: the core's differs from the live capture's" "$dir/core$f.diff"
    fi
  done
  rm -f "$dir/core.$pid"
}

# abort_case <version> <dir>: a second target runs with GOTRACEBACK=crash
# and no core size limit; after a live debug=1 and debug=2 capture it gets
# SIGABRT, and the kernel's core (core_pattern permitting) must give the
# same, byte for byte.
abort_case() {
  local version=$1 dir=$2/abort pid f i prog
  goroutines_program "$version" exe "$version abort core" || return
  mkdir -p "$dir/out"
  e2e_start "$dir/target.out" "$dir/target.err" bash -c \
    'ulimit -c unlimited && cd "$1" && exec env GOTRACEBACK=crash "$3" out "$2"' _ "$dir" "$count" "$prog"
  pid=$target_pid
  if ! e2e_wait_until 120 test -e "$dir/out/ready"; then
    fail "$version abort core: the target did not start" "$dir/target.err"
    return
  fi
  for f in 1 2; do
    "$tool" goroutines "$pid" --format "debug$f" -o "$dir/live$f.txt" 2>>"$dir/live.err" ||
      { fail "$version abort core: the live capture failed" "$dir/live.err"; return; }
  done
  kill -ABRT "$pid"
  e2e_wait_until 60 bash -c "! kill -0 $pid 2>/dev/null"
  f=$(ls "$dir"/core* 2>/dev/null | head -n 1)
  if [[ -z $f ]]; then
    skip "$version abort core: the kernel wrote no core ($(cat /proc/sys/kernel/core_pattern))"
    return
  fi
  for i in 1 2; do
    if ! "$tool" goroutines --core "$f" --format "debug$i" -o "$dir/core$i.txt" 2>"$dir/core$i.err"; then
      fail "$version abort core debug=$i: goroutines --core failed" "$dir/core$i.err"
    elif cmp -s "$dir/live$i.txt" "$dir/core$i.txt"; then
      pass "$version abort core debug=$i: the GOTRACEBACK=crash core's is the live capture's, byte for byte"
    else
      diff "$dir/live$i.txt" "$dir/core$i.txt" | head -40 >"$dir/core$i.diff"
      fail "$version abort core debug=$i: the core's differs from the live capture's" "$dir/core$i.diff"
    fi
  done
  rm -f "$f"
}

# minutes <version>: the target runs the GC twice, waits 65 s and dumps
# again: its headers say "1 minutes", and ours, read right after, must say
# the same within one (check_dump), with at least one goroutine at 1.
minutes() {
  local version=$1 dir=$work/$1-minutes prog
  goroutines_program "$version" exe "$version minutes" || return
  mkdir -p "$dir/out"
  e2e_start "$dir/target.out" "$dir/target.err" "$prog" "$dir/out" 100 minutes
  local pid=$target_pid
  if ! e2e_wait_until 150 test -e "$dir/out/ready2"; then
    fail "$version minutes: the target did not write its second dump" "$dir/target.err"
  elif ! grep -q ', 1 minutes\]' "$dir/out/goroutine2m.txt"; then
    fail "$version minutes: the target's dump has no minutes to compare" "$dir/out/goroutine2m.txt"
  elif ! "$tool" goroutines "$pid" --format debug2 -o "$dir/ours2.txt" 2>"$dir/tool.err"; then
    fail "$version minutes: goheap2pprof goroutines failed" "$dir/tool.err"
  elif check_dump "$dir/out/goroutine2m.txt" "$dir/ours2.txt" >"$dir/check.out" 2>&1 &&
    grep -q ', 1 minutes\]' "$dir/ours2.txt"; then
    pass "$version minutes: $(grep -c ', 1 minutes\]' "$dir/ours2.txt") headers say 1 minutes, as the target's within one"
  else
    fail "$version minutes: the minutes differ ($dir)" "$dir/check.out"
  fi
  e2e_stop_pids
}

# labels <version>: the pprof labels of the dump's headers (Go 1.26+), shown
# when the target's GODEBUG says tracebacklabels=1: on 1.26 set in its
# environment, from 1.27 the default of a go 1.27 module (the fixture's
# exe-mod127 build; the plain build's go 1.18 module keeps the old default,
# 0, which run_version's debug=2 checks). Ours must read the setting from
# the target and show the same labels in the same headers (check_dump),
# and both dumps must show some.
label_re='^goroutine [0-9]* \[.*\(labels:{\|\] {\)'
label_headers() { grep -c "$label_re" "$1" || true; }
labels() {
  local version=$1 dir=$work/$1-labels build=exe godebug=GODEBUG=tracebacklabels=1 prog ours theirs
  if (($(toolchain_minor "$version") >= 27)); then
    build=exe-mod127 godebug=GODEBUG=
  fi
  local label="$version labels ($build, $godebug)"
  [[ $godebug == GODEBUG= ]] && label="$version labels ($build: the go 1.27 module's default)"
  goroutines_program "$version" "$build" "$label" || return
  mkdir -p "$dir/out"
  e2e_start "$dir/target.out" "$dir/target.err" env "$godebug" "$prog" "$dir/out" 100
  if ! e2e_wait_until 120 test -e "$dir/out/ready"; then
    fail "$label: the target did not write its profiles" "$dir/target.err"
  elif ! "$tool" goroutines "$target_pid" --format debug2 -v -o "$dir/ours2.txt" 2>"$dir/tool.err"; then
    fail "$label: goheap2pprof goroutines failed" "$dir/tool.err"
  elif ! grep -q 'tracebacklabels=1, read from the target' "$dir/tool.err"; then
    fail "$label: the target's GODEBUG tracebacklabels=1 was not read" "$dir/tool.err"
  elif ! check_dump "$dir/out/goroutine2.txt" "$dir/ours2.txt" >"$dir/check.out" 2>&1; then
    fail "$label: the dumps differ ($dir)" "$dir/check.out"
  else
    ours=$(label_headers "$dir/ours2.txt") theirs=$(label_headers "$dir/out/goroutine2.txt")
    if ((ours >= 3 && ours == theirs)); then
      pass "$label: $ours headers with the target's labels, e.g. $(grep -m 1 -o "$label_re.*" "$dir/ours2.txt")"
    else
      fail "$label: $ours headers with labels in ours, $theirs in theirs, not the same 3 or more ($dir)"
    fi
  fi
  e2e_stop_pids
}

# check_torn <records.json> <ours2.txt>...: every goroutine of the record
# mode that our dumps show asleep must have exactly one of the stacks it
# recorded itself (its main.* frames, function and file:line, innermost
# first); and enough of them must have been shown for the check to mean
# something.
check_torn() {
  PYTHONPATH="$src/tests/e2e" python3 - "$@" <<'PY'
import json, os, sys
from goroutine_dump import blocks
rec = json.load(open(sys.argv[1]))
stacks = [tuple(s) for s in rec['stacks']]
def main_frames(body):
    out = []
    for i, l in enumerate(body[:-1]):
        if l.startswith('main.') and body[i + 1].startswith('\t'):
            where = body[i + 1].strip().split(' ')[0]
            out.append(l[:-len('(...)')] + ' ' + os.path.basename(where))
    return tuple(out)
checked = 0
for path in sys.argv[2:]:
    for goid, (state, _, body) in blocks(path).items():
        if state != 'sleep' or not any(l.startswith('main.recorded(') for l in body):
            continue
        ours = main_frames(body)
        theirs = [stacks[n] for n in rec['goroutines'].get(goid, []) if n >= 0]
        if ours not in theirs:
            sys.exit(f"{path}: goroutine {goid} is shown with a stack it never had:\n" +
                     '\n'.join(ours) + "\nit recorded:\n" +
                     '\n--\n'.join('\n'.join(t) for t in theirs))
        checked += 1
if checked < 50:
    sys.exit(f"only {checked} recording goroutines were shown asleep")
print(f"{checked} sleeping goroutines each with a stack it recorded")
PY
}

# torn <version>: the record mode of the target (goroutines created and
# ending fast, up to 50,000 a second, each parking twice under a random
# depth and recording its own stack before each park); five debug=2
# captures taken meanwhile may show each goroutine only with a stack it
# recorded. A reader that accepted a goroutine that moved between its reads
# (resumed, re-parked, exited, its g reused) would show a torn mix.
torn() {
  local version=$1 dir=$work/$1-torn i r d retried=0 dropped=0 pid prog
  mkdir -p "$dir/out"
  goroutines_program "$version" exe "$version torn" || return
  e2e_start "$dir/target.out" "$dir/target.err" "$prog" "$dir/out" 100 record
  pid=$target_pid
  if ! e2e_wait_until 120 test -e "$dir/out/ready"; then
    fail "$version torn: the target did not start" "$dir/target.err"
    e2e_stop_pids
    return
  fi
  for i in 1 2 3 4 5; do
    if ! "$tool" goroutines "$pid" --format debug2 -o "$dir/ours$i.txt" -v 2>"$dir/tool$i.err"; then
      fail "$version torn: capture $i failed" "$dir/tool$i.err"
      e2e_stop_pids
      return
    fi
    read -r r d <<<"$(sed -n 's/.*retried \([0-9]*\), dropped \([0-9]*\),.*/\1 \2/p' "$dir/tool$i.err")"
    retried=$((retried + ${r:-0})) dropped=$((dropped + ${d:-0}))
  done
  kill -USR1 "$pid"
  if ! e2e_wait_until 60 test -e "$dir/out/recorded"; then
    fail "$version torn: the target did not write its records" "$dir/target.err"
  elif check_torn "$dir/out/records.json" "$dir"/ours[1-5].txt >"$dir/check.out" 2>&1; then
    pass "$version torn: 5 captures, $(cat "$dir/check.out"); retried $retried, dropped $dropped"
  else
    fail "$version torn: a torn stack ($dir)" "$dir/check.out"
  fi
  e2e_stop_pids
}

# stripped_case <version> <cgo 0|1>: the same target built as a stripped PIE
# (-buildmode=pie -ldflags='-s -w': no .symtab, no DWARF; with cgo, linked
# externally, so .text starts 0x100 below runtime.text), whose allgs,
# finalizer state and wait reasons are recovered from the runtime's code:
# its debug=1 and debug=2 must be the target's, as for the plain build.
stripped_case() {
  local version=$1 cgo=$2 dir=$work/$1-stripped$2 label="$1 stripped PIE" build=pie-stripped prog
  ((cgo)) && label+=" cgo" build=pie-cgo-stripped
  goroutines_program "$version" "$build" "$label" || return
  mkdir -p "$dir/out"
  e2e_start "$dir/target.out" "$dir/target.err" "$prog" "$dir/out" "$count"
  if e2e_wait_until 120 test -e "$dir/out/ready"; then
    check_texts "$label" "$dir" "$target_pid"
  else
    fail "$label: the target did not write its profiles" "$dir/target.err"
  fi
  e2e_stop_pids
}

run_version() {
  local version=$1 dir=$work/$1 prog
  usable_toolchain "$version" || return
  goroutines_program "$version" exe "$version" || return
  mkdir -p "$dir/out"
  e2e_start "$dir/target.out" "$dir/target.err" "$prog" "$dir/out" "$count"
  local pid=$target_pid
  if ! e2e_wait_until 120 test -e "$dir/out/ready"; then
    fail "$version: the target did not write its profiles" "$dir/target.err"
    e2e_stop_pids
    return
  fi
  check_goroutine_profile "$version" "$dir" "$pid"
  check_texts "$version" "$dir" "$pid"
  if ! "$tool" goroutines "$pid" --format json -o "$dir/ours.json" 2>"$dir/toolj.err" ||
    ! "$tool" goroutines "$pid" --format text -o "$dir/ours.top" 2>>"$dir/toolj.err"; then
    fail "$version text/json: goheap2pprof goroutines failed" "$dir/toolj.err"
  elif check_reports "$dir/ours2.txt" "$dir/ours.json" "$dir/ours.top" >"$dir/checkj.out" 2>&1; then
    pass "$version text/json: $(cat "$dir/checkj.out")"
  else
    fail "$version text/json: they disagree with the dump" "$dir/checkj.out"
  fi
  local core=0
  [[ " ${GOROUTINES_CORE_VERSIONS:-go1.18.10 go1.26.8} " == *" $version "* ]] && core=1
  ((core)) && core_case "$version" "$dir" "$pid"
  e2e_stop_pids
  ((core)) && abort_case "$version" "$dir"
  e2e_stop_pids
  stripped_case "$version" 0
  [[ " ${GOROUTINES_CGO_VERSIONS:-$goroutines_cgo_versions} " == *" $version "* ]] && stripped_case "$version" 1
}

# The busy, torn and minutes cases first: a log cut to its first lines (as CI's
# summary is) then still shows the cases that depend on timing.
# The busy target on the oldest and the newest runtime layouts' toolchains.
for version in ${GOROUTINES_BUSY_VERSIONS:-go1.18.10 go1.26.8}; do
  [[ $(go_programs_status "$version") == ok ]] && busy "$version"
done
# The torn-stack check on the same two toolchains.
for version in ${GOROUTINES_TORN_VERSIONS:-go1.18.10 go1.26.8}; do
  [[ $(go_programs_status "$version") == ok ]] && torn "$version"
done
# The minutes of the dump's headers (a 65 s wait) on one toolchain.
for version in ${GOROUTINES_MINUTES_VERSIONS:-go1.26.8}; do
  [[ $(go_programs_status "$version") == ok ]] && minutes "$version"
done
# The labels of the dump's headers where Go prints them (1.26+).
for version in ${GOROUTINES_LABELS_VERSIONS:-go1.26.8 go1.27.3}; do
  [[ $(go_programs_status "$version") == ok ]] && labels "$version"
done
for version in ${GOROUTINES_VERSIONS:-$(toolchain_versions)}; do
  run_version "$version"
done
e2e_finish
