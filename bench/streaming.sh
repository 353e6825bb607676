#!/usr/bin/env bash
# Issue 42's bench: what a one-shot capture costs in memory and time as the
# target's heap buckets grow, for each bucket shape, Go release and bucket
# count asked for, against the target's own /debug/pprof/heap. Several
# goheap2pprof binaries can be measured on the same target in one run
# (before/after a change); the rounds are paired: each round fetches the
# endpoint, then (SETTLE seconds later) runs every tool's cold capture, the
# tools taking turns at going first, and every tool's repeated capture through
# its own `goheap2pprof serve`, in the same turns.
#
#   bash bench/streaming.sh                              # quick: Go 1.26.8, binary+short, 100k
#   GOS="1.19.8 1.26.8 1.27.3" SHAPES="short binary deep" N="100000 250000" bash bench/streaming.sh
#   TOOLS="before=/tmp/old/goheap2pprof after=build-rel/goheap2pprof" bash bench/streaming.sh
#
# Environment:
#   N       bucket counts to create, each a target (default 100000)
#   SHAPES  any of (default "binary short"):
#           short: depth-4 stacks (a generated call site, its caller, main.main,
#             runtime.main; plus runtime.goexit), one site per bucket: the sites
#             are generated at build time (testdata/benchtarget/gensites);
#           binary: one bucket per call path of a binary recursion (stacks
#             log2(N) frames deep: 17 at 100k and 18 at 250k);
#           deep: the same below 975 frames of recursion, about 1,000 frames
#             in all (GODEBUG=profstackdepth=1024; about 8 KiB of bucket memory a
#             bucket: 800 MiB at 100k; Go 1.19 keeps 32 frames at most, so there
#             it is 32 deep). Not -deep 1000: Go 1.26.8 dies with "fatal error:
#             bad profile stack count" once a stack passes 1,024 frames
#   GOS     Go releases of the target (default 1.26.8): 1.19.8 is
#           /usr/lib/go-1.19/bin/go (apt-get install golang-1.19-go), 1.26.8 `go`
#           with GOTOOLCHAIN=local, any other is GOTOOLCHAIN=go<version> go
#   RUNS    paired rounds (default 3); medians and min-max spreads are printed
#   SETTLE  seconds between the endpoint's fetch and the captures (default 2), so
#           that the GC work the fetch leaves is not counted as the target's
#           CPU during the captures
#   TOOLS   "label=path ..." (default "tool=<repo>/build-rel/goheap2pprof", a Release build)
#
# Columns: peak RSS is /usr/bin/time's maximum resident set of the cold capture;
# output is the written .pb.gz and its uncompressed size; cold = a fresh
# `goheap2pprof <pid>`, repeated = a fetch from serve, whose worker keeps the
# process's capture state (its first, unmeasured fetch made it); endpoint = curl
# of the target's own /debug/pprof/heap (the two fetches timed by curl's
# time_total, without curl's own start-up; a cold capture is timed whole, its
# process's start-up and exit included); x = endpoint / capture of the same
# round (the goals: cold >= 10x, repeated >= 30x); target CPU = the target's
# utime+stime (/proc/<pid>/stat, 10 ms ticks) over all the tool's captures of
# the target (it is otherwise idle), and over one endpoint fetch for contrast;
# cold CPU = the tool's user+sys for a cold capture, endpoint CPU = the
# target's for one fetch, CPU x = their ratio per round: on a loaded machine
# the wall times measure the run queue as much as the work, the CPU does not.
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
# Whether the tools' profiles mean the same: the Release profdiff where there
# is one (the Debug one takes minutes over the deep shape's 190 MB profiles).
profdiff=$src/build-rel/profdiff
[[ -x $profdiff ]] || profdiff=$src/build-quick/profdiff
# shellcheck source=bench/lib.sh
source "$src/bench/lib.sh"
read -r -a sizes <<<"${N:-100000}"
read -r -a shapes <<<"${SHAPES:-binary short}"
read -r -a gos <<<"${GOS:-1.26.8}"
runs=${RUNS:-3}
read -r -a tools <<<"${TOOLS:-tool=$src/build-rel/goheap2pprof}"

die() {
  echo "streaming: $*" >&2
  exit 1
}
[[ -x /usr/bin/time ]] || die "/usr/bin/time missing (apt-get install time)"
for t in "${tools[@]}"; do [[ -x ${t#*=} ]] || die "${t#*=} is not an executable"; done
for s in "${shapes[@]}"; do [[ $s =~ ^(short|binary|deep)$ ]] || die "SHAPES: $s is not short, binary or deep"; done

work=$(mktemp -d "${TMPDIR:-/tmp}/goheap2pprof-streaming.XXXXXX")
target_pid=""
serve_pids=()
cleanup() {
  bench_stop "${serve_pids[@]}" "$target_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# go_command <version>: the command that builds with that Go release.
go_command() {
  case $1 in
    1.19.8) echo "env GOTOOLCHAIN=local /usr/lib/go-1.19/bin/go" ;;
    1.26.8) echo "env GOTOOLCHAIN=local go" ;;
    *) echo "env GOTOOLCHAIN=go$1 go" ;;
  esac
}

# build_target <version>: $work/benchtarget-<version>, with generated call sites
# for the largest N when the short shape is asked for.
build_target() {
  local dir=$work/src-$1 go_cmd max=0 n
  read -r -a go_cmd <<<"$(go_command "$1")"
  rm -rf "$dir" && cp -a "$src/testdata/benchtarget" "$dir" || die "copying benchtarget failed"
  if [[ " ${shapes[*]} " == *" short "* ]]; then
    for n in "${sizes[@]}"; do ((n > max)) && max=$n; done
    (cd "$dir" && "${go_cmd[@]}" run ./gensites -sites "$max" -o sites_gen.go) ||
      die "generating call sites with Go $1 failed"
  fi
  (cd "$dir" && nice "${go_cmd[@]}" build -o "$work/benchtarget-$1" .) ||
    die "building testdata/benchtarget with Go $1 failed"
}

# start_target <version> <shape> <n>: sets target_pid and port.
start_target() {
  local target=("$work/benchtarget-$1" -buckets "$3" -sizes 1)
  case $2 in
    short) target+=(-short) ;;
    deep) target=(env GODEBUG=profstackdepth=1024 "${target[@]}" -deep 975) ;;
  esac
  "${target[@]}" >"$work/target.out" 2>"$work/target.err" &
  target_pid=$!
  for _ in $(seq 3000); do
    grep -q '^READY ' "$work/target.out" 2>/dev/null && break
    kill -0 "$target_pid" 2>/dev/null || die "target died: $(cat "$work/target.err")"
    sleep 0.2
  done
  read -r _ _ port _ <"$work/target.out" || die "target did not print READY"
}

# One serve per tool, for the repeated captures.
declare -A serve_addr serve_failed
for t in "${tools[@]}"; do
  label=${t%%=*}
  "${t#*=}" serve --listen 127.0.0.1:0 -v 2>"$work/serve-$label.log" >/dev/null &
  serve_pids+=($!)
  for _ in $(seq 50); do grep -qs 'listening on' "$work/serve-$label.log" && break; sleep 0.1; done
  serve_addr[$label]=$(sed -n 's/.*listening on //p' "$work/serve-$label.log" | head -n 1)
  [[ -n ${serve_addr[$label]} ]] || die "$label serve did not start"
done

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
# The target's utime+stime in ms (fields 14 and 15 of /proc/<pid>/stat,
# counted after the command name, which may hold spaces).
target_cpu_ms() {
  local rest
  rest=$(sed 's/^.*) //' "/proc/$target_pid/stat")
  awk -v t="$(getconf CLK_TCK)" '{print ($12 + $13) * 1000 / t}' <<<"$rest"
}
# timed <row prefix> <command...>: runs it, appends "<prefix> <ms> <target cpu ms>" to rows.
timed() {
  local prefix=$1 s c
  shift
  c=$(target_cpu_ms)
  s=$(date +%s%N)
  "$@" || return 1
  echo "$prefix $(ms_since "$s") $(($(target_cpu_ms) - c))" >>"$work/rows"
}

# fetched <row prefix> <url>: like timed, for an HTTP fetch: the time is
# curl's own time_total (from the connection to the last byte), which leaves
# out curl's start-up (about 8 ms here: it loads its libraries), a cost of
# the measuring client, not of either server.
fetched() {
  local prefix=$1 c t
  c=$(target_cpu_ms)
  t=$(curl -sf -o /dev/null -w '%{time_total}' "$2") || return 1
  echo "$prefix $(awk -v t="$t" 'BEGIN {printf "%.1f", t * 1000}') $(($(target_cpu_ms) - c))" >>"$work/rows"
}

# One target: warm up, then RUNS paired rounds into $work/rows. Returns 1,
# with the tool's message in `failed`, when a cold capture fails.
measure() {
  local endpoint=http://127.0.0.1:$port/debug/pprof/heap r t label serve_url
  # Warm-up: the handler's own first allocations make buckets; then the set is stable.
  for _ in 1 2 3; do curl -sf -o /dev/null "$endpoint" || die "endpoint failed"; done
  # A serve that cannot capture the target is a cell of the table, not the end.
  serve_failed=()
  local code
  for t in "${tools[@]}"; do
    label=${t%%=*}
    code=$(curl -s -o "$work/serve-reply" -w '%{http_code}' \
      "http://${serve_addr[$label]}/debug/pprof/heap?pid=$target_pid")
    [[ $code == 200 ]] ||
      serve_failed[$label]="serve: HTTP $code $(head -c 120 "$work/serve-reply" | tr -d '\n|')"
  done
  for ((r = 0; r < runs; r++)); do
    # The endpoint first: the GC work its garbage leaves runs after the
    # fetch, and is not to be counted against the captures that follow.
    fetched "$r endpoint endpoint" "$endpoint" || die "endpoint failed"
    sleep "${SETTLE:-2}"
    # The first capture after the settle runs slower (bench/README.md: fresh
    # memory after a quiet spell), so the tools take turns at going first.
    local order=("${tools[@]:r % ${#tools[@]}}" "${tools[@]:0:r % ${#tools[@]}}")
    for t in "${order[@]}"; do
      label=${t%%=*}
      if ! timed "$r $label cold" /usr/bin/time -f '%M %U %S' -o "$work/rss" "${t#*=}" "$target_pid" \
        -o "$work/$label.pb.gz" 2>"$work/$label.err"; then
        failed="$label: $(grep -v '^Command' "$work/$label.err" | head -n 1 | cut -c1-160)"
        return 1
      fi
      read -r rss user sys <"$work/rss"
      echo "$r $label size $rss $(stat -c %s "$work/$label.pb.gz")" \
        "$(zcat "$work/$label.pb.gz" | wc -c) $(awk -v u="$user" -v s="$sys" 'BEGIN {print (u + s) * 1000}')" \
        >>"$work/rows"
    done
    # Repeated fetches take turns at going first too.
    for t in "${order[@]}"; do
      label=${t%%=*}
      [[ -z ${serve_failed[$label]:-} ]] || continue
      serve_url="http://${serve_addr[$label]}/debug/pprof/heap?pid=$target_pid"
      fetched "$r $label repeated" "$serve_url" || die "$label serve capture failed"
    done
  done
  for t in "${tools[@]:1}"; do
    "$profdiff" "$work/${tools[0]%%=*}.pb.gz" "$work/${t%%=*}.pb.gz" >/dev/null 2>&1 ||
      echo "profdiff ${tools[0]%%=*} vs ${t%%=*}: differ (or no $profdiff)" >&2
  done
}

# med [digits]: "median (min-max)" of the values on stdin, to that many
# significant digits (default 4).
med() {
  sort -g | awk -v d="${1:-4}" '
    function f(x) {return x >= 1000 ? sprintf("%d", x + 0.5) : sprintf("%." d "g", x)}
    {v[NR] = $1} END {if (NR == 0) {print "-"; exit}
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%s (%s-%s)\n", f(m), f(v[1]), f(v[NR])}'
}
col() { awk -v l="$1" -v k="$2" -v c="$3" '$2 == l && $3 == k {print $c}' "$work/rows"; }
# speedup <label> <kind>: endpoint / capture, round by round.
speedup() {
  awk -v l="$1" -v k="$2" '$2 == "endpoint" {e[$1] = $4} $2 == l && $3 == k {c[$1] = $4}
    END {for (r in c) if (c[r] > 0) print e[r] / c[r]}' "$work/rows" | med 3
}
# cpu_speedup <label>: the target's CPU for the endpoint / the tool's CPU
# (user+sys) for its cold capture, round by round.
cpu_speedup() {
  awk -v l="$1" '$2 == "endpoint" {e[$1] = $5} $2 == l && $3 == "size" {c[$1] = $7}
    END {for (r in c) if (c[r] > 0) print e[r] / c[r]}' "$work/rows" | med 3
}
cpu_sum() { col "$1" "$2" 5 | awk '{s += $1} END {print s + 0}'; }

# rows_for <go> <shape>: the table's rows for the target just measured.
rows_for() {
  local buckets bytes label rss size cpu
  read -r buckets bytes < <(curl -sf "http://127.0.0.1:$port/bucketmem")
  for t in "${tools[@]}"; do
    label=${t%%=*}
    rss=$(col "$label" size 4 | awk '{print $1 / 1024}' | med 3)
    size=$(col "$label" size 5 | tail -n 1)" "$(col "$label" size 6 | tail -n 1)
    cpu="$(cpu_sum "$label" cold) / $(cpu_sum "$label" repeated) / $(col endpoint endpoint 5 | head -n 1)"
    echo "| $1 | $2 | $buckets | $(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}') | $label" \
      "| $rss | $(awk '{printf "%.0f / %.0f", $1 / 1024, $2 / 1024}' <<<"$size")" \
      "| $(col "$label" cold 4 | med) | ${serve_failed[$label]:-$(col "$label" repeated 4 | med)}" \
      "| $(col endpoint endpoint 4 | med) | $(speedup "$label" cold) | $(speedup "$label" repeated) | $cpu" \
      "| $(col "$label" size 7 | med) | $(col endpoint endpoint 5 | med) | $(cpu_speedup "$label") |"
  done
}

echo "streaming: $runs paired rounds a target; tools: ${tools[*]}" >&2
echo "| Go | shape | buckets | bucket MiB | tool | peak RSS MiB | output KiB gz / raw |" \
  "cold ms | repeated ms | endpoint ms | cold x | repeated x | target CPU ms cold / repeated / endpoint |" \
  "cold CPU ms | endpoint CPU ms | CPU x |"
echo "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
for v in "${gos[@]}"; do
  build_target "$v"
  for shape in "${shapes[@]}"; do
    for n in "${sizes[@]}"; do
      : >"$work/rows"
      start_target "$v" "$shape" "$n"
      if measure; then
        rows_for "$v" "$shape"
      else
        read -r buckets bytes < <(curl -sf "http://127.0.0.1:$port/bucketmem")
        echo "| $v | $shape | $buckets | $(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')" \
          "| capture failed: $failed |$(printf ' |%.0s' {1..11})"
      fi
      bench_stop "$target_pid"
      target_pid=""
    done
  done
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg) at the end; medians (min-max) of $runs rounds" \
  "(x: per round); target CPU: sums over all rounds" >&2
