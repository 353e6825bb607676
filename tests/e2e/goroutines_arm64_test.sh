#!/usr/bin/env bash
# The goroutine oracle on arm64: testdata/goroutines cross-built with
# GOARCH=arm64 CGO_ENABLED=0 and run under qemu-aarch64-static, as
# arm64_qemu_test.sh runs the heap oracle. goheap2pprof is pointed at the
# qemu process, reads the guest's goroutines and unwinds them the way the
# runtime does on a link-register machine (goroutine/unwind.h); its
# debug=0, debug=1 and debug=2 must be the target's own as in
# goroutines_test.sh (the same checks, goroutine_checks.sh): every parked
# goroutine's stack, count and labels, the texts byte for byte, the dump's
# headers, frames, file:line +0xoff and creators, but the writer.
#
#   bash tests/e2e/goroutines_arm64_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Toolchains: GOROUTINES_ARM64_VERSIONS (default go1.18.10 go1.26.8: the
# oldest and the newest runtime.g layouts, and both of the runtime's
# unwinders, gentraceback up to 1.20 and the unwinder from 1.21); on the
# last one also a stripped PIE, whose variables are recovered from arm64
# code, and the busy target of goroutines_test.sh (goroutines created and
# ending under the capture: five captures, nothing torn, nothing of the
# stable goroutines dropped). GOROUTINES_COUNT sets the goroutines of the one site (10000).
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run
# (e.g. no qemu: the reason is printed).
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/goroutine_checks.sh"

e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
e2e_require_qemu_arm64
e2e_make_work goroutines-arm64
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM
count=${GOROUTINES_COUNT:-10000}
target_runner=("$qemu" -L "$qemu_sysroot")

# arm64_case <version> <build>: runs the fixture's arm64 build of the target
# (exe or pie-stripped) under qemu until it has written its files, and
# checks our three formats against them.
arm64_case() {
  local version=$1 label=$2 dir=$work/$1-$2 prog
  GOARCH=arm64 goroutines_program "$version" "$label" "$version arm64 $label" || return
  mkdir -p "$dir/out"
  e2e_start "$dir/target.out" "$dir/target.err" "${target_runner[@]}" "$prog" "$dir/out" "$count"
  if e2e_wait_until 120 test -e "$dir/out/ready"; then
    check_goroutine_profile "$version arm64 $label" "$dir" "$target_pid"
    check_texts "$version arm64 $label" "$dir" "$target_pid"
  else
    fail "$version arm64 $label: the target did not write its profiles" "$dir/target.err"
  fi
  e2e_stop_pids
}

versions=(${GOROUTINES_ARM64_VERSIONS:-go1.18.10 go1.26.8})
for version in "${versions[@]}"; do
  usable_toolchain "$version" || continue
  arm64_case "$version" exe
  if [[ $version == "${versions[-1]}" ]]; then
    arm64_case "$version" pie-stripped
    GOARCH=arm64 busy "$version" "$version arm64"
  fi
done
e2e_finish
