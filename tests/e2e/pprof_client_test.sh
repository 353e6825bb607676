#!/usr/bin/env bash
# The real client: `go tool pprof` must see the same thing in goheap2pprof's
# capture as in the target's own heap profile, without the binary.
#
#   bash tests/e2e/pprof_client_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# (a) -top function names and -traces text (ignoring the header and the order
#     of traces) are the same for our capture and the oracle file, with the
#     target binary moved away (so nothing can be re-symbolized from it).
# (b) -base: two captures around a distinctive allocation phase (oracle
#     -phase2: main.phaseTwo retains 1000 x 4096 B at rate 1) differ in
#     inuse_space by exactly main.phaseTwo's 4096000 B / 1000 objects.
#     Both captures also match the target's own profiles (profdiff).
# (c) -http serves /ui/flamegraph for our capture, mentioning main.recurse.
#
# Uses Go 1.26.8 (`go`); exit 0 all passed, 1 something failed, 77 no Go.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
timeout_s=${ORACLE_READY_TIMEOUT:-120}
e2e_require_executables "$tool"
e2e_require_go

e2e_make_work pprof_client
# pprof must not find the binary anywhere (it also looks in $PPROF_BINARY_PATH).
export PPROF_BINARY_PATH=$work/no-binaries PPROF_TMPDIR=$work/pprof-tmp
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

pprof() { "${go[@]}" tool pprof "$@" 2>/dev/null; }

# wait_for <file> <regex> <pid>: waits until a line of file matches.
wait_for() {
  e2e_wait_for_line "$1" "$2" "$3" "$timeout_s" && return 0
  echo "target did not print $2 within ${timeout_s}s:"
  tail -n 20 "${1%.out}.err"
  return 1
}

# capture <pid> <out>: runs goheap2pprof, reporting a failure.
capture() {
  if ! "$tool" "$1" -o "$2" >"$2.log" 2>&1; then
    echo "goheap2pprof $1 -o $2 failed:"
    sed 's/^/    /' "$2.log"
    return 1
  fi
}

# top_functions <profile> <sample_index>: the function names of -top.
top_functions() {
  pprof -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 -sample_index="$2" "$1" |
    awk 'listing { sub(/ \(inline\)$/, ""); print $NF } /^ *flat +flat%/ { listing = 1 }' |
    sort -u
}

# traces <profile>: -traces without the header, one trace per line, sorted.
traces() {
  pprof -traces "$1" |
    awk '/^-+\+-+$/ { if (started) print block; started = 1; block = ""; next }
         started { block = block "|" $0 }
         END { if (started) print block }' |
    sort
}

e2e_build_oracle

# ---- (a) names and traces, binary moved away.
run_a() {
  local dir=$work/a idx
  mkdir -p "$dir"
  e2e_start "$dir/target.out" "$dir/target.err" "$binary" -rate 1 -out "$dir/oracle.pb.gz"
  wait_for "$dir/target.out" '^READY ' "$target_pid" || return 1
  capture "$target_pid" "$dir/ours.pb.gz" || return 1
  e2e_stop_pids
  mv "$binary" "$binary.moved"

  local ok=1
  for idx in inuse_space alloc_space; do
    top_functions "$dir/oracle.pb.gz" "$idx" >"$dir/top-$idx.oracle"
    top_functions "$dir/ours.pb.gz" "$idx" >"$dir/top-$idx.ours"
    if [[ ! -s "$dir/top-$idx.oracle" ]]; then
      echo "-top -sample_index=$idx on the oracle shows no functions"
      ok=0
    elif ! diff -u "$dir/top-$idx.oracle" "$dir/top-$idx.ours" >"$dir/top-$idx.diff"; then
      echo "-top -sample_index=$idx function names differ (- oracle, + ours):"
      head -n 40 "$dir/top-$idx.diff"
      ok=0
    fi
  done
  if ((ok)); then
    pass "(a) -top function names ($(wc -l <"$dir/top-inuse_space.oracle") inuse_space, $(
      wc -l <"$dir/top-alloc_space.oracle") alloc_space)"
  else
    fail "(a) -top function names"
  fi

  traces "$dir/oracle.pb.gz" >"$dir/traces.oracle"
  traces "$dir/ours.pb.gz" >"$dir/traces.ours"
  if [[ -s "$dir/traces.oracle" ]] && cmp -s "$dir/traces.oracle" "$dir/traces.ours"; then
    pass "(a) -traces identical ($(wc -l <"$dir/traces.oracle") traces)"
  else
    fail "(a) -traces differ (- oracle, + ours; one trace per line)"
    diff -u "$dir/traces.oracle" "$dir/traces.ours" | head -n 20 | cut -c 1-400
  fi
  mv "$binary.moved" "$binary"
}

# check_base <label> <before> <after>: -base shows exactly main.phaseTwo.
# Stacks made only of runtime frames (the runtime starting another thread
# allocates an m, its g0 and profiling buffers) are listed but tolerated: when
# the runtime does that is up to the scheduler, not the program.
check_base() {
  local label=$1 before=$2 after=$3 idx expected unit flat ok=1
  for idx in inuse_space inuse_objects; do
    expected="4096000B main.phaseTwo" unit=(-unit=B)
    [[ $idx == inuse_objects ]] && expected="1000 main.phaseTwo" unit=()
    # Nodes with a non-zero flat value: "<flat> <function>".
    flat=$(pprof -top -nodecount=1000000 -nodefraction=0 "${unit[@]}" -sample_index="$idx" \
      -base "$before" "$after" |
      awk 'listing && $1 != "0" { print $1, $NF } /^ *flat +flat%/ { listing = 1 }')
    if grep -q ' runtime\.' <<<"$flat"; then
      echo "    note: $label -sample_index=$idx also has runtime-internal" \
        "allocations:" $(grep ' runtime\.' <<<"$flat")
    fi
    flat=$(grep -v ' runtime\.' <<<"$flat")
    if [[ $flat != "$expected" ]]; then
      echo "$label -base -sample_index=$idx: expected \"$expected\", got:"
      echo "${flat:-(nothing)}" | head -n 20 | sed 's/^/    /'
      ok=0
    fi
  done
  ((ok))
}

# ---- (b) -base between two captures.
run_b() {
  local dir=$work/b pid
  mkdir -p "$dir"
  e2e_start "$dir/target.out" "$dir/target.err" \
    "$binary" -rate 1 -phase2 -out "$dir/oracle1.pb.gz" -out2 "$dir/oracle2.pb.gz"
  pid=$target_pid
  wait_for "$dir/target.out" '^READY1 ' "$pid" || return 1
  capture "$pid" "$dir/before.pb.gz" || return 1
  kill -USR1 "$pid"
  wait_for "$dir/target.out" '^READY2 ' "$pid" || return 1
  capture "$pid" "$dir/after.pb.gz" || return 1
  e2e_stop_pids

  if ! check_base "oracle files" "$dir/oracle1.pb.gz" "$dir/oracle2.pb.gz"; then
    fail "(b) -base on the target's own profiles (the test target is broken, not the tool)"
  elif check_base "our captures" "$dir/before.pb.gz" "$dir/after.pb.gz"; then
    pass "(b) -base shows exactly main.phaseTwo: 4096000 B, 1000 objects in use"
  else
    fail "(b) -base on our captures"
  fi
  # Both captures must also mean what the target wrote itself at that point.
  local n
  for n in 1 2; do
    local ours=$dir/before.pb.gz
    [[ $n == 2 ]] && ours=$dir/after.pb.gz
    if "$profdiff" "$dir/oracle$n.pb.gz" "$ours" >"$dir/profdiff$n.out" 2>&1; then
      pass "(b) capture at READY$n matches the oracle ($(sed -n 's/^samples: expected \([0-9]*\),.*/\1/p' "$dir/profdiff$n.out") samples)"
    else
      fail "(b) capture at READY$n differs from the oracle"
      grep -E '^samples:' "$dir/profdiff$n.out" | sed 's/^/    /'
      head -n 40 "$dir/profdiff$n.out" | cut -c 1-300 | sed 's/^/    /'
    fi
  done
}

# ---- (c) the web UI.
run_c() {
  local dir=$work/c pprof_bin port pid code deadline
  mkdir -p "$dir"
  if ! command -v curl >/dev/null; then
    echo "SKIP (c) -http: no curl"
    return 0
  fi
  # The pprof binary itself, so that killing it by pid leaves nothing behind.
  if ! pprof_bin=$("${go[@]}" tool -n pprof 2>/dev/null) || [[ ! -x $pprof_bin ]]; then
    fail "(c) -http: cannot locate the pprof binary (go tool -n pprof)"
    return 0
  fi
  port=$(e2e_free_port)
  "$pprof_bin" -http="127.0.0.1:$port" -no_browser "$work/a/ours.pb.gz" >"$dir/pprof.log" 2>&1 &
  pid=$!
  e2e_track_pid "$pid"
  deadline=$((SECONDS + 60))
  code=000
  while ((SECONDS < deadline)) && kill -0 "$pid" 2>/dev/null; do
    code=$(curl -s -o "$dir/flamegraph.html" -w '%{http_code}' \
      "http://127.0.0.1:$port/ui/flamegraph" 2>/dev/null)
    [[ $code == 200 ]] && break
    sleep 0.2
  done
  e2e_stop_pids
  if [[ $code != 200 ]]; then
    fail "(c) -http: /ui/flamegraph answered HTTP $code"
    tail -n 20 "$dir/pprof.log"
  elif ! grep -q 'main\.recurse' "$dir/flamegraph.html"; then
    fail "(c) -http: /ui/flamegraph does not mention main.recurse"
  else
    pass "(c) -http: /ui/flamegraph HTTP 200, mentions main.recurse"
  fi
}

if run_a; then
  run_c
else
  fail "(a) could not capture"
  echo "SKIP (c) -http: needs the capture of (a)"
fi
e2e_stop_pids
run_b || fail "(b) could not capture"
e2e_stop_pids

e2e_finish --no-skipped
