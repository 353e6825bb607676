#!/usr/bin/env bash
# Consistency under load (issue 5): 300 back-to-back captures of a target
# whose GC runs many times a second (testdata/churn) must each be a valid heap
# profile without negative in-use values, and their totals must lie within
# what the target's own /debug/pprof/heap served just before and just after.
# The same again through the repeated-capture path: `goheap2pprof serve`
# captures the churn target as many times, its worker keeping the process's
# capture state (app/capture_state.h) from one capture to the next, so each
# of those reads only what changed and must still mean what a fresh capture
# would.
#
#   bash tests/e2e/consistency_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Environment: GOHEAP2PPROF_SOURCE_DIR, GOHEAP2PPROF_BINARY_DIR (scratch in
# $GOHEAP2PPROF_BINARY_DIR/e2e); CONSISTENCY_CAPTURES (300),
# CONSISTENCY_EVERY (10: every Nth capture is bracketed by two fetches of the
# target's own profile), CHURN_ARGS (extra churn flags).
#
# Why the bounds are what they are. The runtime serves, and goheap2pprof
# emulates, per bucket active + future[C % 3] (C = profile cycle). That is
# monotone in time: allocation and free counts only grow (a GC publishing a
# cycle adds to them, new buckets add samples), and every bucket has one
# object size, so the sampling scale factor per bucket is constant and the
# scaled alloc_* and free_* (= alloc_* - inuse_*) totals only grow too. A
# capture taken between the two fetches b and a therefore has
#     A_b <= alloc <= A_a            F_b <= free <= F_a
# and since inuse = alloc - free,
#     I_a - (A_a - A_b) <= inuse <= I_b + (A_a - A_b).
# In-use may go up and down, so [min(I_b, I_a), max(I_b, I_a)] would be
# wrong: allocations and frees published between b and a can move in-use
# anywhere within the allocation growth. Each bound gets a tolerance of one
# unit per sample: the scaled values are truncated to integers per sample,
# and C++ and Go may round exp() differently in the last place. A walk torn
# by a cycle change (and not repeated) would count a cycle twice or mix in
# unpublished counts, and fall outside these bounds.
#
# Exit status: 0 pass, 1 fail, 77 skipped (no go, no curl).
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
captures=${CONSISTENCY_CAPTURES:-300}
every=${CONSISTENCY_EVERY:-10}
read -r -a churn_args <<<"${CHURN_ARGS:-}"

e2e_require_executables "$tool"
for cmd in go curl; do
  e2e_require_command "$cmd" "$cmd not found"
done

e2e_make_work consistency
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

# Unlike lib.sh's fail, this one ends the test: every check here is a whole-test verdict.
fail() {
  echo "FAIL: $*"
  echo "(files in $work)"
  exit 1
}

if ! (cd "$src/testdata/churn" && GOTOOLCHAIN=local go build -o "$work/churn" . &&
  GOTOOLCHAIN=local go build -o "$work/profcheck" ./profcheck) >"$work/build.log" 2>&1; then
  cat "$work/build.log"
  fail "building testdata/churn"
fi

e2e_start "$work/churn.out" "$work/churn.err" "$work/churn" "${churn_args[@]}"
churn_pid=$target_pid
if ! e2e_wait_for_line "$work/churn.out" '^READY ' "$target_pid" 30; then
  cat "$work/churn.err"
  fail "churn did not print READY"
fi
read -r _ _ port <"$work/churn.out"
url=http://127.0.0.1:$port
fetch() { curl -sf --max-time 30 -o "$1" "$url/debug/pprof/heap"; }
sleep 1  # let the churn reach its steady state (buckets for every size)
fetch "$work/warmup.pb.gz" || fail "fetching the target's own profile"
stats_before=$(curl -sf "$url/stats")

# One pass of captures: capture_<mode> <output> <log> takes one, for mode
# cli (a fresh goheap2pprof each time) or serve (repeated captures by one
# long-running server). Files are <prefix>NNN.pb.gz (and .before/.after).
capture_cli() { "$tool" "$churn_pid" -o "$1" --stats >"$2" 2>&1; }
capture_serve() {
  curl -sf --max-time 60 -o "$1" "http://$serve_addr/debug/pprof/heap?pid=$churn_pid" >"$2" 2>&1
}
run_pass() {
  local mode=$1 prefix=$2 i name rc
  echo "churn pid $churn_pid ${churn_args[*]}: $captures captures ($mode), every ${every}th bracketed by the target's own profile"
  local pass_start=$SECONDS
  for ((i = 1; i <= captures; i++)); do
    name=$prefix$(printf '%03d' "$i")
    if ((i % every == 0)); then
      fetch "$work/$name.before.pb.gz" || fail "fetch before capture $i ($mode)"
    fi
    "capture_$mode" "$work/$name.pb.gz" "$work/$name.log"
    rc=$?
    if ((i % every == 0)); then
      fetch "$work/$name.after.pb.gz" || fail "fetch after capture $i ($mode)"
    fi
    if ((rc != 0)); then
      sed 's/^/    /' "$work/$name.log"
      fail "capture $i ($mode): exit status $rc"
    fi
  done
  echo "$mode: $captures captures in $((SECONDS - pass_start))s"
}

start=$SECONDS
run_pass cli ""
# The repeated-capture path: one server, its first capture of the churn
# target makes the state, the next ones reuse it.
e2e_start "$work/serve.out" "$work/serve.log" "$tool" serve --listen 127.0.0.1:0 -v
if ! e2e_wait_for_line "$work/serve.log" "listening on" "$target_pid" 10; then
  cat "$work/serve.log"
  fail "goheap2pprof serve did not start"
fi
serve_addr=$(sed -n 's/.*listening on //p' "$work/serve.log" | head -n 1)
run_pass serve r
stats_after=$(curl -sf "$url/stats")
elapsed=$((SECONDS - start))
e2e_stop_pids

# Validity: our own decoder on every file, go tool pprof on the bracketed ones.
"$work/profcheck" "$work"/*.pb.gz >"$work/profcheck.out"
invalid=$(grep -c -v ' ok ' "$work/profcheck.out")
negative=$(awk '$2 == "ok" && $14 != 0' "$work/profcheck.out" | wc -l)
pprof_bad=0
for f in "$work"/*0.pb.gz; do
  if ! go tool pprof -raw "$f" >"$f.raw" 2>&1 || ! grep -q '^Samples:' "$f.raw"; then
    echo "go tool pprof cannot read $f:"
    head -n 5 "$f.raw" | sed 's/^/    /'
    pprof_bad=$((pprof_bad + 1))
  fi
done

# Walks: how often the profile cycle changed mid-walk.
walk_summary=$(awk '/^  walks / {walks += $2; torn += substr($3, 2); n++; if ($2 > 1) retried++}
  END {printf "%d walks for %d captures, %d captures retried, %d walks discarded", walks, n, retried, torn}' \
  "$work"/[0-9][0-9][0-9].log)
gave_up=$(grep -l 'profile cycle changed during each' "$work"/[0-9][0-9][0-9].log | wc -l)

# Totals of the bracketed captures, for both passes.
bounds_bad=0 checked=0
declare -A tot
while read -r path ok _ samples _ ao _ as _ io _ is _; do
  [[ $ok == ok ]] || continue
  tot[$path]="$samples $ao $as $io $is"
done <"$work/profcheck.out"
for prefix in "" r; do
for ((i = every; i <= captures; i += every)); do
  name=$prefix$(printf '%03d' "$i")
  b=${tot[$work/$name.before.pb.gz]:-} o=${tot[$work/$name.pb.gz]:-} a=${tot[$work/$name.after.pb.gz]:-}
  [[ -n $b && -n $o && -n $a ]] || continue
  checked=$((checked + 1))
  torn=$(awk '/^  walks / {print $2 - 1}' "$work/$name.log")
  torn=${torn:-0}
  if ! verdict=$(awk -v b="$b" -v o="$o" -v a="$a" -v torn="$torn" 'BEGIN {
      split(b, B); split(o, O); split(a, A)
      tol = (A[1] > B[1] ? A[1] : B[1])   # one unit per sample
      bad = 0
      # alloc_objects, alloc_space: monotone.
      for (k = 2; k <= 3; k++) {
        if (O[k] < B[k] - tol || O[k] > A[k] + tol) bad = 1
      }
      # inuse_objects (4) vs alloc_objects (2), inuse_space (5) vs alloc_space (3).
      for (k = 4; k <= 5; k++) {
        grow = A[k-2] - B[k-2]
        lo = A[k] - grow - tol; hi = B[k] + grow + tol
        if (O[k] < lo || O[k] > hi) bad = 1
        # free = alloc - inuse is monotone too.
        if (O[k-2] - O[k] < B[k-2] - B[k] - tol || O[k-2] - O[k] > A[k-2] - A[k] + tol) bad = 1
      }
      printf "alloc_space %.0f <= %.0f <= %.0f; inuse_space %.0f in [%.0f, %.0f] (before %.0f, after %.0f); retried walks %d", \
        B[3], O[3], A[3], O[5], A[5] - (A[3] - B[3]), B[5] + (A[3] - B[3]), B[5], A[5], torn
      exit bad }'); then
    echo "OUT OF BOUNDS capture $name: $verdict"
    bounds_bad=$((bounds_bad + 1))
  elif ((i % (every * 10) == 0)); then
    echo "capture $name: $verdict"
  fi
done
done

echo "churn /stats before: $stats_before"
echo "churn /stats after:  $stats_after"
echo "$stats_before $stats_after" | awk '{printf "target: %.0f GC cycles/s, %.0f work items/s during the test\n", ($10 - $4) / (($12 - $6) / 1e9), ($8 - $2) / (($12 - $6) / 1e9)}'
echo "$captures fresh captures and $captures repeated ones (serve) in ${elapsed}s; fresh ones: $walk_summary; $gave_up gave up (cycle changed in every walk)"
echo "invalid profiles: $invalid (go tool pprof rejected $pprof_bad); profiles with negative in-use: $negative"
echo "totals checked against the target's own profile: $checked, out of bounds: $bounds_bad"
if ((invalid > 0 || negative > 0 || pprof_bad > 0 || bounds_bad > 0)); then
  grep -v ' ok ' "$work/profcheck.out" | head -n 5
  awk '$2 == "ok" && $14 != 0' "$work/profcheck.out" | head -n 5
  fail "see above"
fi
if ((checked == 0)); then
  fail "no capture could be compared"
fi
echo "PASS"
rm -rf "$work"
exit 0
