#!/usr/bin/env bash
# The other output formats against real processes:
#
# (1) --format json on the oracle target (rate 1 and the default rate): the
#     seed's schema (checked with jq), entries sorted by bytes and named by
#     their first non-runtime frame, --top truncation, and the in-use bytes
#     and objects summed per stack equal to the target's own heap profile
#     aggregated the same way (profdiff --aggregate-inuse). The same with
#     --counters=published: the target called runtime.MemProfile itself (to
#     write the oracle) with GC switched off, so the cycle being flushed is
#     empty and the published counters are the exact ones.
# (2) --format text against `go tool pprof -top -nodecount=N -sample_index=I`
#     on our own pprof capture of the same process, for all four sample
#     indexes and N in {10, 0}: the same rows in the same order with the same
#     flat and cum values (both parsed into numbers), and the same text.
# (3) Before the first GC nothing is published: a program run with GOGC=off
#     shows no entries with --counters=published, and its allocations with
#     the default (exact) counters.
# (4) Failures still write JSON: a non-Go process gives status
#     "unavailable" and exit 5, a missing pid "failed" and exit 3.
#
#   bash tests/e2e/formats_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Uses Go 1.26.8 (`go`) and jq; exit 0 all passed, 1 something failed, 77
# when they are missing.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
timeout_s=${ORACLE_READY_TIMEOUT:-120}
e2e_require_executables "$tool" "$profdiff"
e2e_require_command jq "needs jq (scripts/install-deps.sh installs it)"
e2e_require_go

e2e_make_work formats
export PPROF_TMPDIR=$work/pprof-tmp
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

# wait_ready <dir> <pid>: waits for the target's READY line.
wait_ready() {
  e2e_wait_for_line "$1/target.out" '^READY ' "$2" "$timeout_s" && return 0
  echo "target did not print READY within ${timeout_s}s:"
  tail -n 20 "$1/target.err"
  return 1
}

# The JSON schema, as jq filters that must all hold (each printed on failure).
schema_checks=(
  '(.runtime_version | type) == "string" and (.runtime_version | startswith("go1."))'
  '.status == "complete" and .status_reason == ""'
  '(.duration_ms | type) == "number" and .duration_ms >= 0'
  '(.output_truncated | type) == "boolean"'
  '(.pid | type) == "number" and (.memprofile_rate | type) == "number"'
  '(.profile_cycle | type) == "number" and (.samples | type) == "number"'
  '(.warnings | type) == "array" and (.entries | type) == "array" and (.entries | length) > 0'
  '.entries_total >= (.entries | length)'
  '.output_truncated == (.entries_total > (.entries | length))'
  'all(.entries[]; .kind == "inuse_space_objects")'
  'all(.entries[]; (.name | type) == "string" and (.bytes | type) == "number" and (.objects | type) == "number")'
  'all(.entries[]; .bytes != 0 or .objects != 0)'
  'all(.entries[]; (.average_bytes | type) == "number" and (if .objects == 0 then .average_bytes == 0 else ((.average_bytes - .bytes / .objects) | fabs) < 1e-6 * (.average_bytes + 1) end))'
  'all(.entries[]; (.stack | length) > 0 and all(.stack[]; test("^(\\S+ \\S.*:[0-9]+|0x[0-9a-f]+)$")))'
  # the first non-runtime frame names the entry (the leaf when all are runtime)
  'all(.entries[]; . as $e | ([$e.stack[] | split(" ")[0] | select((startswith("runtime.") or startswith("internal/runtime/")) | not)] | first // ($e.stack[0] | split(" ")[0])) == $e.name)'
  # sorted by bytes, descending
  '[.entries[].bytes] as $b | $b == ($b | sort | reverse)'
  '([.entries[].bytes] | add) <= .inuse_bytes_total'
)

# check_schema <json>: every schema filter holds.
check_schema() {
  local filter ok=0
  for filter in "${schema_checks[@]}"; do
    if [[ $(jq "$filter" "$1" 2>&1) != true ]]; then
      echo "    schema check failed: $filter"
      ok=1
    fi
  done
  return $ok
}

# per_stack <json>: the entries summed per stack, as profdiff --aggregate-inuse prints them.
per_stack() {
  jq -r '.entries | group_by(.stack)
         | map([(map(.bytes) | add | tostring), (map(.objects) | add | tostring)] + .[0].stack
               | join("\t")) | .[]' "$1" | LC_ALL=C sort
}

# top_rows <text>: "name<TAB>flat<TAB>cum" per row of a pprof -top table,
# values converted to plain numbers (bytes or counts).
top_rows() {
  awk '
    function num(v,   m, u) {
      if (v == "0") return 0
      m = 1
      if (v ~ /PB$/) m = 2^50; else if (v ~ /TB$/) m = 2^40; else if (v ~ /GB$/) m = 2^30
      else if (v ~ /MB$/) m = 2^20; else if (v ~ /kB$/) m = 2^10
      sub(/[A-Za-z]+$/, "", v)
      return sprintf("%.0f", v * m)
    }
    listing {
      name = $0
      sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+  /, "", name)
      printf "%s\t%s\t%s\n", name, num($1), num($4)
    }
    /^ *flat +flat%/ { listing = 1 }' "$1"
}

e2e_build_oracle

# run_case <label> <rate>
run_case() {
  local label=$1 rate=$2 dir pid idx n counters
  dir=$work/$label
  mkdir -p "$dir"
  e2e_start "$dir/target.out" "$dir/target.err" "$binary" -rate "$rate" -out "$dir/oracle.pb.gz"
  pid=$target_pid
  wait_ready "$dir" "$pid" || return 1
  "$profdiff" --aggregate-inuse "$dir/oracle.pb.gz" | LC_ALL=C sort >"$dir/oracle.agg" ||
    return 1

  # (1) JSON, exact and published counters.
  for counters in exact published; do
    if ! "$tool" "$pid" --format json --counters "$counters" --top 0 -o "$dir/$counters.json" \
      2>"$dir/$counters.log"; then
      fail "$label (1) --format json --counters $counters: goheap2pprof failed"
      cat "$dir/$counters.log"
      continue
    fi
    if check_schema "$dir/$counters.json" &&
      [[ $(jq -r .counters "$dir/$counters.json") == "$counters" ]]; then
      pass "$label (1) --counters $counters: JSON schema ($(jq '.entries | length' "$dir/$counters.json") entries)"
    else
      fail "$label (1) --counters $counters: JSON schema"
    fi
    per_stack "$dir/$counters.json" >"$dir/$counters.agg"
    if [[ -s $dir/oracle.agg ]] && cmp -s "$dir/oracle.agg" "$dir/$counters.agg"; then
      pass "$label (1) --counters $counters: in-use bytes and objects per stack equal the target's own profile ($(wc -l <"$dir/oracle.agg") stacks)"
    else
      fail "$label (1) --counters $counters: per-stack sums differ from the oracle (- oracle, + ours)"
      diff "$dir/oracle.agg" "$dir/$counters.agg" | head -n 20 | cut -c 1-300
    fi
  done
  # --top 1: the default-rate run samples at random and may have a single
  # entry in use, which --top 1 keeps whole (output_truncated false).
  "$tool" "$pid" --format json --top 1 >"$dir/top1.json" 2>"$dir/top1.log"
  local total
  total=$(jq .entries_total "$dir/exact.json")
  if [[ $(jq -c '[.output_truncated, (.entries | length), .entries_total]' "$dir/top1.json") == \
    "[$( ((total > 1)) && echo true || echo false),$( ((total > 0)) && echo 1 || echo 0),$total]" ]] &&
    [[ $(jq -c '.entries' "$dir/top1.json") == "$(jq -c '.entries[:1]' "$dir/exact.json")" ]]; then
    pass "$label (1) --top 1 keeps the largest entry and sets output_truncated iff more were ($total)"
  else
    fail "$label (1) --top 1"
    jq -c '{output_truncated, entries_total, n: (.entries | length)}' "$dir/top1.json"
  fi

  # (2) text against go tool pprof -top on our pprof capture.
  if ! "$tool" "$pid" -o "$dir/ours.pb.gz" 2>"$dir/ours.log" ||
    ! "$tool" "$pid" --counters published -o "$dir/published.pb.gz" 2>>"$dir/ours.log"; then
    fail "$label (2) pprof capture failed"
    cat "$dir/ours.log"
    return 1
  fi
  for idx in inuse_space inuse_objects alloc_space alloc_objects; do
    for n in 10 0; do
      local ours=$dir/text-$idx-$n.ours theirs=$dir/text-$idx-$n.pprof
      "$tool" "$pid" --format text --sample-index "$idx" --top "$n" >"$ours" 2>"$ours.log"
      "${go[@]}" tool pprof -top -nodecount="$n" -sample_index="$idx" "$dir/ours.pb.gz" \
        >"$theirs" 2>"$theirs.log"
      top_rows "$ours" >"$ours.rows"
      top_rows "$theirs" >"$theirs.rows"
      if [[ -s $theirs.rows ]] && cmp -s "$ours.rows" "$theirs.rows"; then
        pass "$label (2) --sample-index $idx --top $n: same $(wc -l <"$ours.rows") rows, order, flat and cum as pprof -top"
      else
        fail "$label (2) --sample-index $idx --top $n: rows differ (- pprof, + ours)"
        diff "$theirs.rows" "$ours.rows" | head -n 20
      fi
      # The whole text too (the Time: line is the capture's own time).
      if diff <(grep -v '^Time: ' "$theirs") <(grep -v '^Time: ' "$ours") >"$ours.diff"; then
        pass "$label (2) --sample-index $idx --top $n: text identical to pprof -top"
      else
        fail "$label (2) --sample-index $idx --top $n: text differs (- pprof, + ours)"
        head -n 20 "$ours.diff"
      fi
    done
  done
  # A profile built from published counters says so where pprof shows it.
  if "${go[@]}" tool pprof -top "$dir/published.pb.gz" 2>/dev/null |
    grep -q '^goheap2pprof: published counters only'; then
    pass "$label (2) --counters published: pprof -top shows the published-counters comment"
  else
    fail "$label (2) --counters published: no comment in the pprof header"
  fi
  e2e_stop_pids
}

run_case rate1 1 || fail "rate1: could not run the target"
e2e_stop_pids
run_case ratedefault 0 || fail "ratedefault: could not run the target"
e2e_stop_pids

# (3) Before any GC.
nogc_dir=$work/nogc
mkdir -p "$nogc_dir"
cat >"$nogc_dir/main.go" <<'GO'
// Allocates with every allocation sampled and never collects garbage.
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

var keep [][]byte

//go:noinline
func retain() {
	for i := 0; i < 100; i++ {
		keep = append(keep, make([]byte, 4096))
	}
}

func main() {
	runtime.MemProfileRate = 1
	if os.Getenv("NOGC_NEVER_SET") == "1" {
		runtime.MemProfile(nil, true) // keeps heap profiling linked in; never runs
	}
	retain()
	fmt.Printf("READY %d\n", os.Getpid())
	time.Sleep(10 * time.Minute)
}
GO
printf 'module nogc\n\ngo 1.19\n' >"$nogc_dir/go.mod"
if ! (cd "$nogc_dir" && CGO_ENABLED=0 "${go[@]}" build -o nogc .) >"$nogc_dir/build.log" 2>&1; then
  fail "(3) go build of the no-GC program"
  cat "$nogc_dir/build.log"
else
  e2e_start "$nogc_dir/target.out" "$nogc_dir/target.err" env GOGC=off "$nogc_dir/nogc"
  nogc_pid=$target_pid
  if wait_ready "$nogc_dir" "$nogc_pid"; then
    "$tool" "$nogc_pid" --format json --counters published >"$nogc_dir/published.json" 2>/dev/null
    "$tool" "$nogc_pid" --format json >"$nogc_dir/exact.json" 2>/dev/null
    got_published=$(jq -c '[.status, .entries_total]' "$nogc_dir/published.json")
    # The largest main.retain entry is the make([]byte, 4096) loop (the
    # other is the growth of the keep slice).
    got_exact=$(jq -c '[.entries[] | select(.name == "main.retain")][0] | [.bytes, .objects]' \
      "$nogc_dir/exact.json")
    if [[ $got_published == '["complete",0]' && $got_exact == '[409600,100]' ]]; then
      pass "(3) before any GC: published shows nothing, exact shows main.retain's 100 x 4096 B"
    else
      fail "(3) before any GC: published $got_published (want [\"complete\",0]), exact main.retain $got_exact (want [409600,100])"
    fi
  else
    fail "(3) the no-GC program did not start"
  fi
  e2e_stop_pids
fi

# (4) Failures still produce JSON, with the usual exit code.
sleep 60 &
sleeper=$!
e2e_track_pid "$sleeper"
"$tool" "$sleeper" --format json >"$work/notgo.json" 2>"$work/notgo.log"
rc=$?
e2e_stop_pids
if [[ $rc -eq 5 && $(jq -r '[.status, (.entries | length), (.status_reason | test("not a Go program"))] | @csv' "$work/notgo.json") == '"unavailable",0,true' ]]; then
  pass "(4) non-Go process: exit 5 and JSON status unavailable"
else
  fail "(4) non-Go process: exit $rc, JSON: $(head -c 300 "$work/notgo.json")"
fi
missing=$(($(cat /proc/sys/kernel/pid_max) + 1))
"$tool" "$missing" --format json -o "$work/missing.json" 2>"$work/missing.log"
rc=$?
if [[ $rc -eq 3 && $(jq -r '[.status, .pid, (.status_reason | length > 0)] | @csv' "$work/missing.json") == "\"failed\",$missing,true" ]]; then
  pass "(4) missing pid: exit 3 and JSON status failed in the -o file"
else
  fail "(4) missing pid: exit $rc, JSON: $(head -c 300 "$work/missing.json" 2>/dev/null)"
fi

e2e_finish --no-skipped
