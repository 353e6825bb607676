#!/usr/bin/env bash
# The README's first command, `bash scripts/demo.sh`, as a newcomer runs it: it installs
# what is missing of the build set, builds the tool (a unity build without optimisation,
# its own build directory here), starts the demo service, captures it from outside and
# prints `go tool pprof -top`. Checked: it exits 0; it names the pid it captured; the
# top lists the demo's two allocation sites (main.renderPage, main.(*sessionCache).remember) with bytes;
# it says how long it took; the demo service is stopped and its files removed after it.
#
#   bash tests/e2e/demo_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# The tool given is not used: the demo builds its own. Needs Go (the demo's service).
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_go
e2e_make_work demo

log=$work/demo.log
# BUILD_DIR: the demo's build goes to this run's work directory, not the checkout's.
if BUILD_DIR=$work/build-demo bash "$src/scripts/demo.sh" >"$log" 2>&1; then
  pass "scripts/demo.sh exits 0"
else
  fail "scripts/demo.sh failed (exit $?)" "$log"
  e2e_finish
fi

pid=$(sed -n 's/^demo: capturing the heap of demo-service (pid \([0-9]*\)).*/\1/p' "$log")
if [[ -n $pid ]]; then
  pass "it names the process it captured (pid $pid)"
else
  fail "no 'capturing the heap of demo-service (pid N)' line" "$log"
fi
# go tool pprof -top rows: flat flat% sum% cum cum% name; the demo's two sites hold bytes.
for site in main.renderPage "main.(*sessionCache).remember"; do
  row=$(awk -v f="$site" '$6 == f && $1 ~ /[kMG]?B$/' "$log" | head -n 1)
  if [[ -n $row ]]; then
    pass "the top lists $site: $row"
  else
    fail "the top has no row with bytes for $site" "$log"
  fi
done
if grep -Eq '^demo: done in [0-9]+ s$' "$log"; then
  pass "it says how long it took: $(grep -E '^demo: done in' "$log")"
else
  fail "no 'demo: done in N s' line" "$log"
fi
if [[ -n $pid && $(cat "/proc/$pid/comm" 2>/dev/null) == demo-service ]]; then
  fail "the demo service (pid $pid) still runs after the demo"
else
  pass "the demo service is stopped after the demo"
fi
# "demo: go tool pprof -top <dir>/heap.pb.gz": <dir> is the demo's temporary directory.
profile=$(sed -n 's/^demo: go tool pprof -top \(.*\)$/\1/p' "$log")
if [[ -z $profile ]]; then
  fail "no 'go tool pprof -top <file>' line" "$log"
elif [[ -e $(dirname "$profile") ]]; then
  fail "its temporary directory $(dirname "$profile") is left behind"
else
  pass "its temporary directory is removed"
fi
e2e_finish
