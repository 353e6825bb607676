#!/usr/bin/env bash
# goheap2pprof benchmark (issue 5): capture cost against the target serving
# its own /debug/pprof/heap, for 1k..250k distinct heap buckets and 1024-deep
# stacks, then the harmlessness measurement (bench/harm.sh). Prints tables;
# there are no thresholds: the goal columns are computed, never enforced.
#
#   bash bench/bench.sh                       # everything (~10 minutes)
#   SIZES="1000 10000" DEEP=0 HARM=0 bash bench/bench.sh
#
# Environment:
#   SIZES         bucket counts to build targets for (default "1000 10000 100000 250000")
#   DEEP          buckets of the deep-stack variant, 0 to skip (default 10000)
#   DEEP_FRAMES   frames of the deep variant's recursion (default 1000; GODEBUG=profstackdepth=1024)
#   REPEAT        measurements per size; the tables show medians (default 5)
#   HARM          1 runs bench/harm.sh at the end (default 1)
#   STATIC        1 (default) measures the static build (-DGOHEAP2PPROF_STATIC=ON, what
#                 scripts/package.sh ships): a dynamic goheap2pprof pays some 9 ms of CPU per
#                 process start in the dynamic loader and library mappings, a static one about
#                 2 ms (bench/startup.sh); 0 measures the dynamic build
#   BUILD_DIR     where the tool is built (default <repo>/build-bench-static, or
#                 <repo>/build-bench with STATIC=0; Release)
#   TOOL          a goheap2pprof binary to measure instead of building one (for
#                 before/after runs: a copy of each build, so a rebuild during
#                 the run does not change what is measured)
#   GO            the Go command for the targets (default "env GOTOOLCHAIN=local go", i.e. Go 1.26.8)
#   GOS           several toolchains at once, e.g. "local go1.27.3 /usr/lib/go-1.19/bin/go":
#                 "local" is $GO, goX.Y.Z is GOTOOLCHAIN=goX.Y.Z go, a path is that go
#                 command; every size is measured for each (the deep variant for Go >= 1.23)
#
# Each round is paired: our cold capture, the target's endpoint, a repeated
# capture through `goheap2pprof serve` (its worker keeps the process's
# capture state; the first, unmeasured fetch made it), the endpoint again.
# The speed-ups are medians of the per-round ratios (endpoint wall / ours).
#
# What each column is:
#   ours wall/CPU    goheap2pprof's wall time and user+sys CPU (/usr/bin/time), medians
#   curl wall        time_total of curl http://127.0.0.1:<port>/debug/pprof/heap
#   target CPU       the target's utime+stime (/proc/<pid>/stat, CLK_TCK) over the
#                    curl, over our capture, and over an idle interval as long as our
#                    capture (the noise floor)
#   ratio            curl wall / ours wall
#   bucket MiB       the target's own count of its profiling-bucket memory:
#                    MemStats.BuckHashSys minus the fixed 179999-pointer hash table
#                    (= sum of 48 + 8*nstk + 128 bytes per heap bucket)
#   syscalls/64KiB   read syscalls per 64 KiB of bucket memory (goal <= 1)
#   RSS/(3B+50M)     our peak RSS over 3 x bucket memory + 50 MiB (goal <= 1)
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$src/bench/lib.sh"
sizes=${SIZES:-1000 10000 100000 250000}
deep=${DEEP:-10000}
deep_frames=${DEEP_FRAMES:-1000}
repeat=${REPEAT:-5}
harm=${HARM:-1}
static=${STATIC:-1}
if [[ $static == 1 ]]; then
  build=${BUILD_DIR:-$src/build-bench-static}
  static_flag=ON
else
  build=${BUILD_DIR:-$src/build-bench}
  static_flag=OFF
fi
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"
clk_tck=$(getconf CLK_TCK)

die() {
  echo "bench: $*" >&2
  exit 1
}

for cmd in cmake ninja curl awk; do
  command -v $cmd >/dev/null || die "$cmd not found (bash scripts/install-deps.sh)"
done
if [[ ! -x /usr/bin/time ]]; then
  echo "bench: installing GNU time for peak RSS" >&2
  apt-get install -y time >/dev/null 2>&1 || die "/usr/bin/time missing (apt-get install time)"
fi

# --- build -------------------------------------------------------------------
if [[ -n ${TOOL:-} ]]; then
  [[ -x $TOOL ]] || die "TOOL=$TOOL is not an executable"
  tool=$TOOL
else
  echo "building goheap2pprof (Release, static=$static_flag) in $build" >&2
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGOHEAP2PPROF_STATIC="$static_flag" >/dev/null ||
    die "cmake configure failed"
  cmake --build "$build" -j"$(nproc)" --target goheap2pprof >/dev/null || die "build failed"
  tool=$build/goheap2pprof
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/goheap2pprof-bench.XXXXXX")
target_pid=""
serve_pid=""
cleanup() {
  bench_stop "$serve_pid" "$target_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# go_for <spec>: the Go command for a GOS entry, into the array gocmd.
go_for() {
  case $1 in
    local) gocmd=("${go_cmd[@]}") ;;
    go1.*) gocmd=(env "GOTOOLCHAIN=$1" go) ;;
    *) gocmd=(env GOTOOLCHAIN=local "$1") ;;
  esac
}
read -r -a go_specs <<<"${GOS:-local}"
go_version=""
for spec in "${go_specs[@]}"; do
  go_for "$spec"
  v=$("${gocmd[@]}" version) || die "no Go toolchain (${gocmd[*]})"
  v=$(awk '{print $3}' <<<"$v")
  go_version+="$v "
  (cd "$src/testdata/benchtarget" && "${gocmd[@]}" build -o "$work/benchtarget-$v" .) ||
    die "building testdata/benchtarget with $v failed"
done

# One serve for the repeated captures, as a long-running agent would be.
"$tool" serve --listen 127.0.0.1:0 -v >"$work/serve.out" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 50); do grep -q 'listening on' "$work/serve.log" && break; sleep 0.1; done
serve_addr=$(sed -n 's/.*listening on //p' "$work/serve.log" | head -n 1)
[[ -n $serve_addr ]] || die "goheap2pprof serve did not start: $(cat "$work/serve.log")"

# --- helpers -------------------------------------------------------------------
# cpu_ticks <pid>: utime+stime of the whole process, in clock ticks.
cpu_ticks() {
  local stat
  stat=$(<"/proc/$1/stat") || return 1
  stat=${stat##*) }  # fields after "(comm) "; utime, stime are fields 14, 15
  read -r -a f <<<"$stat"
  echo $((f[11] + f[12]))
}
ticks_ms() { echo $(($1 * 1000 / clk_tck)); }
now_ns() { date +%s%N; }
median() { sort -n | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# start_target <label> <args...>: starts benchtarget, sets target_pid, port,
# and waits for READY.
start_target() {
  local label=$1
  shift
  "$@" >"$work/target.out" 2>"$work/target.err" &
  target_pid=$!
  local deadline=$((SECONDS + 600))
  until grep -q '^READY ' "$work/target.out" 2>/dev/null; do
    if ! kill -0 "$target_pid" 2>/dev/null || ((SECONDS >= deadline)); then
      cat "$work/target.err" >&2
      die "$label: target did not print READY"
    fi
    sleep 0.2
  done
  read -r _ _ port _ <"$work/target.out"
}

stop_target() {
  kill "$target_pid" 2>/dev/null
  wait "$target_pid" 2>/dev/null
  target_pid=""
}

# measure <label>: REPEAT rounds of (our capture, idle interval, curl) against
# the running target; appends one result line to $work/results.
measure() {
  local label=$1 r t0 t1 s e
  local -a ours_wall ours_cpu ours_rss calls bytes ours_size tgt_ours idle curl_wall tgt_curl curl_size
  local -a rep_wall curl2_wall ratio_cold ratio_rep
  # Warm-up: the first fetch creates the buckets of the pprof handler's own
  # allocations (MemProfileRate is 1); afterwards the bucket set is stable.
  curl -sf --retry 2 -o "$work/curl.pb.gz" "http://127.0.0.1:$port/debug/pprof/heap" || die "$label: curl failed"
  "$tool" "$target_pid" -o "$work/ours.pb.gz" 2>/dev/null || die "$label: capture failed"
  # A few more fetches, so that the handler's own buckets stop appearing,
  # and the repeated captures' first (cold) one.
  for _ in 1 2 3; do curl -sf -o /dev/null "http://127.0.0.1:$port/debug/pprof/heap"; done
  curl -sf --retry 2 -o /dev/null "http://$serve_addr/debug/pprof/heap?pid=$target_pid" ||
    die "$label: serve capture failed"
  local buckets bucket_bytes
  read -r buckets bucket_bytes < <(curl -sf "http://127.0.0.1:$port/bucketmem")
  for ((r = 0; r < repeat; r++)); do
    t0=$(cpu_ticks "$target_pid")
    s=$(now_ns)
    /usr/bin/time -f '%U %S %M' -o "$work/time" "$tool" "$target_pid" -o "$work/ours.pb.gz" --stats \
      2>"$work/stats" || die "$label: capture failed: $(cat "$work/stats")"
    e=$(now_ns)
    t1=$(cpu_ticks "$target_pid")
    ours_wall+=($(((e - s) / 1000000)))
    read -r u sy rss <"$work/time"
    ours_cpu+=($(awk -v u="$u" -v s="$sy" 'BEGIN {print int((u + s) * 1000 + 0.5)}'))
    ours_rss+=("$rss")
    tgt_ours+=($(ticks_ms $((t1 - t0))))
    calls+=($(awk '/read syscalls/ {print $3}' "$work/stats"))
    bytes+=($(awk '/bytes read/ {print $3}' "$work/stats"))
    ours_size+=($(stat -c %s "$work/ours.pb.gz"))

    # The noise floor: the idle target over as long as our capture took.
    t0=$(cpu_ticks "$target_pid")
    sleep "$(awk -v ns=$((e - s)) 'BEGIN {printf "%.3f", ns / 1e9}')"
    t1=$(cpu_ticks "$target_pid")
    idle+=($(ticks_ms $((t1 - t0))))

    t0=$(cpu_ticks "$target_pid")
    w=$(curl -sf --retry 2 -o "$work/curl.pb.gz" -w '%{time_total}' "http://127.0.0.1:$port/debug/pprof/heap") ||
      die "$label: curl failed"
    t1=$(cpu_ticks "$target_pid")
    curl_wall+=($(awk -v w="$w" 'BEGIN {print int(w * 1000 + 0.5)}'))
    tgt_curl+=($(ticks_ms $((t1 - t0))))
    curl_size+=($(stat -c %s "$work/curl.pb.gz"))

    # The repeated capture through serve, then the endpoint again.
    w=$(curl -sf --retry 2 -o "$work/rep.pb.gz" -w '%{time_total}' "http://$serve_addr/debug/pprof/heap?pid=$target_pid") ||
      die "$label: serve capture failed"
    rep_wall+=($(awk -v w="$w" 'BEGIN {print int(w * 1000 + 0.5)}'))
    w=$(curl -sf --retry 2 -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/debug/pprof/heap") ||
      die "$label: curl failed"
    curl2_wall+=($(awk -v w="$w" 'BEGIN {print int(w * 1000 + 0.5)}'))
    ratio_cold+=($(awk -v c="${curl_wall[-1]}" -v o="${ours_wall[-1]}" 'BEGIN {printf "%.2f", c / (o > 0 ? o : 1)}'))
    ratio_rep+=($(awk -v c="${curl2_wall[-1]}" -v o="${rep_wall[-1]}" 'BEGIN {printf "%.2f", c / (o > 0 ? o : 1)}'))
  done
  m() { printf '%s\n' "$@" | median; }
  echo "$label $buckets $bucket_bytes $(m "${ours_wall[@]}") $(m "${ours_cpu[@]}") $(m "${curl_wall[@]}")" \
    "$(m "${tgt_curl[@]}") $(m "${tgt_ours[@]}") $(m "${idle[@]}") $(m "${calls[@]}") $(m "${bytes[@]}")" \
    "$(m "${ours_rss[@]}") $(m "${ours_size[@]}") $(m "${curl_size[@]}")" \
    "$(printf '%s,' "${tgt_ours[@]}") $(printf '%s,' "${tgt_curl[@]}")" >>"$work/results"
  echo "$label $buckets $(m "${ours_wall[@]}") $(m "${ours_cpu[@]}") $(m "${curl_wall[@]}") $(m "${ratio_cold[@]}")" \
    "$(m "${rep_wall[@]}") $(m "${curl2_wall[@]}") $(m "${ratio_rep[@]}")" >>"$work/paired"
  # Also to the log as it goes, so an interrupted run keeps what it measured.
  echo "paired: $(tail -n 1 "$work/paired")" >&2
  echo "results: $(tail -n 1 "$work/results")" >&2
}

# --- run -----------------------------------------------------------------------
: >"$work/results"
: >"$work/paired"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for v in $go_version; do
  for n in $sizes; do
    echo "$v size $n: starting target" >&2
    start_target "$n" "$work/benchtarget-$v" -buckets "$n"
    measure "$v/$n"
    stop_target
  done
  minor=$(sed 's/^go1\.\([0-9]*\).*/\1/' <<<"$v")
  if ((deep > 0 && minor >= 23)); then
    echo "$v deep ($deep buckets, $deep_frames frames): starting target" >&2
    start_target deep env GODEBUG=profstackdepth=1024 "$work/benchtarget-$v" -buckets "$deep" -deep "$deep_frames"
    measure "$v/deep-$deep_frames"
    stop_target
  fi
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# --- tables --------------------------------------------------------------------
echo
echo "goheap2pprof $("$tool" --version 2>/dev/null | head -n 1); targets built with $go_version"
echo "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); load average at start $load_start, at end $load_end"
echo "medians of $repeat runs; CLK_TCK $clk_tck (target CPU resolution $((1000 / clk_tck)) ms)"
echo
echo "Capture time: goheap2pprof vs the target serving /debug/pprof/heap (MemProfileRate 1)"
echo
awk 'BEGIN {
  printf "| target | buckets | ours wall ms | ours CPU ms | curl wall ms | target CPU for curl ms | speed-up (curl wall / ours wall) | target CPU during ours ms | target CPU idle ms |\n"
  printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n" }
  { printf "| %s | %d | %d | %d | %d | %d | %.1fx | %d | %d |\n", $1, $2, $4, $5, $6, $7, ($4 > 0 ? $6 / $4 : 0), $8, $9 }' "$work/results"
echo
echo "Side by side, paired per round (medians; speed-up = median of per-round endpoint wall / ours):"
echo "cold = a fresh goheap2pprof <pid>; repeated = goheap2pprof serve capturing the process again"
echo
awk 'BEGIN {
  printf "| target | buckets | cold ms | cold CPU ms | endpoint ms | cold speed-up | repeated ms | endpoint ms | repeated speed-up |\n"
  printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n" }
  { printf "| %s | %d | %d | %d | %d | %.1fx | %d | %d | %.1fx |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$work/paired"
echo
echo "Resources: reads and memory against the goals (<= 1 read syscall per 64 KiB of bucket memory; peak RSS <= 3 x bucket memory + 50 MiB)"
echo
awk 'BEGIN {
  printf "| target | bucket memory MiB | read syscalls | syscalls per 64 KiB | bytes read MiB | peak RSS MiB | RSS / (3 x bucket + 50 MiB) | profile KiB ours | profile KiB curl |\n"
  printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n" }
  { mib = $3 / 1048576
    printf "| %s | %.1f | %d | %.3f | %.1f | %.1f | %.2f | %.0f | %.0f |\n", $1, mib, $10, $10 / ($3 / 65536), $11 / 1048576, $12 / 1024, ($12 / 1024) / (3 * mib + 50), $13 / 1024, $14 / 1024 }' "$work/results"
echo
echo "Target CPU (ms, utime+stime) per run, during our capture | during curl:"
awk '{ printf "  %-12s ours %s | curl %s\n", $1, $15, $16 }' "$work/results" | sed 's/,\( \|$\)/\1/g'

if ((harm == 1)); then
  echo
  BUILD_DIR=$build SKIP_BUILD=1 bash "$src/bench/harm.sh"
fi
