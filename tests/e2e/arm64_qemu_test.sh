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
qemu=$(command -v qemu-aarch64-static || true)
sysroot=/usr/aarch64-linux-gnu
if [[ -z $qemu ]]; then
  echo "SKIP: qemu-aarch64-static is not installed (apt-get install qemu-user-static)"
  exit 77
fi
if [[ ! -e $sysroot/lib/ld-linux-aarch64.so.1 ]]; then
  echo "SKIP: $sysroot/lib/ld-linux-aarch64.so.1 is missing (apt-get install libc6-arm64-cross)"
  exit 77
fi
# qemu must be able to run an arm64 program at all here (e.g. a seccomp
# profile or a low vm.mmap_min_addr limit can stop it).
e2e_go_cache_fallback "${GOHEAP2PPROF_BINARY_DIR:-$here/../../build}"
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
cat >"$probe_dir/main.go" <<'EOF'
package main

func main() { println("ok") }
EOF
if ! (cd "$probe_dir" && env GOTOOLCHAIN=local GOARCH=arm64 CGO_ENABLED=0 \
  go build -o probe main.go) >"$probe_dir/log" 2>&1; then
  echo "SKIP: cannot cross-build for arm64: $(tail -n 1 "$probe_dir/log")"
  exit 77
fi
if ! out=$("$qemu" -L "$sysroot" "$probe_dir/probe" 2>&1) || [[ $out != ok ]]; then
  echo "SKIP: $qemu cannot run an arm64 program here: $out"
  exit 77
fi

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
