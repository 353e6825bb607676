#!/usr/bin/env bash
# Issue 42: a target with about 1 GiB of heap-profile buckets (130k buckets
# of ~1,000-frame stacks, GODEBUG=profstackdepth=1024: Go's buckets can reach
# gigabytes, golang/go#69590), captured by goheap2pprof confined to a 256 MiB
# memory cgroup (v1, swap limited too). Each capture must either succeed
# with its peak below the limit or refuse with a clear message (an exit
# status of ours, a message on stderr or in serve's reply); none may be
# killed by the OOM killer. Cases:
#   - a one-shot `goheap2pprof <pid>`;
#   - two fetches from a `goheap2pprof serve` running in the cgroup (its worker
#     keeps the process's state between them): each 200 or an error reply,
#     and serve still running.
# bench/huge_buckets.sh runs the same against ~4 GiB of buckets and prints a
# table. Skipped without root or without the cgroup v1 memory controller.
# HUGE_BUCKETS_N=<buckets> runs it on another count (20000: what fits today).
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool"
e2e_require_go
e2e_make_work huge_buckets

v1=/sys/fs/cgroup/memory
if [[ $(id -u) != 0 ]]; then
  skip "huge buckets: needs root to create a memory cgroup"
  e2e_finish
elif [[ ! -w $v1/cgroup.procs || ! -f $v1/memory.limit_in_bytes ]]; then
  skip "huge buckets: no cgroup v1 memory controller mounted at $v1"
  e2e_finish
fi
limit=256M

target=$work/bin/benchtarget
e2e_go_build benchtarget "$target"

cg=$v1/$(e2e_cgroup_name v1)
cleanup() {
  e2e_stop_pids -9
  for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg" 2>/dev/null && break; sleep 0.2; done
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir "$cg"
echo "$limit" >"$cg/memory.limit_in_bytes"
echo 0 >"$cg/memory.swappiness" 2>/dev/null
[[ -f $cg/memory.memsw.limit_in_bytes ]] && echo "$limit" >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
oom_kills() { awk '$1 == "oom_kill" {print $2 + 0}' "$cg/memory.oom_control"; }
# (sh execs the command: its pid is the command's.)
join_cgroup=(sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg")

# -deep 975: Go 1.26.8 dies ("bad profile stack count") past 1,024 frames.
e2e_start "$work/target.out" "$work/target.err" \
  env GODEBUG=profstackdepth=1024 "$target" -buckets "${HUGE_BUCKETS_N:-130000}" -sizes 1 -deep 975
e2e_wait_for_line "$work/target.out" "^READY " "$target_pid" 600 || {
  fail "benchtarget with ${HUGE_BUCKETS_N:-130000} deep buckets did not start" "$work/target.err"
  e2e_finish
}
read -r _ tpid _ buckets bytes <"$work/target.out"
echo "target: $buckets buckets, $((bytes >> 20)) MiB of bucket memory; cgroup limit $limit"

# check_outcome <what> <status> <message file> <peak bytes> <output>: a success
# (a gzipped profile in <output>) or a refusal with a message; an OOM kill fails.
check_outcome() {
  local what=$1 status=$2 msg=$3 peak=$4 out=$5
  if [[ $(oom_kills) != 0 ]]; then
    fail "$what: the OOM killer killed a process of the cgroup (status $status)" "$msg"
  elif [[ $status == ok ]] && ! gzip -t "$out" 2>/dev/null; then
    fail "$what: exit 0 but $out is not a gzipped profile"
  elif [[ $status == ok ]]; then
    pass "$what: captured, peak $((peak >> 20)) MiB under the $limit limit"
  elif [[ -s $msg ]]; then
    pass "$what: refused ($status): $(head -n 1 "$msg" | cut -c1-160)"
  else
    fail "$what: failed ($status) without a message"
  fi
}

echo 0 >"$cg/memory.max_usage_in_bytes"
"${join_cgroup[@]}" "$tool" "$tpid" -o "$work/cold.pb.gz" 2>"$work/cold.err"
rc=$?
if ((rc >= 128)); then
  fail "one-shot capture: killed by signal $((rc - 128)) (OOM kills in the cgroup: $(oom_kills))" \
    "$work/cold.err"
else
  status=ok
  ((rc == 0)) || status="exit $rc"
  check_outcome "one-shot capture of $((bytes >> 20)) MiB of buckets" "$status" "$work/cold.err" \
    "$(cat "$cg/memory.max_usage_in_bytes")" "$work/cold.pb.gz"
fi

echo 0 >"$cg/memory.max_usage_in_bytes"
e2e_start "$work/serve.out" "$work/serve.log" "${join_cgroup[@]}" "$tool" serve --listen 127.0.0.1:0 -v
serve_pid=$target_pid
addr=""
for _ in $(seq 100); do
  addr=$(sed -n 's/.*listening on //p' "$work/serve.log" | head -n 1)
  [[ -n $addr ]] && break
  sleep 0.1
done
[[ -n $addr ]] || {
  fail "serve did not start" "$work/serve.log"
  e2e_finish
}
for i in 1 2; do
  code=$(curl -s -o "$work/fetch$i" -w '%{http_code}' --max-time 600 \
    "http://$addr/debug/pprof/heap?pid=$tpid")
  if ! kill -0 "$serve_pid" 2>/dev/null; then
    fail "serve fetch $i: serve died (OOM kills in the cgroup: $(oom_kills))" "$work/serve.log"
    break
  fi
  status=ok
  [[ $code == 200 ]] || status="HTTP $code"
  check_outcome "serve fetch $i" "$status" "$work/fetch$i" "$(cat "$cg/memory.max_usage_in_bytes")" \
    "$work/fetch$i"
done

e2e_finish
