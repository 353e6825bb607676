#!/usr/bin/env bash
# What a cold capture pays for process start-up and for its fresh memory
# (issue 16, issue 27): the dynamic and the static build, each as built
# (the owners of the large buffers advise huge pages: src/base/huge_pages.h)
# and with glibc's malloc asking for huge pages for everything
# (GLIBC_TUNABLES=glibc.malloc.hugetlb=1), paired, on one benchtarget per
# size; and, with BASE, an older build beside them. Prints tables of
# medians; no thresholds.
#
#   bash bench/startup.sh
#   SIZES=100000 RUNS=11 BASE=/tmp/goheap2pprof-old bash bench/startup.sh
#
# Environment:
#   SIZES        bucket counts (default "100000 250000"); "deep" is bench.sh's deep variant:
#                DEEP buckets (default 10000) of DEEP_FRAMES-frame stacks (default 1000)
#   RUNS         paired rounds per size and pause; medians of these (default 9)
#   PAUSES       seconds to sleep before each capture; "1" shows the cost of touching
#                fresh memory after the machine was idle (default "0 1")
#   BUILD_DIR    the dynamic build (default <repo>/build-bench, Release)
#   STATIC_DIR   the static build (default <repo>/build-bench-static, Release,
#                -DGOHEAP2PPROF_STATIC=ON); SKIP_STATIC=1 leaves it out
#   SKIP_BUILD   1 uses the goheap2pprof already in BUILD_DIR and STATIC_DIR
#   BASE         another goheap2pprof binary to measure in the same rounds
#   GO           the Go command for the target (default "env GOTOOLCHAIN=local go")
#
# Until 2026-12-03 the tool re-executed itself with glibc.malloc.hugetlb=1
# (a second process start); a BASE from before then shows that. Wall time is
# the parent's clock around fork+exec+wait; CPU is the child's user+sys from
# wait4 (microseconds, every process of the run); faults are its minor
# faults. Needs python3 for wait4.
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$src/bench/lib.sh"
sizes=${SIZES:-100000 250000}
runs=${RUNS:-9}
pauses=${PAUSES:-0 1}
dynamic=${BUILD_DIR:-$src/build-bench}
static=${STATIC_DIR:-$src/build-bench-static}
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"

die() {
  echo "startup: $*" >&2
  exit 1
}
for cmd in cmake ninja python3; do
  command -v $cmd >/dev/null || die "$cmd not found"
done

build() {  # build <dir> <cmake args...>
  local dir=$1
  shift
  [[ ${SKIP_BUILD:-0} == 1 ]] && return
  echo "building goheap2pprof in $dir" >&2
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF "$@" \
    >/dev/null || die "cmake configure of $dir failed"
  cmake --build "$dir" -j"$(nproc)" --target goheap2pprof >/dev/null || die "build in $dir failed"
}
build "$dynamic"
variants=("dynamic=:$dynamic/goheap2pprof"
  "dynamic, malloc huge pages=glibc.malloc.hugetlb=1:$dynamic/goheap2pprof")
if [[ ${SKIP_STATIC:-0} != 1 ]]; then
  build "$static" -DGOHEAP2PPROF_STATIC=ON
  variants+=("static=:$static/goheap2pprof"
    "static, malloc huge pages=glibc.malloc.hugetlb=1:$static/goheap2pprof")
fi
if [[ -n ${BASE:-} ]]; then
  [[ -x $BASE ]] || die "BASE=$BASE is not an executable"
  variants+=("base $BASE=:$BASE")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/goheap2pprof-startup.XXXXXX")
target_pid=""
cleanup() {
  bench_stop "$target_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
(cd "$src/testdata/benchtarget" && "${go_cmd[@]}" build -o "$work/benchtarget" .) ||
  die "building testdata/benchtarget failed"

echo "goheap2pprof start-up and fresh memory, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
go_version=$("${go_cmd[@]}" version | awk '{print $3}')
for n in $sizes; do
  if [[ $n == deep ]]; then
    n="${DEEP:-10000} deep"
    GODEBUG=profstackdepth=1024 "$work/benchtarget" -buckets "${DEEP:-10000}" \
      -deep "${DEEP_FRAMES:-1000}" >"$work/target.out" 2>"$work/target.err" &
  else
    "$work/benchtarget" -buckets "$n" >"$work/target.out" 2>"$work/target.err" &
  fi
  target_pid=$!
  for _ in $(seq 600); do grep -q READY "$work/target.out" && break; sleep 0.5; done
  grep -q READY "$work/target.out" || die "benchtarget -buckets $n did not get ready"
  for pause in $pauses; do
    echo
    echo "### $go_version, $n buckets, sleep $pause s before each capture, $runs paired rounds (medians)"
    python3 - "$runs" "$pause" "$target_pid" "$work/out.pb.gz" "${variants[@]}" <<'EOF'
import os, statistics, subprocess, sys, time
runs, pause, pid, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
variants = []
for spec in sys.argv[5:]:
    label, rest = spec.split("=", 1)
    tunables, binary = rest.split(":", 1)
    variants.append((label, tunables, binary))
got = {label: [] for label, _, _ in variants}
for r in range(runs):
    for label, tunables, binary in variants if r % 2 == 0 else variants[::-1]:
        env = dict(os.environ)
        env.pop("GLIBC_TUNABLES", None)
        if tunables:
            env["GLIBC_TUNABLES"] = tunables
        time.sleep(pause)
        start = time.perf_counter()
        child = subprocess.Popen([binary, pid, "-o", out], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = (time.perf_counter() - start) * 1000
        if status != 0:
            sys.exit(f"{label}: capture failed (status {status})")
        got[label].append((wall, (usage.ru_utime + usage.ru_stime) * 1000, usage.ru_minflt,
                           usage.ru_maxrss / 1024))
print("| variant | wall ms | CPU ms | minor faults | peak RSS MiB |")
print("|---|---:|---:|---:|---:|")
for label, _, _ in variants:
    m = [statistics.median(v[i] for v in got[label]) for i in range(4)]
    print(f"| {label} | {m[0]:.1f} | {m[1]:.1f} | {m[2]:.0f} | {m[3]:.0f} |")
EOF
  done
  kill "$target_pid" 2>/dev/null
  wait "$target_pid" 2>/dev/null
  target_pid=""
done
