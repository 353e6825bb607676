#!/usr/bin/env bash
# The goroutine oracle: testdata/goroutines, built with every Go toolchain of
# tests/go_toolchains.txt, parks goroutines in known ways (channels, select,
# mutex, WaitGroup, sleep, sync.Cond, network accept, an inlined frame, pprof
# labels, 10,000 from one site), writes its own goroutine profile
# (runtime/pprof at debug=0) and holds still; `goheap2pprof goroutines` must
# then mean the same: every sample (stack, count, labels, locations,
# functions, mappings) equal, except the goroutine that wrote the profile,
# which the target's file shows inside runtime/pprof and ours shows parked
# where it went next (select{} in main.main). Nothing else may differ, and
# nothing may have been dropped.
#
#   bash tests/e2e/goroutines_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# GOROUTINES_VERSIONS="go1.26.8 ..." picks toolchains; GOROUTINES_COUNT sets
# the goroutines of the one site (10000). A toolchain that the go_programs
# fixture could not use fails, or skips when it was allowed to be missing.
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
e2e_make_work goroutines
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM
count=${GOROUTINES_COUNT:-10000}

# check_diff <profdiff.out>: the only differences are the writer goroutine
# (only in the target's file, inside runtime/pprof.writeGoroutine) and main
# parked in select{} (only in ours), one goroutine each.
check_diff() {
  python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
if re.search(r'^(header differs|main mapping differs)', text, re.M):
    sys.exit("header or main mapping differs")
blocks = re.split(r'^(?=only in (?:expected|actual):)', text, flags=re.M)[1:]
expected = [b for b in blocks if b.startswith('only in expected')]
actual = [b for b in blocks if b.startswith('only in actual')]
ok = (len(expected) == 1 and 'values [1]' in expected[0] and
      'runtime/pprof.writeGoroutine' in expected[0] and
      len(actual) == 1 and 'values [1]' in actual[0] and
      'runtime.block' in actual[0] and 'main.main' in actual[0])
sys.exit(0 if ok else "differences other than the writer goroutine")
PY
}

run_version() {
  local version=$1 dir=$work/$1 s why gocmd
  read -r s why <<<"$(go_programs_status "$version")"
  if [[ $s != ok ]]; then
    [[ $s == skip ]] && skip "$version ($why)" || fail "$version ($why)"
    return
  fi
  if ! why=$(toolchain_ok "$version"); then
    fail "$version: $why"
    return
  fi
  read -r -a gocmd <<<"$(go_cmd "$version")"
  mkdir -p "$dir/out"
  if ! (cd "$src/testdata/goroutines" && CGO_ENABLED=0 "${gocmd[@]}" build -o "$dir/goroutines" .) \
    >"$dir/build.log" 2>&1; then
    fail "$version: go build of testdata/goroutines" "$dir/build.log"
    return
  fi
  e2e_start "$dir/target.out" "$dir/target.err" "$dir/goroutines" "$dir/out" "$count"
  local pid=$target_pid
  if ! e2e_wait_until 120 test -e "$dir/out/ready"; then
    fail "$version: the target did not write its profiles" "$dir/target.err"
    e2e_stop_pids
    return
  fi
  if ! "$tool" goroutines "$pid" -o "$dir/ours.pb.gz" -v >"$dir/tool.out" 2>"$dir/tool.err"; then
    fail "$version: goheap2pprof goroutines failed" "$dir/tool.err"
  elif ! grep -q 'retried [0-9]*, dropped 0,' "$dir/tool.err"; then
    fail "$version: goroutines were dropped from a target that holds still" "$dir/tool.err"
  else
    "$profdiff" --ignore-comments "$dir/out/goroutine.pb.gz" "$dir/ours.pb.gz" >"$dir/profdiff.out" 2>&1
    if check_diff "$dir/profdiff.out" >"$dir/check.out" 2>&1; then
      pass "$version: $(sed -n 's/^samples: //p' "$dir/profdiff.out"); only the writer differs"
    else
      cat "$dir/check.out" >>"$dir/profdiff.out"
      fail "$version: the profiles differ ($dir)" "$dir/profdiff.out"
    fi
  fi
  e2e_stop_pids
}

for version in ${GOROUTINES_VERSIONS:-$(toolchain_versions)}; do
  run_version "$version"
done
e2e_finish
