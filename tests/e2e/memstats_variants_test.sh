#!/usr/bin/env bash
# The memory-statistics oracle (memstats_oracle_test.sh) beyond plain live
# amd64 binaries with DWARF: testdata/memstats as the go_programs fixture
# built it, read from outside by tools/memstats_dump and compared with the
# target's own view by tests/e2e/memstats_compare.py, in four variants:
#  - stripped (-ldflags="-s -w"), every toolchain: the variables recovered
#    from the runtime's machine code (gobin/memstats_variables.cc), the
#    layout from the per-version table; an exe with GOGC=100 and a cgo PIE
#    (externally linked: its pclntab found by a pcHeader scan before 1.26)
#    with GOMEMLIMIT=60MiB (GOGC=30 on 1.18, which has no limit);
#  - arm64 under qemu-aarch64-static, the toolchains marked arm64-live in
#    tests/go_toolchains.txt (1.18, 1.19, 1.21.5, 1.24, 1.26, 1.27; the set
#    the heap-profile suite runs under qemu, chosen there for its spread;
#    every toolchain under emulation would cost minutes more): an exe with
#    DWARF and a stripped PIE read with the arm64 tables (128-byte cache
#    line pad from 1.20); the tool reads the guest's memory inside the qemu
#    process;
#  - a gcore (gdb), go1.26.8 exe and go1.19.8 stripped PIE: with -quiet-view
#    the target takes its own view, writes it without allocating
#    (testdata/memstats/crashview.go) and blocks; the gcore then taken must
#    give exactly that view. (A gcore taken before the view is not exact:
#    the ptrace stop lets the scavenger and the runtime run in between.)
#  - a kernel core file, go1.19.8 exe and go1.27.3 stripped PIE: with
#    -crash-view the target takes its own view, writes it without
#    allocating (testdata/memstats/crashview.go) and aborts itself
#    (GOTRACEBACK=crash), so the core must give exactly that view.
#
#   bash tests/e2e/memstats_variants_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# MEMSTATS_VERSIONS="v ..." limits the toolchains. Exit status: 0 all cases
# passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
dump=$(dirname "$tool")/memstats_dump
e2e_require_executables "$dump"
e2e_require_command python3 "the comparison is a Python script"
e2e_make_work memstats-variants
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

qemu=$(command -v qemu-aarch64-static || true)
sysroot=/usr/aarch64-linux-gnu
ready_timeout=${ORACLE_READY_TIMEOUT:-120}

wanted() { [[ -z ${MEMSTATS_VERSIONS:-} || " $MEMSTATS_VERSIONS " == *" $1 "* ]]; }

# start_target <dir> <runner...> -- <binary> [VAR=value...]: starts the
# target (with the flags in target_args) on a fifo as stdin (fd in $fd) and
# waits for READY; sets target_pid. Returns 1 (reason in start_why) if it does not get there.
start_why=""
target_args=()
start_target() {
  local dir=$1
  shift
  local runner=()
  while [[ $1 != -- ]]; do
    runner+=("$1")
    shift
  done
  shift
  local binary=$1
  shift
  mkdir -p "$dir"
  rm -f "$dir/in"
  mkfifo "$dir/in"
  # Read-write, so that opening never blocks and the target's read(2)
  # waits until we write.
  exec {fd}<>"$dir/in"
  env "$@" "${runner[@]}" "$binary" "${target_args[@]}" -out "$dir/theirs.json" <"$dir/in" \
    >"$dir/target.out" \
    2>"$dir/target.err" &
  target_pid=$!
  e2e_track_pid "$target_pid"
  if ! e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" "$ready_timeout"; then
    start_why="the target did not print READY within ${ready_timeout}s"
    return 1
  fi
}

stop_target() {
  exec {fd}>&-
  e2e_stop_pids
}

# The target and the outside read are a moment apart, and the runtime's
# background work can run in between: a live case's read and the view the
# target takes after it (seen once in CI at -j2, Go 1.24.3 under qemu: an
# object of 1152 B, 4 tiny ones and a 32 KiB stack span), as a core case's
# view and the core taken after it (the scavenger releasing 72 KiB; a 32
# KiB stack freed). A case is tried up to 3 times, and a reading of ours
# that is wrong fails all 3; a pass after a difference says so.
retry_note() {
  [[ -n $differed ]] && echo "; passed on attempt $attempt, earlier${differed#;}"
}

# judge_attempt <theirs.json> <minor>: compares $dir/ours.json with the
# target's view; a pass or the last attempt ends the case (attempt=3), a
# difference before that is noted in $differed and the case is tried again.
judge_attempt() {
  local theirs=$1 minor=$2 threads
  if python3 "$src/tests/e2e/memstats_compare.py" "$dir/ours.json" "$theirs" "$minor" \
    "$layout" >"$dir/compare.out" 2>&1; then
    pass "$label ($(tail -n 1 "$dir/compare.out")$(retry_note))"
    attempt=3
  elif ((attempt < 3)); then
    # Whether the runtime started a thread in between tells what moved.
    threads=$(python3 -c 'import json, sys
print("%s threads, the view %s" % (json.load(open(sys.argv[1])).get("threads"),
                                   json.load(open(sys.argv[2])).get("threads")))' \
      "$dir/ours.json" "$theirs" 2>/dev/null)
    differed+="; attempt $attempt: $(grep -c ': ours ' "$dir/compare.out") values differed (ours $threads)"
  else
    fail "$label (3 attempts$differed)" "$dir/compare.out"
  fi
}

# live_case <label> <binary> <minor> <layout> <runner...> -- [VAR=value...]:
# reads the target from outside, then lets it take and write its own view.
live_case() {
  local label=$1 binary=$2 minor=$3 layout=$4 base dir attempt differed=""
  shift 4
  local runner=()
  while [[ $1 != -- ]]; do
    runner+=("$1")
    shift
  done
  shift
  base=$work/$(echo "$label" | tr ' =/' '_-_')
  for attempt in 1 2 3; do
    dir=$base-$attempt
    if ! start_target "$dir" "${runner[@]}" -- "$binary" "$@"; then
      fail "$label ($start_why)" "$dir/target.err"
      attempt=3
    elif ! "$dump" "$target_pid" >"$dir/ours.json" 2>"$dir/dump.err"; then
      fail "$label (memstats_dump failed)" "$dir/dump.err"
      attempt=3
    elif ! echo go >&"$fd" ||
      ! e2e_wait_for_line "$dir/target.out" '^DONE' "$target_pid" "$ready_timeout"; then
      fail "$label (target did not print DONE)" "$dir/target.err"
      attempt=3
    else
      judge_attempt "$dir/theirs.json" "$minor"
    fi
    stop_target
    ((attempt == 3)) && break
  done
}

# program <version> <name>: sets binary to the fixture's program, or fails
# the case and returns 1.
program() {
  binary=$(go_program "$1" "$2")
  if [[ ! -x $binary ]]; then
    fail "$1 $2 ($binary was not built)"
    return 1
  fi
}

# Every toolchain's state, once.
declare -A toolchain_state
e2e_toolchain_states wanted
minor_of() { echo "$1" | cut -d. -f2; }

# --- 1. stripped, every toolchain ---------------------------------------------
for version in $(toolchain_versions); do
  [[ ${toolchain_state[$version]:-} == ok ]] || continue
  minor=$(minor_of "$version")
  limit=GOMEMLIMIT=60MiB
  ((minor < 19)) && limit=GOGC=30
  for entry in "exe-stripped GOGC=100" "pie-cgo-stripped $limit"; do
    read -r build setting <<<"$entry"
    program "$version" "memstats-amd64-$build" || continue
    live_case "$version $build $setting" "$binary" "$minor" table -- "$setting"
  done
done

# --- 2. arm64 under qemu ------------------------------------------------------
arm64_why=""
if [[ -z $qemu ]]; then
  arm64_why="qemu-aarch64-static is not installed (apt-get install qemu-user-static)"
elif [[ ! -e $sysroot/lib/ld-linux-aarch64.so.1 ]]; then
  arm64_why="$sysroot/lib/ld-linux-aarch64.so.1 is missing (apt-get install libc6-arm64-cross)"
fi
for version in $(toolchain_versions); do
  [[ ${toolchain_state[$version]:-} == ok ]] && toolchain_arm64_live "$version" || continue
  minor=$(minor_of "$version")
  for entry in "exe dwarf GOGC=100" "pie-stripped table GOGC=off"; do
    read -r build layout setting <<<"$entry"
    label="$version arm64 $build under qemu $setting"
    if [[ -n $arm64_why ]]; then
      skip "$label ($arm64_why)"
      continue
    fi
    program "$version" "memstats-arm64-$build" || continue
    ready_timeout=300 live_case "$label" "$binary" "$minor" "$layout" "$qemu" -L "$sysroot" -- \
      "$setting"
  done
done

# --- 3. gcore of the quiescent target -----------------------------------------
# -quiet-view: the target takes its view, writes it without allocating and
# blocks; the gcore taken then must give exactly that view.
for entry in "go1.26.8 exe dwarf" "go1.19.8 pie-stripped table"; do
  read -r version build layout <<<"$entry"
  [[ ${toolchain_state[$version]:-} == ok ]] || continue
  label="gcore $version $build"
  if ! command -v gcore >/dev/null; then
    skip "$label (gcore not installed: Debian package gdb, see scripts/install-deps.sh)"
    continue
  fi
  program "$version" "memstats-amd64-$build" || continue
  differed=""
  for attempt in 1 2 3; do
  dir=$work/gcore-$version-$build-$attempt
  target_args=(-quiet-view)
  if ! start_target "$dir" -- "$binary" GOGC=100; then
    fail "$label ($start_why)" "$dir/target.err"
    attempt=3
  elif ! echo go >&"$fd" ||
    ! e2e_wait_for_line "$dir/target.out" '^VIEW' "$target_pid" "$ready_timeout"; then
    fail "$label (target did not print VIEW)" "$dir/target.err"
    attempt=3
  elif ! gcore -o "$dir/core" "$target_pid" >"$dir/gcore.log" 2>&1 ||
    [[ ! -f $dir/core.$target_pid ]]; then
    if grep -qiE 'ptrace|not permitted' "$dir/gcore.log"; then
      skip "$label (gdb may not attach here: $(grep -iE 'ptrace|not permitted' "$dir/gcore.log" | head -n 1))"
      attempt=3
    else
      fail "$label (gcore failed)" "$dir/gcore.log"
      attempt=3
    fi
  elif ! python3 "$src/tests/e2e/memstats_crashview.py" "$dir/theirs.json" "$dir/view.json" \
    >"$dir/convert.out" 2>&1; then
    fail "$label (the target's view is incomplete)" "$dir/convert.out"
    attempt=3
  elif ! "$dump" --exe "$binary" --core "$dir/core.$target_pid" >"$dir/ours.json" \
    2>"$dir/dump.err"; then
    fail "$label (memstats_dump --core failed)" "$dir/dump.err"
    attempt=3
  else
    judge_attempt "$dir/view.json" "$(minor_of "$version")"
  fi
  target_args=()
  # gdb writes the whole address space (about 1.3 GB with gdb 13).
  rm -f "$dir"/core.*
  stop_target
  ((attempt == 3)) && break
  done
done

# --- 4. kernel core of the quiescent target -----------------------------------
e2e_kernel_core_check
for entry in "go1.19.8 exe dwarf" "go1.27.3 pie-stripped table"; do
  read -r version build layout <<<"$entry"
  [[ ${toolchain_state[$version]:-} == ok ]] || continue
  label="kernel core $version $build"
  if [[ -n $kernel_why ]]; then
    skip "$label ($kernel_why)"
    continue
  fi
  program "$version" "memstats-amd64-$build" || continue
  differed=""
  for attempt in 1 2 3; do
  dir=$work/kcore-$version-$build-$attempt
  mkdir -p "$dir"
  # The target runs in dir so that its core lands there; -crash-view makes
  # it take its view, write it without allocating and abort itself.
  target_args=(-crash-view)
  if ! start_target "$dir" bash -c 'cd "$1" && ulimit -c unlimited && shift && exec "$@"' _ \
    "$dir" -- "$binary" GOTRACEBACK=crash GOGC=100; then
    target_args=()
    fail "$label ($start_why)" "$dir/target.err"
    stop_target
    break
  fi
  target_args=()
  echo go >&"$fd"
  wait "$target_pid"
  rc=$?
  pids=()
  exec {fd}>&-
  core=$(ls -t "$dir/$core_prefix"* 2>/dev/null | head -n 1)
  if [[ $rc -ne 134 || -z $core ]]; then
    fail "$label (exit $rc, core '${core:-none}'; want 134 (SIGABRT) and a core)" "$dir/target.err"
    attempt=3
  elif ! python3 "$src/tests/e2e/memstats_crashview.py" "$dir/theirs.json" "$dir/view.json" \
    >"$dir/convert.out" 2>&1; then
    fail "$label (the target's view is incomplete)" "$dir/convert.out"
    attempt=3
  elif ! "$dump" --exe "$binary" --core "$core" >"$dir/ours.json" 2>"$dir/core.err"; then
    fail "$label (memstats_dump --core failed)" "$dir/core.err"
    attempt=3
  else
    judge_attempt "$dir/view.json" "$(minor_of "$version")"
  fi
  rm -f "$core"
  ((attempt == 3)) && break
  done
done
e2e_finish
