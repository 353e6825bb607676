#!/usr/bin/env bash
# The oracle matrix: testdata/oracle built with every Go toolchain and build
# mode (by the go_programs fixture), run, and goheap2pprof's capture of the
# live process checked to mean exactly the same as the process's own heap
# profile (written by runtime/pprof in a quiescent state, see
# testdata/oracle/main.go).
#
#   bash tests/e2e/oracle_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# With ORACLE_STRIP=1 (tests/e2e/stripped_oracle_test.sh) every target is
# built with -ldflags="-s -w": goheap2pprof must then recover runtime.mbuckets
# and friends from machine code and symbolize through moduledata, and say so
# with -v (the fixture checked that the binary has no .symtab).
#
# With ORACLE_GOARCH=arm64 and ORACLE_RUNNER="qemu-aarch64-static -L ..."
# (tests/e2e/arm64_qemu_test.sh) the targets are cross-built without cgo and
# run under the emulator; since goheap2pprof then rebuilds the mappings qemu
# shows its guest, every mapping must match, not only the executable's.
#
# Environment: GOHEAP2PPROF_SOURCE_DIR (repo root), GOHEAP2PPROF_BINARY_DIR
# (scratch space goes to $GOHEAP2PPROF_BINARY_DIR/e2e; the targets are the
# go_programs fixture's, tests/go_programs.sh, in its go-programs/).
# Toolchains: every one of tests/go_toolchains.txt (ORACLE_VERSIONS="v ..."
# picks some); one the fixture could not use FAILS, unless it was allowed to
# be missing (then one SKIP line says which and why).
#
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
ready_timeout=${ORACLE_READY_TIMEOUT:-120}  # seconds; rate 1 targets do a lot of work
e2e_require_executables "$tool" "$profdiff"

strip=${ORACLE_STRIP:-0}
goarch=${ORACLE_GOARCH:-}
read -r -a runner <<<"${ORACLE_RUNNER:-}"
e2e_make_work "oracle${goarch:+-$goarch}$([[ $strip == 1 ]] && echo -stripped)"
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

results=()

# Prints a case result line (and keeps it for the summary).
report() {
  echo "$1"
  results+=("$1")
}

# only_late_buckets <profdiff.out>: whether every sample of the target's
# matched and the only ones besides are ours with all values zero: buckets
# the runtime added after the target wrote its profile (at rate 1 any
# allocation adds one, and its counts are published only by later GCs; seen
# once at -j2, Go 1.18.10 arm64 under qemu, a timer allocation in
# runtime.adjusttimers). Go 1.27 labels every sample with its object size,
# zero-valued ones too (bytes=N). A wrong reading of ours would not pass a
# new run.
only_late_buckets() {
  grep -qE '^samples: expected ([0-9]+), actual [0-9]+, matched \1, only in expected 0, only in actual [1-9]' "$1" &&
    ! grep -qE '^(header differs|main mapping differs|note .*other mappings)' "$1" &&
    ! grep '^only in actual: values' "$1" | grep -qvE '^only in actual: values \[0 0 0 0\]( bytes=[0-9]+)?$'
}

# run_case <label> <binary> <rate> [attempt] [earlier]: one target run, one
# capture, one diff; tried again with a new target (up to 3 runs) only when
# the runtime added buckets after the target's own profile (only_late_buckets).
run_case() {
  local label=$1 binary=$2 rate=$3 attempt=${4:-1} earlier=${5:-} dir rc samples
  dir=$work/$(echo "$label" | tr ' =' '_-')$( ((attempt > 1)) && echo "-attempt$attempt")
  mkdir -p "$dir"
  e2e_start "$dir/target.out" "$dir/target.err" \
    "${runner[@]}" "$binary" -rate "$rate" -out "$dir/oracle.pb.gz"
  if ! e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" "$ready_timeout"; then
    report "FAIL $label (target did not print READY within ${ready_timeout}s)"
    sed 's/^/    target: /' "$dir/target.err" | tail -n 20
    e2e_stop_pids
    failed=$((failed + 1))
    return
  fi

  "$tool" -v "$target_pid" -o "$dir/ours.pb.gz" >"$dir/tool.out" 2>&1
  rc=$?
  e2e_stop_pids
  if [[ $rc -ne 0 ]]; then
    report "FAIL $label (goheap2pprof exited $rc)"
    sed 's/^/    /' "$dir/tool.out" | tail -n 20
    failed=$((failed + 1))
    return
  fi
  if [[ $strip == 1 ]] && ! grep -q 'runtime.mbuckets at .* (recovered from runtime\.' "$dir/tool.out"; then
    report "FAIL $label (-v does not say runtime.mbuckets was recovered)"
    sed 's/^/    /' "$dir/tool.out" | head -n 20
    failed=$((failed + 1))
    return
  fi
  # A one-shot capture reserves room for its buckets by an upper bound read
  # from MemStats.BuckHashSys (runtime.memstats, so only with a .symtab):
  # the bound must hold, or the memstats layout table is wrong for this Go.
  local bound walked
  bound=$(sed -n 's/.*room reserved for \([0-9]*\) heap buckets.*/\1/p' "$dir/tool.out")
  walked=$(sed -n 's/.*MemProfileRate [0-9-]*, cycle [0-9]*, \([0-9]*\) buckets.*/\1/p' "$dir/tool.out")
  if [[ -z $bound && $strip == 0 && ${#runner[@]} -eq 0 ]] || [[ -z $walked ]] ||
    [[ -n $bound && $bound -lt $walked ]]; then
    report "FAIL $label (bucket bound '${bound}' is not at least the ${walked:-?} buckets walked)"
    failed=$((failed + 1))
    return
  fi
  "$profdiff" "$dir/oracle.pb.gz" "$dir/ours.pb.gz" >"$dir/profdiff.out" 2>&1
  rc=$?
  if [[ $rc -eq 0 && ${#runner[@]} -gt 0 ]] && grep -q 'other mappings differ' "$dir/profdiff.out"; then
    rc=1
  fi
  samples=$(sed -n 's/^samples: expected \([0-9]*\),.*/\1/p' "$dir/profdiff.out")
  if [[ $rc -eq 0 ]]; then
    report "PASS $label (${samples:-?} samples${earlier:+; passed on attempt $attempt, earlier${earlier#;}})"
    passed=$((passed + 1))
  elif ((attempt < 3)) && only_late_buckets "$dir/profdiff.out"; then
    run_case "$label" "$binary" "$rate" $((attempt + 1)) \
      "$earlier; attempt $attempt: $(grep -c '^only in actual: values' "$dir/profdiff.out") zero-valued samples only in ours ($dir)"
  else
    report "FAIL $label (profdiff exited $rc; files in $dir)"
    # The verdict first, then the start of the details (all in profdiff.out).
    grep -E '^(samples:|header differs|main mapping differs|note .*other mappings)' -A 2 "$dir/profdiff.out" |
      grep -v '^--$' | sed 's/^/    /'
    sed 's/^/    /' "$dir/profdiff.out" | head -n 60 | cut -c 1-300
    failed=$((failed + 1))
  fi
}

# The matrix: every toolchain of tests/go_toolchains.txt (under qemu, the
# arm64-live ones), exe and PIE, and one cgo build per version (stripped: the
# externally linked PIE, which before 1.26 has no pclntab section at all).
# The go_programs fixture built each binary once; each runs at both rates.
arch=${goarch:-amd64}
suffix=$([[ $strip == 1 ]] && echo -stripped)
declare -A skipped_why
for version in ${ORACLE_VERSIONS:-$(toolchain_versions)}; do
  if [[ -n $goarch ]] && ! toolchain_arm64_live "$version"; then continue; fi
  read -r state why <<<"$(go_programs_status "$version")"
  builds=("exe 0" "pie 0")
  # cgo targets need a C compiler for the target architecture: native only.
  if [[ -z $goarch ]]; then
    builds+=("$([[ $strip == 1 ]] && echo pie || echo exe) 1")
  fi
  if [[ $state == skip ]]; then
    skipped_why[$why]+=" $version"
    skipped=$((skipped + 2 * ${#builds[@]}))
    continue
  fi
  if [[ $state != ok ]]; then
    report "FAIL $version ($why)"
    failed=$((failed + 2 * ${#builds[@]}))
    continue
  fi
  for entry in "${builds[@]}"; do
    read -r mode cgo <<<"$entry"
    name="$version $mode"
    [[ $cgo == 1 ]] && name="$name cgo"
    binary=$(go_program "$version" "oracle-$arch-$mode$([[ $cgo == 1 ]] && echo -cgo)$suffix")
    if [[ ! -x $binary ]]; then
      report "FAIL $name ($binary was not built)"
      failed=$((failed + 2))
      continue
    fi
    run_case "$name rate=1" "$binary" 1
    run_case "$name rate=default" "$binary" 0
  done
done
# One line per reason for the toolchains that may be missing here.
for why in "${!skipped_why[@]}"; do
  report "SKIP${skipped_why[$why]} ($why)"
done

if ((failed > 0)); then
  echo "--- results"
  printf '%s\n' "${results[@]}"
fi
e2e_finish
