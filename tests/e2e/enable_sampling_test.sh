#!/usr/bin/env bash
# `goheap2pprof enable-sampling` on testdata/sampling (no runtime/pprof: it
# starts with runtime.MemProfileRate = 0; eight goroutines allocate all
# along; commands on a fifo), as the go_programs fixture built it:
#  - sampling-amd64-exe, every toolchain of tests/go_toolchains.txt:
#    before, the capture exits 7 and its hint names enable-sampling;
#    after --rate 1, keepB holds exactly its 1000 x 4096 bytes;
#    after --off, keepC (allocated while off) is not sampled: no object up
#    to Go 1.23 (mallocgc samples only `if rate := MemProfileRate; rate > 0`);
#    from 1.24 at most one per P, the runtime's own behaviour after a
#    change (`c.nextSample < 0 || MemProfileRate != c.memProfRate` sends the
#    first allocation of each P to profilealloc, which records it);
#    at the default rate, keepD's scaled in-use bytes (1024 x 64 KiB) within
#    4 standard deviations of the runtime's sampling error, plus the same
#    one-sample-per-P allowance (see in_bounds);
#    1,000 enable/--off cycles, then `check` answers what it answered
#    before and the target runs;
#  - sampling-amd64-pie-stripped, every toolchain: the variable recovered
#    from machine code, --rate 1, keepB exact; and a refusal (exit 6, nothing
#    written) with an --exe copy whose runtime.profilealloc and
#    runtime.allocmcache (the functions the recovery reads) are overwritten;
#  - sampling-arm64-exe under qemu-aarch64-static on two arm64-live
#    toolchains, captured by the emulator's pid: --rate 1, keepB exact.
#
# The cycles: one invocation costs about 90 ms on the loaded 2-core
# machine (Debug -O0; 17 ms of CPU), so 2,000 invocations on each of 11
# toolchains would take half an hour. Real invocations run on two toolchains
# (REAL_CYCLE_VERSIONS); the others run the 1,000 cycles inside one
# invocation through the test seam GOHEAP2PPROF_TEST_ENABLE_CYCLES (the same
# read, write and re-read of the word; only the opening and analysis of the
# executable is not repeated), whose 2,000 writes -v must print.
#
#   bash tests/e2e/enable_sampling_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# ENABLE_SAMPLING_VERSIONS="v ..." limits the toolchains; ENABLE_SAMPLING_CYCLES
# (1000) the cycles. Exit status: 0 passed, 1 failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_seams
e2e_require_command python3 "the profile checks are a Python script"
e2e_make_work enable-sampling
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

cycles=${ENABLE_SAMPLING_CYCLES:-1000}
real_cycle_versions=${REAL_CYCLE_VERSIONS:-"go1.18.10 go1.26.8"}
qemu_versions=${QEMU_VERSIONS:-"go1.19.8 go1.24.3"}
qemu=$(command -v qemu-aarch64-static || true)
sysroot=/usr/aarch64-linux-gnu
nprocs=$(nproc)
wanted() { [[ -z ${ENABLE_SAMPLING_VERSIONS:-} || " $ENABLE_SAMPLING_VERSIONS " == *" $1 "* ]]; }

# start_target <dir> <runner...> -- <binary>: starts it on a fifo (fd in
# $fd) and waits for READY; sets target_pid, or returns 1.
start_target() {
  local dir=$1 runner=()
  shift
  while [[ $1 != -- ]]; do
    runner+=("$1")
    shift
  done
  mkdir -p "$dir"
  mkfifo "$dir/in"
  exec {fd}<>"$dir/in"
  "${runner[@]}" "$2" <"$dir/in" >"$dir/target.out" 2>"$dir/target.err" &
  target_pid=$!
  e2e_track_pid "$target_pid"
  e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" 300
}

# ask <dir> <command> <answer-prefix>: sends one command, waits for its
# answer (a new line starting with the prefix) and prints it.
ask() {
  local dir=$1 before
  before=$(grep -c "^$3" "$dir/target.out")
  echo "$2" >&"$fd"
  e2e_wait_until 300 eval "(( \$(grep -c '^$3' '$dir/target.out') > before ))" || return 1
  grep "^$3" "$dir/target.out" | tail -n 1
}

# enable <dir> <pid> <args...>: runs enable-sampling; its stdout in
# $dir/enable.out, stderr in $dir/enable.err; returns its status.
enable() {
  local dir=$1 pid=$2
  shift 2
  "$tool" enable-sampling "$pid" "$@" >"$dir/enable.out" 2>"$dir/enable.err"
}

# site <dir> <pid> <function> <size>: captures (the runtime's debug=1 text)
# and prints the in-use "<bytes> <objects>" of the records whose leaf is the
# function and whose objects are <size> bytes (0 0 when none). The size
# matters: a record is (stack, size), and the runtime's own allocations made
# under a keep (a GC it starts, a new M: their runtime frames are hidden, as
# runtime/pprof hides them) are records of other sizes with the same leaf.
site() {
  "$tool" "$2" --format debug1 -o "$1/capture.txt" 2>"$1/capture.err" || return 1
  python3 - "$1/capture.txt" "$3" "$4" <<'PY'
import re, sys
path, name, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
total = [0, 0]
record = None
for line in open(path):
    m = re.match(r"^(\d+): (\d+) \[\d+: \d+\] @", line)
    if m:
        record = (int(m.group(1)), int(m.group(2)))
        continue
    m = re.match(r"^#\s+0x[0-9a-f]+\s+(\S+)\+0x", line)
    if m and record is not None:
        objects, inuse = record
        if m.group(1) == name and objects > 0 and round(inuse / objects) == size:
            total[0] += inuse
            total[1] += objects
    record = None
print(total[0], total[1])
PY
}

# in_bounds <objects>: keepD's sampled objects (debug=1 is unscaled), scaled
# as runtime/pprof's scaleHeapSample does, for 1024 objects of 64 KiB at
# rate 524288. Each object is sampled independently with p = 1 -
# exp(-65536/524288) (the sampling points are a Poisson process in bytes)
# and counted as 65536/p bytes, so sd = 65536 * sqrt(1024 (1-p)/p) = 5.48
# MiB. 4 sd: a false failure about 6e-5 of runs (normal approximation).
# Plus the first allocation of each P after the rate changed, which the
# runtime samples whatever its size (see the header): at most nproc more
# samples of 65536/p bytes.
in_bounds() {
  python3 - "$1" "$nprocs" <<'PY'
import math, sys
sampled, nprocs = int(sys.argv[1]), int(sys.argv[2])
size, n, rate = 65536, 1024, 524288
p = 1 - math.exp(-size / rate)
got = sampled * size / p
sd = size * math.sqrt(n * (1 - p) / p)
slack = 4 * sd + nprocs * size / p
want = n * size
print(f"{got / 2**20:.1f} MiB against {want / 2**20:.0f} MiB +- {slack / 2**20:.1f} MiB")
sys.exit(0 if abs(got - want) <= slack else 1)
PY
}

# exact_keep <what> <dir> <pid> <site> <count> <size>: keeps count x size
# at keep<site> and checks the capture shows exactly that.
exact_keep() {
  local what=$1 dir=$2 pid=$3 got
  ask "$dir" "keep $4 $5 $6" "kept $4" >/dev/null || {
    fail "$what: keep $4: no answer" "$dir/target.err"
    return 1
  }
  got=$(site "$dir" "$pid" "main.keep$4" "$6") || {
    fail "$what: capture" "$dir/capture.err"
    return 1
  }
  if [[ $got == "$(($5 * $6)) $5" ]]; then
    pass "$what: keep$4 in-use exactly $(($5 * $6)) bytes, $5 objects"
  else
    fail "$what: keep$4 in-use '$got', want '$(($5 * $6)) $5'"
    return 1
  fi
}

# refused_before <what> <dir> <pid>: the capture exits 7 naming enable-sampling.
refused_before() {
  "$tool" "$3" -o "$2/before.pb.gz" 2>"$2/before.err"
  local rc=$?
  if [[ $rc == 7 ]] && grep -q "hint: .*goheap2pprof enable-sampling $3" "$2/before.err"; then
    pass "$1: before, the capture exits 7 and its hint names enable-sampling"
  else
    fail "$1: before, the capture exited $rc" "$2/before.err"
  fi
}

# enable_expect <what> <dir> <pid> <stdout-regex> <args...>
enable_expect() {
  local what=$1 dir=$2 pid=$3 want=$4
  shift 4
  if enable "$dir" "$pid" "$@" && grep -Eq "$want" "$dir/enable.out"; then
    pass "$what: enable-sampling ${*:-(default rate)}: $(cat "$dir/enable.out")"
  else
    fail "$what: enable-sampling $* (want /$want/)" "$dir/enable.err"
    cat "$dir/enable.out"
    return 1
  fi
}

# off_allowance <version>: keepC objects the runtime may sample after --off.
off_allowance() {
  local minor=${1#go1.}
  minor=${minor%%.*}
  ((minor >= 24)) && echo "$nprocs" || echo 0
}

# run_cycles <what> <dir> <pid> <version>: 1,000 enable/--off cycles.
run_cycles() {
  local what=$1 dir=$2 pid=$3 version=$4 i before after writes
  before=$(ask "$dir" check "check ") || {
    fail "$what: check before the cycles: no answer"
    return
  }
  local started=$SECONDS
  if [[ " $real_cycle_versions " == *" $version "* ]]; then
    for ((i = 0; i < cycles; i++)); do
      enable "$dir" "$pid" && enable "$dir" "$pid" --off || break
    done
    ((i == cycles)) || fail "$what: cycle $i failed" "$dir/enable.err"
    echo "    $cycles cycles of real invocations: $((SECONDS - started)) s"
  else
    GOHEAP2PPROF_TEST_ENABLE_CYCLES=$cycles enable "$dir" "$pid" --off -v
    writes=$(grep -c 'write runtime.MemProfileRate' "$dir/enable.err")
    # The --off itself (rate 524288 -> 0), then two writes per cycle.
    if ((writes != 2 * cycles + 1)); then
      fail "$what: the cycles seam wrote $writes times, want $((2 * cycles + 1))" "$dir/enable.err"
    fi
  fi
  after=$(ask "$dir" check "check ")
  if [[ -n $after && $after == "$before" ]] && e2e_running "$pid" &&
    ! grep -q CORRUPT "$dir/target.out"; then
    pass "$what: $cycles enable/--off cycles; check answers '$after' as before; still running"
  else
    fail "$what: after the cycles: check '$after' (before: '$before')" "$dir/target.err"
  fi
}

# full_case <version>: every step on sampling-amd64-exe.
full_case() {
  local v=$1 what="$1 exe" dir=$work/$1-exe pid got allowance
  start_target "$dir" env -- "$(go_program "$v" sampling-amd64-exe)" || {
    fail "$what: the target did not start" "$dir/target.err"
    return
  }
  pid=$target_pid
  refused_before "$what" "$dir" "$pid"
  enable_expect "$what" "$dir" "$pid" "^runtime.MemProfileRate 0 -> 1 in process $pid: " \
    --rate 1 || return
  exact_keep "$what" "$dir" "$pid" B 1000 4096 || return
  enable_expect "$what" "$dir" "$pid" "^runtime.MemProfileRate 1 -> 0 in process $pid: " --off ||
    return
  ask "$dir" "keep C 1000 4096" "kept C" >/dev/null
  enable "$dir" "$pid" --rate 1
  got=$(site "$dir" "$pid" main.keepC 4096)
  allowance=$(off_allowance "$v")
  if [[ -n $got ]] && ((${got#* } <= allowance)) &&
    [[ $(site "$dir" "$pid" main.keepB 4096) == "4096000 1000" ]]; then
    pass "$what: after --off keepC was not sampled ($got; at most $allowance); keepB unchanged"
  else
    fail "$what: after --off keepC in-use '$got' (at most $allowance objects)" "$dir/capture.err"
  fi
  enable_expect "$what" "$dir" "$pid" "^runtime.MemProfileRate 1 -> 524288 in process $pid: " ||
    return
  ask "$dir" "keep D 1024 65536" "kept D" >/dev/null
  got=$(site "$dir" "$pid" main.keepD 65536)
  if [[ -n $got ]] && bounds=$(in_bounds "${got#* }"); then
    pass "$what: default rate: keepD $bounds"
  else
    fail "$what: default rate: keepD '$got': ${bounds:-no capture}" "$dir/capture.err"
  fi
  run_cycles "$what" "$dir" "$pid" "$v"
  e2e_stop_pids
}

# stripped_case <version>: --rate 1 and an exact keepB on the stripped PIE.
stripped_case() {
  local v=$1 what="$1 stripped PIE" dir=$work/$1-stripped
  start_target "$dir" env -- "$(go_program "$v" sampling-amd64-pie-stripped)" || {
    fail "$what: the target did not start" "$dir/target.err"
    return
  }
  # No "before" check here: whether the capture of a stripped binary sees
  # the linker's flag is the capture's judgement (sampling_state_test.sh).
  if enable_expect "$what" "$dir" "$target_pid" "^runtime.MemProfileRate 0 -> 1 " --rate 1 -v; then
    if ! grep -q 'runtime.MemProfileRate at .* (recovered from' "$dir/enable.err"; then
      fail "$what: -v does not say the address was recovered from machine code" "$dir/enable.err"
    fi
    exact_keep "$what" "$dir" "$target_pid" B 1000 4096
  fi
  e2e_stop_pids
}

# damage <in> <out>: a copy of the stripped binary whose runtime.profilealloc
# and runtime.allocmcache are int3 bytes (found through its pclntab with Go's
# debug/gosym), so that runtime.MemProfileRate cannot be recovered from it.
damage() {
  mkdir -p "$work/damage"
  cat >"$work/damage/main.go" <<'GO'
package main

import (
	"debug/elf"
	"debug/gosym"
	"log"
	"os"
	"strings"
)

func main() {
	f, err := elf.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	// .data.rel.ro.gopclntab in some PIEs.
	var pcln []byte
	for _, s := range f.Sections {
		if strings.HasSuffix(s.Name, ".gopclntab") {
			if pcln, err = s.Data(); err != nil {
				log.Fatal(err)
			}
		}
	}
	if pcln == nil {
		log.Fatal("no .gopclntab section")
	}
	table, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, f.Section(".text").Addr))
	if err != nil {
		log.Fatal(err)
	}
	out, err := os.ReadFile(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"runtime.profilealloc", "runtime.allocmcache"} {
		fn := table.LookupFunc(name)
		if fn == nil {
			log.Fatalf("%s not in the pclntab", name)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && fn.Entry >= p.Vaddr && fn.End <= p.Vaddr+p.Filesz {
				for a := fn.Entry; a < fn.End; a++ {
					out[a-p.Vaddr+p.Off] = 0xcc
				}
			}
		}
	}
	if err := os.WriteFile(os.Args[2], out, 0o755); err != nil {
		log.Fatal(err)
	}
}
GO
  (cd "$work/damage" && env GOTOOLCHAIN=local GO111MODULE=off CGO_ENABLED=0 go run main.go "$1" "$2")
}

# damaged_case <version>: the refusal, and nothing written.
damaged_case() {
  local v=$1 what="$1 stripped PIE, --exe without the recoverable code" dir=$work/$1-damaged rc
  local binary
  binary=$(go_program "$v" sampling-amd64-pie-stripped)
  if ! damage "$binary" "$work/$v-damaged.exe" >"$work/$v-damage.log" 2>&1; then
    fail "$what: could not make the damaged copy" "$work/$v-damage.log"
    return
  fi
  start_target "$dir" env -- "$binary" || {
    fail "$what: the target did not start" "$dir/target.err"
    return
  }
  enable "$dir" "$target_pid" --rate 1 --exe "$work/$v-damaged.exe"
  rc=$?
  # Nothing written: the capture's -v still reads the rate as 0.
  "$tool" "$target_pid" -v -o "$dir/after.pb.gz" 2>"$dir/after.err"
  if [[ $rc == 6 ]] && grep -q 'runtime.MemProfileRate could not be recovered' "$dir/enable.err" &&
    grep -q 'MemProfileRate 0, cycle' "$dir/after.err"; then
    pass "$what: refused (exit 6): $(head -n 1 "$dir/enable.err"); still rate 0"
  else
    fail "$what: exit $rc (want 6 naming runtime.MemProfileRate, nothing written)" \
      "$dir/enable.err"
  fi
  e2e_stop_pids
}

# qemu_case <version>: the arm64 build under qemu-aarch64-static.
qemu_case() {
  local v=$1 what="$1 arm64 under qemu" dir=$work/$1-arm64
  start_target "$dir" "$qemu" -L "$sysroot" -- "$(go_program "$v" sampling-arm64-exe)" || {
    fail "$what: the target did not start" "$dir/target.err"
    return
  }
  refused_before "$what" "$dir" "$target_pid"
  enable_expect "$what" "$dir" "$target_pid" "^runtime.MemProfileRate 0 -> 1 in process $target_pid" \
    --rate 1 && exact_keep "$what" "$dir" "$target_pid" B 1000 4096
  e2e_stop_pids
}

declare -A toolchain_state
e2e_toolchain_states wanted
for v in $(toolchain_versions); do
  [[ ${toolchain_state[$v]:-} == ok ]] || continue
  full_case "$v"
  stripped_case "$v"
done
for v in go1.18.10 go1.26.8; do
  [[ ${toolchain_state[$v]:-} == ok ]] && damaged_case "$v"
done
for v in $qemu_versions; do
  wanted "$v" || continue
  if [[ -z $qemu || ! -e $sysroot/lib/ld-linux-aarch64.so.1 ]]; then
    skip "$v arm64 under qemu: qemu-aarch64-static or libc6-arm64-cross is not installed"
  elif ! toolchain_arm64_live "$v"; then
    fail "$v arm64 under qemu: not marked arm64-live in tests/go_toolchains.txt"
  elif [[ ${toolchain_state[$v]:-} == ok ]]; then
    qemu_case "$v"
  fi
done
e2e_finish
