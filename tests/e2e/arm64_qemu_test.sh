#!/usr/bin/env bash
# Live arm64 capture, proven under emulation: the oracle matrix of
# oracle_test.sh (the toolchains marked arm64-live in tests/go_toolchains.txt,
# exe and pie, MemProfileRate 1 and default),
# cross-built with GOARCH=arm64 CGO_ENABLED=0, unstripped and stripped
# (-ldflags="-s -w"), run under qemu-aarch64-static. goheap2pprof is pointed
# at the qemu process and must find the guest program in its maps, read the
# guest's memory at the guest's addresses, symbolize with the arm64 pclntab
# and produce what the arm64 program's own runtime/pprof wrote, down to the
# mappings qemu shows the guest.
#
#   bash tests/e2e/arm64_qemu_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Needs qemu-user-static, and libc6-arm64-cross for the dynamic loader that
# Go's arm64 PIEs name as their interpreter (scripts/install-deps.sh installs
# both). Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
set -u
source "$(dirname "$0")/lib.sh"

e2e_check_args "$@"
here=$(cd "$(dirname "$0")" && pwd)
e2e_go_cache_fallback "${GOHEAP2PPROF_BINARY_DIR:-$here/../../build}"
e2e_require_qemu_arm64
sysroot=$qemu_sysroot

export ORACLE_GOARCH=arm64 ORACLE_RUNNER="$qemu -L $sysroot"
# Rate-1 targets take ~10-25 s to reach READY under emulation.
export ORACLE_READY_TIMEOUT=${ORACLE_READY_TIMEOUT:-300}
status=77
for strip in 0 1; do
  echo "=== arm64 under qemu, $([[ $strip == 1 ]] && echo stripped || echo unstripped)"
  ORACLE_STRIP=$strip bash "$here/oracle_test.sh" "$@"
  rc=$?
  if ((rc == 1 || rc == 2)); then
    status=1
  elif ((rc == 0 && status == 77)); then
    status=0
  fi
done
exit $status
