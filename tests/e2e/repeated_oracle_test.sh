#!/usr/bin/env bash
# The oracle for repeated captures after the target added heap buckets: one
# `goheap2pprof serve` (its worker keeps each process's capture state,
# app/capture_state.h) captures testdata/oracle -phase2 -known at READY1 and
# twice at READY2, for every toolchain. Between the two, the target adds
# buckets at a call site of the first profile with a new size (Go 1.27 keys
# buckets by object size, earlier Go by size class) and its profile writer
# adds some at stacks of its own. Every capture must mean exactly what the
# target wrote itself at that point (profdiff), and serve's -v log must say
# how the worker came by the profile's tables:
#   READY1         built (the first capture);
#   READY2, first  continued from READY1's (the new stacks added to them), or
#                  built for Go 1.18 (no deck retry: a location may depend on
#                  the order of the stacks) and Go 1.21.0-1.21.5 (Functions
#                  keyed by printed name: the first instantiation names them);
#   READY2, again  reused (no bucket added).
#
#   bash tests/e2e/repeated_oracle_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Environment: as tests/e2e/oracle_test.sh (ORACLE_VERSIONS, ORACLE_READY_TIMEOUT).
# Exit status: 0 all passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
ready_timeout=${ORACLE_READY_TIMEOUT:-120}
e2e_require_executables "$tool" "$profdiff"
e2e_make_work repeated_oracle
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM
source "$(dirname "$0")/serve_lib.sh"
start_serve serve

# expected_origin <version>: how the first capture at READY2 comes by its tables.
expected_origin() {
  case $1 in
    go1.18.* | go1.21 | go1.21.[0-5]) echo built ;;
    *) echo continued ;;
  esac
}

# capture <dir> <name> <pid>: one capture through serve; prints how its
# tables came (serve's -v line for it, the last one for the pid).
capture() {
  local dir=$1 name=$2 pid=$3
  if ! curl -sf --max-time 60 -o "$dir/$name.pb.gz" "http://$addr/debug/pprof/heap?pid=$pid"; then
    echo "capture failed"
    return
  fi
  sed -n "s/.*capture pid $pid op 2: .*, tables \\(.*\\)\$/\\1/p" "$work/serve.log" | tail -n 1
}

# check <label> <oracle> <ours> <origin> <want-origin>
check() {
  local label=$1 oracle=$2 ours=$3 origin=$4 want=$5
  if [[ $origin != "$want" ]]; then
    fail "$label: tables $origin, expected $want"
  elif "$profdiff" "$oracle" "$ours" >"$ours.profdiff" 2>&1; then
    pass "$label: tables $origin, $(sed -n 's/^samples: expected \([0-9]*\),.*/\1/p' "$ours.profdiff") samples as the target's own"
  else
    fail "$label: tables $origin, differs from the target's own profile" "$ours.profdiff"
  fi
}

run_version() {
  local version=$1 binary=$2 dir=$work/$1 pid origin
  mkdir -p "$dir"
  e2e_start "$dir/target.out" "$dir/target.err" \
    "$binary" -rate 1 -phase2 -known -out "$dir/oracle1.pb.gz" -out2 "$dir/oracle2.pb.gz"
  pid=$target_pid
  if ! e2e_wait_for_line "$dir/target.out" '^READY1 ' "$pid" "$ready_timeout"; then
    fail "$version: the target did not print READY1" "$dir/target.err"
    return
  fi
  origin=$(capture "$dir" ready1 "$pid")
  check "$version READY1" "$dir/oracle1.pb.gz" "$dir/ready1.pb.gz" "$origin" built
  kill -USR1 "$pid"
  if ! e2e_wait_for_line "$dir/target.out" '^READY2 ' "$pid" "$ready_timeout"; then
    fail "$version: the target did not print READY2" "$dir/target.err"
    return
  fi
  origin=$(capture "$dir" ready2 "$pid")
  check "$version READY2" "$dir/oracle2.pb.gz" "$dir/ready2.pb.gz" "$origin" \
    "$(expected_origin "$version")"
  origin=$(capture "$dir" again "$pid")
  check "$version READY2 again" "$dir/oracle2.pb.gz" "$dir/again.pb.gz" "$origin" reused
  e2e_same_process "$pid" && kill "$pid"
  wait "$pid" 2>/dev/null
}

for version in ${ORACLE_VERSIONS:-$(toolchain_versions)}; do
  read -r state why <<<"$(go_programs_status "$version")"
  binary=$(go_program "$version" oracle-amd64-exe)
  if [[ $state == skip ]]; then
    skip "$version ($why)"
  elif [[ $state != ok || ! -x $binary ]]; then
    fail "$version (${why:-$binary was not built})"
  else
    run_version "$version" "$binary"
  fi
done
e2e_finish
