#!/usr/bin/env bash
# The memory-statistics oracle: testdata/memstats, built by the go_programs
# fixture with every toolchain (exe, PIE, cgo), builds a varied heap and
# blocks; tools/memstats_dump reads its memory statistics from outside; then
# the target reads its own (runtime/metrics, ReadMemStats, NumGoroutine,
# ThreadCreateProfile) and writes them, and tests/e2e/memstats_compare.py
# requires every value to be equal except the named exceptions (GCSys and
# OtherSys individually; their sum exact). The DWARF-proven layout must also
# equal the per-version table, which stripped binaries are read with.
#
#   bash tests/e2e/memstats_oracle_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# memstats_dump is taken from beside goheap2pprof. Each version runs three
# cases: exe (default settings), PIE with GOGC=off, and cgo with
# GOMEMLIMIT=60MiB (the memory-limit goal; GOGC=30 before 1.19, which has no
# limit). MEMSTATS_VERSIONS="v ..." picks toolchains; MEMSTATS_VARIANTS adds
# fixture programs by suffix (e.g. "pie-stripped": a name with "stripped"
# must then be read with the per-version table).
#
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
dump=$(dirname "$tool")/memstats_dump
e2e_require_executables "$dump"
e2e_require_command python3 "the comparison is a Python script"
e2e_require_command jq "the stress cases read memstats_dump's JSON with jq"
e2e_make_work memstats-oracle
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

# run_case <label> <binary> <minor> <dwarf|table> [VAR=value...]
run_case() {
  local label=$1 binary=$2 minor=$3 layout=$4 dir fd
  shift 4
  dir=$work/$(echo "$label" | tr -c 'A-Za-z0-9.\n-' '_')
  mkdir -p "$dir"
  mkfifo "$dir/in"
  # Opened read-write, the fifo never blocks us and keeps the target's
  # read(2) of stdin waiting until we write.
  exec {fd}<>"$dir/in"
  # Not e2e_start: bash gives a background command /dev/null as stdin
  # unless the redirection is on that command itself.
  env "$@" "$binary" -out "$dir/theirs.json" <"$dir/in" >"$dir/target.out" 2>"$dir/target.err" &
  target_pid=$!
  e2e_track_pid "$target_pid"
  if ! e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" 60; then
    fail "$label (target did not print READY)" "$dir/target.err"
    exec {fd}>&-
    e2e_stop_pids
    return
  fi
  "$dump" "$target_pid" >"$dir/ours.json" 2>"$dir/dump.err"
  local rc=$?
  echo go >&"$fd"
  if ! e2e_wait_for_line "$dir/target.out" '^DONE' "$target_pid" 60; then
    fail "$label (target did not print DONE)" "$dir/target.err"
  elif ((rc != 0)); then
    fail "$label (memstats_dump exited $rc)" "$dir/dump.err"
  elif python3 "$src/tests/e2e/memstats_compare.py" "$dir/ours.json" "$dir/theirs.json" \
    "$minor" "$layout" >"$dir/compare.out" 2>&1; then
    pass "$label ($(tail -n 1 "$dir/compare.out"))"
  else
    fail "$label" "$dir/compare.out"
  fi
  exec {fd}>&-
  e2e_stop_pids
}

for version in ${MEMSTATS_VERSIONS:-$(toolchain_versions)}; do
  read -r state why <<<"$(go_programs_status "$version")"
  if [[ $state != ok ]]; then
    [[ $state == skip ]] && skip "$version ($why)" || fail "$version ($why)"
    continue
  fi
  minor=$(echo "$version" | cut -d. -f2)
  limit=GOMEMLIMIT=60MiB
  ((minor < 19)) && limit=GOGC=30
  cases=("exe GOGC=100" "pie GOGC=off" "exe-cgo $limit")
  for variant in ${MEMSTATS_VARIANTS:-}; do cases+=("$variant GOGC=100"); done
  for entry in "${cases[@]}"; do
    read -r build setting <<<"$entry"
    binary=$(go_program "$version" "memstats-amd64-$build")
    if [[ ! -x $binary ]]; then
      fail "$version $build ($binary was not built)"
      continue
    fi
    layout=dwarf
    [[ $build == *stripped* ]] && layout=table
    run_case "$version $build $setting" "$binary" "$minor" "$layout" "$setting"
  done
done
# GOEXPERIMENTs that move fields the read uses (staticlockranking: every
# mutex grows; nogreenteagc: p.statsSeq and mstats's tail): read right only
# because the layout comes from the DWARF. Built here with Go 1.26.8.
if [[ -z ${MEMSTATS_VERSIONS:-} || " $MEMSTATS_VERSIONS " == *" go1.26.8 "* ]]; then
  e2e_require_go
  for experiment in staticlockranking nogreenteagc; do
    go=(env GOEXPERIMENT=$experiment "${go[@]}")
    e2e_go_build memstats "$work/bin/memstats-$experiment"
    go=("${go[@]:2}")
    run_case "go1.26.8 GOEXPERIMENT=$experiment" "$work/bin/memstats-$experiment" 26 experiment \
      GOGC=100
  done
fi
# A busy target (-stress: allocating goroutines and metrics.Read, which
# rotates heapStats.gen, without pause): 300 reads in a row must all be
# consistent: no cumulative counter lower than in the read before, and no
# read that ran out of attempts (memstats_dump would fail).
for version in go1.19.8 go1.26.8; do
  [[ -n ${MEMSTATS_VERSIONS:-} && " $MEMSTATS_VERSIONS " != *" $version "* ]] && continue
  [[ $(go_programs_status "$version") == ok ]] || continue
  dir=$work/stress-$version
  mkdir -p "$dir"
  e2e_start "$dir/target.out" "$dir/target.err" \
    "$(go_program "$version" memstats-amd64-exe)" -stress -out "$dir/theirs.json"
  if ! e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" 60; then
    fail "$version stress (target did not print READY)" "$dir/target.err"
  elif ! "$dump" --repeat 300 "$target_pid" >"$dir/ours.json" 2>"$dir/dump.err"; then
    fail "$version stress (memstats_dump failed)" "$dir/dump.err"
  elif [[ $(jq .decreases "$dir/ours.json") != 0 ]]; then
    fail "$version stress ($(jq .decreases "$dir/ours.json") of 300 reads went backwards)"
  else
    pass "$version stress (300 consistent reads, at most $(jq .max_attempts "$dir/ours.json") attempts)"
  fi
  e2e_stop_pids
done
e2e_finish
