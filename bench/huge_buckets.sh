#!/usr/bin/env bash
# Issue 42: a target whose heap-profile buckets take gigabytes (Go's reach
# 4 GiB at profstackdepth=128, golang/go#69590; at profstackdepth=1024 a
# 1,000-frame bucket takes about 8 KiB, so 4 GiB is about 515k buckets)
# captured by a goheap2pprof confined to a small memory cgroup (v1, swap
# limited too): the capture must finish with bounded memory or refuse with a
# clear message; it must never be OOM-killed. Prints one table row per
# capture: a one-shot `goheap2pprof <pid>` and a fetch from `serve` (whose
# worker keeps the process's state), each run in the cgroup.
#
#   bash bench/huge_buckets.sh                        # 515000 buckets (~4 GiB), 256 MiB
#   N=130000 LIMIT=256M bash bench/huge_buckets.sh    # ~1 GiB
#
# Environment:
#   N      buckets of 1,000-frame stacks (default 515000: about 4 GiB)
#   DEEP   frames of recursion above the allocations (default 975: the stacks
#          stay within 1,024 frames, beyond which Go 1.26.8's runtime dies with
#          "fatal error: bad profile stack count")
#   LIMIT  the cgroup's memory (and memory+swap) limit (default 256M)
#   SERVE_ARGS  more flags for serve (e.g. "--worker-memory 192M": its workers'
#          RLIMIT_AS, 2 GiB by default, above such a cgroup's limit)
#   PID    capture this running target instead (its bucket memory is then not printed)
#   TOOL   goheap2pprof (default <repo>/build-rel/goheap2pprof)
#   GO     the Go command for the target (default "env GOTOOLCHAIN=local go", Go 1.26.8)
# Needs root and the cgroup v1 memory controller at /sys/fs/cgroup/memory,
# and memory for the target itself (about 1.1 x its bucket memory).
#
# Columns: exit = the tool's exit status (137: killed by SIGKILL, the OOM
# killer's signal) or serve's HTTP status; peak RSS = /usr/bin/time's maximum
# resident set (one-shot); cgroup peak = memory.max_usage_in_bytes (page cache
# included); OOM kills = the cgroup's oom_kill count (memory.oom_control);
# message = the first line of the tool's stderr (or serve's reply).
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$src/bench/lib.sh"
n=${N:-515000}
deep=${DEEP:-975}
limit=${LIMIT:-256M}
tool=${TOOL:-$src/build-rel/goheap2pprof}
read -r -a go_cmd <<<"${GO:-env GOTOOLCHAIN=local go}"
v1=/sys/fs/cgroup/memory

die() {
  echo "huge_buckets: $*" >&2
  exit 1
}
[[ -x $tool ]] || die "$tool is not an executable"
[[ -x /usr/bin/time ]] || die "/usr/bin/time missing (apt-get install time)"
[[ $(id -u) == 0 && -w $v1/cgroup.procs ]] || die "needs root and the cgroup v1 memory controller at $v1"

work=$(mktemp -d "${TMPDIR:-/tmp}/goheap2pprof-huge.XXXXXX")
cg=$v1/goheap2pprof-huge-buckets.$$
target_pid=""
own_target=""  # killed at the end (not a PID= target)
serve_pid=""
cleanup() {
  bench_stop "$serve_pid" "$own_target"
  for _ in $(seq 20); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir "$cg" || die "cannot create $cg"
echo "$limit" >"$cg/memory.limit_in_bytes" || die "cannot set the limit"
[[ -f $cg/memory.memsw.limit_in_bytes ]] && echo "$limit" >"$cg/memory.memsw.limit_in_bytes"
oom_kills() { awk '$1 == "oom_kill" {print $2}' "$cg/memory.oom_control"; }
# (sh execs the command, so a background one's $! is the command's pid.)
join_cgroup=(sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg")

start_target() {
  (cd "$src/testdata/benchtarget" && "${go_cmd[@]}" build -o "$work/benchtarget" .) ||
    die "building testdata/benchtarget failed"
  s=$(date +%s)
  GODEBUG=profstackdepth=1024 "$work/benchtarget" -buckets "$n" -sizes 1 -deep "$deep" \
    >"$work/target.out" 2>"$work/target.err" &
  target_pid=$!
  own_target=$target_pid
  for _ in $(seq 6000); do
    grep -q '^READY ' "$work/target.out" 2>/dev/null && break
    kill -0 "$target_pid" 2>/dev/null || die "target died: $(cat "$work/target.err")"
    sleep 0.2
  done
  read -r _ _ _ buckets bytes <"$work/target.out" || die "target did not print READY"
  echo "target: $buckets buckets, $(awk -v b="$bytes" 'BEGIN {printf "%.2f GiB", b / 2^30}') of" \
    "bucket memory, ready in $(($(date +%s) - s)) s; cgroup limit $limit;" \
    "load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
}
if [[ -n ${PID:-} ]]; then
  target_pid=$PID
  echo "target: pid $PID; cgroup limit $limit; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
else
  start_target
fi

echo "| capture | exit | seconds | peak RSS MiB | cgroup peak MiB | OOM kills | output KiB gz | message |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
row() { # <capture> <exit> <seconds> <peak RSS KiB or -> <output file> <message file>
  local out="-" rss="-"
  [[ -s $5 ]] && out=$(($(stat -c %s "$5") / 1024))
  [[ $4 != - ]] && rss=$(($4 / 1024))
  echo "| $1 | $2 | $3 | $rss | $(($(cat "$cg/memory.max_usage_in_bytes") / 1048576))" \
    "| $(oom_kills) | $out | $(head -n 1 "$6" | cut -c1-200) |"
}

# A one-shot capture.
echo 0 >"$cg/memory.max_usage_in_bytes"
s=$(date +%s%N)
"${join_cgroup[@]}" /usr/bin/time -f '%M' -o "$work/rss" "$tool" "$target_pid" -o "$work/cold.pb.gz" \
  2>"$work/cold.err"
rc=$?
rss=$(tail -n 1 "$work/rss" 2>/dev/null)
[[ $rss =~ ^[0-9]+$ ]] || rss=-
grep -v '^Command' "$work/cold.err" >"$work/cold.msg"
row "one-shot" "$rc" "$(awk -v n=$(($(date +%s%N) - s)) 'BEGIN {printf "%.1f", n / 1e9}')" \
  "$rss" "$work/cold.pb.gz" "$work/cold.msg"

# serve in the cgroup: its worker makes and keeps the process's state.
echo 0 >"$cg/memory.max_usage_in_bytes"
read -r -a serve_args <<<"${SERVE_ARGS:-}"
"${join_cgroup[@]}" "$tool" serve --listen 127.0.0.1:0 -v "${serve_args[@]}" 2>"$work/serve.log" >/dev/null &
serve_pid=$!
for _ in $(seq 50); do grep -qs 'listening on' "$work/serve.log" && break; sleep 0.1; done
addr=$(sed -n 's/.*listening on //p' "$work/serve.log" | head -n 1)
[[ -n $addr ]] || die "serve did not start"
for i in 1 2; do
  s=$(date +%s%N)
  code=$(curl -s -o "$work/serve$i.pb.gz" -w '%{http_code}' \
    "http://$addr/debug/pprof/heap?pid=$target_pid")
  if [[ $code == 200 ]]; then echo "200 OK" >"$work/serve$i.msg"; else cp "$work/serve$i.pb.gz" "$work/serve$i.msg"; : >"$work/serve$i.pb.gz"; fi
  kill -0 "$serve_pid" 2>/dev/null || echo "serve died: $(tail -n 3 "$work/serve.log" | tr '\n' ' ')" >"$work/serve$i.msg"
  row "serve${SERVE_ARGS:+ $SERVE_ARGS} fetch $i" "$code" "$(awk -v n=$(($(date +%s%N) - s)) 'BEGIN {printf "%.1f", n / 1e9}')" \
    - "$work/serve$i.pb.gz" "$work/serve$i.msg"
done
grep -iE 'killed|oom|signal|worker' "$work/serve.log" | tail -n 5 >&2
