#!/usr/bin/env bash
# `bash scripts/test.sh --quick`, the contributor's check before a commit, as docs/contributing.md
# describes it: the format check, its own build (Debug -O0 -g0, a unity build), the unit tests
# and the oracle suite on go1.26.8. Checked: it exits 0; it ran each of those steps, in order,
# and said how long each took; every unit test the binary lists ran in one of its two shards and
# passed (none skipped: the DWARF tests need the one file the build keeps -g for); the oracle
# suite passed inside it. A unit test file that
# defines a file-local name another test file also defines breaks the unity build, and this
# suite with it.
#
#   bash tests/e2e/quick_path_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# The tool given is not used: the quick path builds its own.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_go
e2e_make_work quick_path

log=$work/quick.log
# BUILD_DIR: the quick path's build goes to this run's work directory, not the checkout's.
if BUILD_DIR=$work/build-quick bash "$src/scripts/test.sh" --quick >"$log" 2>&1; then
  pass "scripts/test.sh --quick exits 0"
else
  fail "scripts/test.sh --quick failed (exit $?)" "$log"
  e2e_finish
fi

# Its steps, in this order, each with the time since the start: "test.sh: [N s] <step>".
want=("dependencies" "format check" "configure and build" "unit tests" "oracle suite on go1.26.8"
  "quick path passed")
mapfile -t steps < <(sed -n 's/^test\.sh: \[[0-9]* s\] //p' "$log")
ok=1
if ((${#steps[@]} != ${#want[@]})); then
  ok=0
else
  for i in "${!want[@]}"; do
    [[ ${steps[i]} == "${want[i]}"* ]] || ok=0
  done
fi
if ((ok)); then
  pass "its steps, in order: $(grep -E '^test\.sh: \[' "$log" | tr '\n' ' ')"
else
  fail "its steps were [${steps[*]}], not [${want[*]}]" "$log"
fi
if grep -q 'Debug -O0 -g0, unity' "$log"; then
  pass "it builds unoptimised, as a unity build, in its own build directory"
else
  fail "no 'configure and build (...: Debug -O0 -g0, unity)' step" "$log"
fi
# The unit tests run as two gtest shards; together they must have run every test the
# binary lists, and passed them all.
shards=$(grep -c '^unit tests, shard [12] of 2:$' "$log")
passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\.$/\1/p' "$log" | awk '{s += $1; n++} END {if (n) print s}')
ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests from.*/\1/p' "$log" | awk '{s += $1; n++} END {if (n) print s}')
listed=$("$work/build-quick/tests/unit_tests" --gtest_list_tests | grep -c '^  ')
if ((shards == 2)) && [[ -n $passed && $passed == "$ran" && $ran == "$listed" ]] && ((ran > 400)) &&
  ! grep -q '^\[  SKIPPED \]' "$log"; then
  pass "every unit test passed in the two shards, none skipped: $ran of the $listed listed"
else
  fail "unit tests: $shards shards, ${passed:-?} passed of ${ran:-?} run, $listed listed, or some skipped" "$log"
fi
if grep -Eq '100% tests passed, 0 tests failed out of [0-9]+' "$log" && grep -q 'e2e\.oracle_test .*Passed' "$log"; then
  pass "the oracle suite passed inside it"
else
  fail "the oracle suite did not pass inside it" "$log"
fi
e2e_finish
