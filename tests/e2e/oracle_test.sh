#!/usr/bin/env bash
# The oracle matrix: build testdata/oracle with every available Go toolchain
# and build mode, run it, and check that goheap2pprof's capture of the live
# process means exactly the same as the process's own heap profile (written
# by runtime/pprof in a quiescent state, see testdata/oracle/main.go).
#
#   bash tests/e2e/oracle_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# With ORACLE_STRIP=1 (tests/e2e/stripped_oracle_test.sh) every target is
# built with -ldflags="-s -w": goheap2pprof must then recover runtime.mbuckets
# and friends from machine code and symbolize through moduledata, and say so
# with -v; the binary must have no .symtab, or the run proves nothing.
#
# With ORACLE_GOARCH=arm64 and ORACLE_RUNNER="qemu-aarch64-static -L ..."
# (tests/e2e/arm64_qemu_test.sh) the targets are cross-built without cgo and
# run under the emulator; since goheap2pprof then rebuilds the mappings qemu
# shows its guest, every mapping must match, not only the executable's.
#
# Environment: GOHEAP2PPROF_SOURCE_DIR (repo root), GOHEAP2PPROF_BINARY_DIR
# (scratch space goes to $GOHEAP2PPROF_BINARY_DIR/e2e). Toolchains: `go`
# (1.26.8), /usr/lib/go-1.19/bin/go (1.19.8), `GOTOOLCHAIN=go1.27.3 go`; the
# ones that are missing are reported and skipped.
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

# build <version> <mode> <cgo 0|1> <out>: builds the oracle target.
build() {
  local version=$1 mode=$2 cgo=$3 out=$4 flags=()
  [[ $cgo == 1 ]] && flags=(-tags withcgo)
  [[ $strip == 1 ]] && flags+=(-ldflags="-s -w")
  (cd "$src/testdata/oracle" &&
    env CGO_ENABLED="$cgo" ${goarch:+GOARCH=$goarch} $(go_cmd "$version") build \
      -buildmode="$mode" "${flags[@]}" -o "$out" .) ||
    return 1
  if [[ $strip == 1 ]] && LC_ALL=C readelf -S "$out" | grep -q ' \.symtab '; then
    echo "$out still has a .symtab"
    return 1
  fi
}

# run_case <label> <binary> <rate>: one target run, one capture, one diff.
run_case() {
  local label=$1 binary=$2 rate=$3 dir rc samples
  dir=$work/$(echo "$label" | tr ' =' '_-')
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
  "$profdiff" "$dir/oracle.pb.gz" "$dir/ours.pb.gz" >"$dir/profdiff.out" 2>&1
  rc=$?
  if [[ $rc -eq 0 && ${#runner[@]} -gt 0 ]] && grep -q 'other mappings differ' "$dir/profdiff.out"; then
    rc=1
  fi
  samples=$(sed -n 's/^samples: expected \([0-9]*\),.*/\1/p' "$dir/profdiff.out")
  if [[ $rc -eq 0 ]]; then
    report "PASS $label (${samples:-?} samples)"
    passed=$((passed + 1))
  else
    report "FAIL $label (profdiff exited $rc; files in $dir)"
    # The verdict first, then the start of the details (all in profdiff.out).
    grep -E '^(samples:|header differs|main mapping differs|note .*other mappings)' -A 2 "$dir/profdiff.out" |
      grep -v '^--$' | sed 's/^/    /'
    sed 's/^/    /' "$dir/profdiff.out" | head -n 60 | cut -c 1-300
    failed=$((failed + 1))
  fi
}

# The matrix. Each binary is built once and run at both rates.
builds=()
for version in go1.19.8 go1.26.8 go1.27.3; do
  for mode in exe pie; do builds+=("$version $mode 0"); done
done
# cgo targets need a C compiler for the target architecture: native only.
if [[ -z $goarch ]]; then
  builds+=("go1.26.8 exe 1")
  # The hardest stripped case: an externally linked PIE before 1.26 has no
  # pclntab section at all.
  [[ $strip == 1 ]] && builds+=("go1.19.8 pie 1")
fi

declare -A toolchain_state
for entry in "${builds[@]}"; do
  read -r version mode cgo <<<"$entry"
  name="$version $mode"
  [[ $cgo == 1 ]] && name="$name cgo"
  if [[ -z ${toolchain_state[$version]:-} ]]; then
    if why=$(toolchain_ok "$version"); then
      toolchain_state[$version]=ok
    else
      toolchain_state[$version]=$why
    fi
  fi
  if [[ ${toolchain_state[$version]} != ok ]]; then
    report "SKIP $name (${toolchain_state[$version]})"
    skipped=$((skipped + 2))
    continue
  fi
  binary=$work/oracle-$version-$mode-cgo$cgo
  if ! build_log=$(build "$version" "$mode" "$cgo" "$binary" 2>&1); then
    if [[ $cgo == 1 ]] && ! command -v "${CC:-gcc}" >/dev/null; then
      report "SKIP $name (no C compiler for cgo)"
      skipped=$((skipped + 2))
      continue
    fi
    report "FAIL $name (go build failed)"
    echo "$build_log" | sed 's/^/    /' | tail -n 20
    failed=$((failed + 2))
    continue
  fi
  run_case "$name rate=1" "$binary" 1
  run_case "$name rate=default" "$binary" 0
done

if ((failed > 0)); then
  echo "--- results"
  printf '%s\n' "${results[@]}"
fi
e2e_finish
