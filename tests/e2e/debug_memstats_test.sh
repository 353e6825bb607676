#!/usr/bin/env bash
# End-to-end test of the `# runtime.MemStats` block that ends serve's
# heap?debug=1 (and allocs?debug=1) text and the one-shot --format debug1:
# a Go target (testdata/servetarget -gc-on, GOMAXPROCS=2: with the GC off,
# NextGC would move with every allocation of its own HTTP handling) serves
# its own net/http/pprof; its own ?debug=1 is read just before and just
# after ours, and ours must lie between them field by field by the rules of
# tests/e2e/memstats_block.py
# (exact fields equal; what the target's own HTTP handling allocates
# between the two, the stack-cache flush, GCSys/OtherSys and MaxRSS within
# named bounds). The records before the block must be the same records.
# For Go 1.18, 1.20, 1.22, 1.23, 1.26 and 1.27: the record order and the
# statistics' sources change between them.
#
#   bash tests/e2e/debug_memstats_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command python3 "needs python3"
e2e_make_work debug_memstats
trap 'e2e_stop_pids -9' EXIT
compare=$src/tests/e2e/memstats_block.py

# records <file>: the records before the block, sorted (ties in in-use bytes
# have no defined order).
records() {
  awk '/^# runtime.MemStats/ {exit}
       /^-?[0-9]+: -?[0-9]+ \[/ {if (rec != "") print rec; rec = $0; next}
       /^$/ {next}
       {rec = rec "|" $0}
       END {if (rec != "") print rec}' "$1" | sort
}

# records_after <own1> <ours> <own2>: own2's records, less the all-zero ones
# through runtime/pprof.writeHeap that are more than own1 or ours has of the
# same text. Those are buckets the target's own second write created after
# ours was taken: its record slice, sampled, whose size is part of a bucket's
# key but not of its text (so such a bucket can read exactly as an all-zero
# one of the first write), listed by MemProfile(all=true) before any cycle
# publishes it. They are counted in $work/own2.dropped.
records_after() {
  records "$2" >"$work/ours.rec"
  records "$1" >"$work/own1.rec"
  records "$3" | awk -v ours="$work/ours.rec" -v own1="$work/own1.rec" \
    -v dropped="$work/own2.dropped" '
    BEGIN { while ((getline l < ours) > 0) in_ours[l]++
            while ((getline l < own1) > 0) in_own1[l]++
            for (l in in_ours) allowed[l] = in_ours[l]
            for (l in in_own1) if (in_own1[l] > allowed[l]) allowed[l] = in_own1[l]
            n = 0 }
    /^0: 0 \[0: 0\] @/ && /runtime\/pprof\.writeHeap/ && ++used[$0] > allowed[$0] { n++; next }
    { print }
    END { print n > dropped }'
}

own_write_note() {
  local n
  n=$(cat "$work/own2.dropped" 2>/dev/null || echo 0)
  ((n > 0)) && echo "; left out $n all-zero record(s) of the target's own second write"
}

# same_block <what> <own-url> <command...>: own, ours (the command's
# output), own again; retried when the target itself changed between its
# two reads (exit 2 of the comparison).
same_block() {
  local what=$1 own=$2 attempt rc retries=""
  shift 2
  : >"$work/cmp.txt"  # what this block found, and nothing of the block before
  for attempt in 1 2 3 4 5; do
    # A request that fails is retried, and why it failed is kept for the report.
    if ! curl -sS --fail-with-body -o "$work/own1.txt" "$own" 2>"$work/own.err" ||
      ! "$@" >"$work/ours.txt" 2>"$work/ours.err" ||
      ! curl -sS --fail-with-body -o "$work/own2.txt" "$own" 2>"$work/own.err"; then
      retries+="; attempt $attempt failed: $(cat "$work/own.err" "$work/ours.err" 2>/dev/null |
        tr '\n' ' ')$(head -c 200 "$work/ours.txt" 2>/dev/null)"
      rm -f "$work/own.err" "$work/ours.err"
      sleep 1
      continue
    fi
    python3 "$compare" "$work/own1.txt" "$work/ours.txt" "$work/own2.txt" 2 >"$work/cmp.txt" 2>&1
    rc=$?
    if ((rc == 2)); then
      retries+="; $(cat "$work/cmp.txt")"
      continue
    fi
    records_after "$work/own1.txt" "$work/ours.txt" "$work/own2.txt" >"$work/own2.rec"
    if ((rc == 0)) && cmp -s <(records "$work/ours.txt") "$work/own2.rec"; then
      pass "$what (attempt $attempt, $(cat "$work/cmp.txt")${retries:+; retried: ${retries#; }}$(own_write_note))"
      return
    fi
    ((rc == 0)) && diff "$work/own2.rec" <(records "$work/ours.txt") >"$work/cmp.txt"
    break
  done
  echo "retried: ${retries#; }" >>"$work/cmp.txt"
  cat "$work/ours.err" >>"$work/cmp.txt" 2>/dev/null
  fail "$what" "$work/cmp.txt"
}

start_serve main
for v in go1.18.10 go1.20.14 go1.22.10 go1.23.4 go1.26.8 go1.27.3; do
  if ! why=$(toolchain_ok "$v"); then
    skip "Go $v: $why"
    continue
  fi
  exe=$work/bin/servetarget-$v
  mkdir -p "$work/bin"
  if ! (cd "$src/testdata/servetarget" && CGO_ENABLED=0 $(go_cmd "$v") build -o "$exe" .) \
    >"$work/build-$v.log" 2>&1; then
    fail "build servetarget with $v" "$work/build-$v.log"
    continue
  fi
  e2e_start "$work/target-$v.out" "$work/target-$v.err" env GOMAXPROCS=2 "$exe" -gc-on
  tpid=$target_pid
  if ! e2e_wait_for_line "$work/target-$v.out" "^READY" "$tpid" 20; then
    fail "$v: target did not start" "$work/target-$v.err"
    continue
  fi
  port=$(awk '/^READY/ {print $3}' "$work/target-$v.out")
  own="http://127.0.0.1:$port/debug/pprof"
  ours="http://$addr/debug/pprof"
  # The first requests grow the target's HTTP machinery (Sys, MSpanSys,
  # buckets of its own sampled allocations) once.
  for i in 1 2 3; do curl -s -o /dev/null "$own/heap?debug=1"; done
  curl -s -o /dev/null "$ours/heap?debug=1&pid=$tpid"
  same_block "$v serve heap?debug=1: the MemStats block as the target's own" \
    "$own/heap?debug=1" curl -sS --fail-with-body "$ours/heap?debug=1&pid=$tpid"
  same_block "$v serve allocs?debug=1: the same block" \
    "$own/allocs?debug=1" curl -sS --fail-with-body "$ours/allocs?debug=1&pid=$tpid"
  same_block "$v one-shot --format debug1: the same text" \
    "$own/heap?debug=1" "$tool" --format debug1 "$tpid"
  kill "$tpid"
  wait "$tpid" 2>/dev/null
done
e2e_finish
