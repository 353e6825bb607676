#!/usr/bin/env bash
# End-to-end test of `goheap2pprof mem`: testdata/memtarget (Go 1.26.8) holds
# memory outside the Go runtime or not, prints its own
# /memory/classes/total:bytes, and waits quiescent:
#  - a cgo build that C.mallocs and touches 100 MiB shows 100 MiB not managed
#    by the Go runtime, within [100 MiB - (Sys - HeapReleased), 100 MiB + 8 MiB]:
#    the figure is RssAnon - (Sys - HeapReleased), and the runtime's mapped but
#    never touched pages (at most Sys - HeapReleased) count against it; above,
#    the C library's and threads' own anonymous pages (measured: under 2 MiB);
#  - a pure Go build shows at most 4 MiB (written .data/.bss pages);
#  - the total of the tree equals the target's own runtime/metrics value, in
#    the text and in --format json, when the target's own figure was the
#    same before and after our read (SIGUSR1 makes it print it again; a
#    figure that moved is read again, three times at most);
#  - --core on a gcore core gives the same total and no process figures, and
#    the one-shot --format debug1 of it ends its MemStats block without MaxRSS;
#  - the goroutine stacks by creation site of 10,000 parked goroutines sum
#    to at most the runtime's StackInuse and at least 90 % of it;
#  - errors: no such pid (3), not a Go process (5), a bad pid or no pid (2),
#    each as "goheap2pprof mem: error: ..." with a hint.
#
#   bash tests/e2e/mem_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command jq "needs jq"
e2e_make_work mem
trap 'e2e_stop_pids -9' EXIT
MiB=$((1 << 20))

mkdir -p "$work/bin"
for cgo in 0 1; do
  if ! (cd "$src/testdata/memtarget" && CGO_ENABLED=$cgo "${go[@]}" build -o "$work/bin/memtarget-$cgo" .) \
    >"$work/build-$cgo.log" 2>&1; then
    fail "go build of testdata/memtarget (CGO_ENABLED=$cgo)" "$work/build-$cgo.log"
    e2e_finish
  fi
done

# start_target <name> <args...>: started (quiescent until killed); sets
# tname, tpid and own_total.
start_target() {
  tname=$1
  shift
  e2e_start "$work/$tname.out" "$work/$tname.err" "$@"
  tpid=$target_pid
  asked=0
  if ! e2e_wait_for_line "$work/$tname.out" "^READY" "$tpid" 20; then
    fail "$tname: target did not start" "$work/$tname.err"
    e2e_finish
  fi
  own_total=$(awk '$2 == "/memory/classes/total:bytes" {t = $3} END {print t}' "$work/$tname.out")
}

# ask_own_total: the target prints its total again (SIGUSR1); sets own_total.
ask_own_total() {
  asked=$((asked + 1))
  kill -USR1 "$tpid" && e2e_wait_for_line "$work/$tname.out" "^AGAIN $asked\$" "$tpid" 20 ||
    return 1
  own_total=$(awk '$2 == "/memory/classes/total:bytes" {t = $3} END {print t}' "$work/$tname.out")
}

# read_settled <out> <err> <command...>: runs our read between two of the
# target's own reports of its total, again while they differ (three times at
# most: the target's own runtime grew meanwhile, say by a thread's signal
# stack). Returns 1 if the command failed, 2 unless both reports agreed;
# own_total is the later one.
read_settled() {
  local out=$1 err=$2 before attempt
  shift 2
  for attempt in 1 2 3; do
    before=$own_total
    "$@" >"$out" 2>"$err" || return 1
    ask_own_total || { echo "$tname did not print its total again" >>"$err"; return 2; }
    [[ $own_total == "$before" ]] && return 0
    echo "  ($tname's own total moved from $before to $own_total during read $attempt; reading again)"
  done
  echo "$tname's own total never held still across a read" >>"$err"
  return 2
}

# check_json <name> <file> <jq-condition> <what>
check_json() {
  if [[ -s $2 ]] && jq -e "$3" "$2" >/dev/null; then
    pass "$1: $4 ($(jq -c '{not_go: .not_managed_by_go_bytes, sys: .memstats.Sys,
      released: .memstats.HeapReleased, anon: .process.rss_anon_bytes}' "$2"))"
  else
    fail "$1: $4" "$2"
  fi
}

# --- cgo: 100 MiB outside the runtime -----------------------------------------
start_target cgo "$work/bin/memtarget-1" -cmalloc 100
read_settled "$work/cgo.json" "$work/cgo.err" "$tool" mem --format json "$tpid" ||
  fail "mem --format json (cgo)" "$work/cgo.err"
check_json cgo "$work/cgo.json" "
  .not_managed_by_go_bytes >= 100 * $MiB - (.memstats.Sys - .memstats.HeapReleased) and
  .not_managed_by_go_bytes <= 108 * $MiB" "about 100 MiB not managed by the Go runtime"
check_json cgo "$work/cgo.json" ".metrics[\"/memory/classes/total:bytes\"] == $own_total and
  .memstats.Sys == $own_total" "the total equals the target's own ($own_total)"
read_settled "$work/cgo.txt" "$work/cgo.err" "$tool" mem "$tpid" || fail "mem (cgo)" "$work/cgo.err"
not_go=$(jq .not_managed_by_go_bytes "$work/cgo.json")
if grep -qE "^ +[0-9.]+[KMG]? +$own_total +100\.0%  total$" "$work/cgo.txt" &&
  grep -q "^Not managed by the Go runtime:" "$work/cgo.txt" &&
  grep -qE "^  [0-9.]+M \([0-9]+\) = RSS anon" "$work/cgo.txt" &&
  grep -qE "^  RSS  +[0-9.]+M \(anon [0-9.]+M, file" "$work/cgo.txt" &&
  grep -qE "^  live  +" "$work/cgo.txt" && grep -q "^  GOMEMLIMIT  none$" "$work/cgo.txt"; then
  pass "cgo: text shows the tree's total, RSS, live heap and the not-Go line"
else
  fail "cgo: text" "$work/cgo.txt"
fi
cgo_pid=$tpid

# --- pure Go: none outside ----------------------------------------------------
start_target pure "$work/bin/memtarget-0"
read_settled "$work/pure.json" "$work/pure.err" "$tool" mem --format json "$tpid" ||
  fail "mem --format json (pure Go)" "$work/pure.err"
check_json "pure Go" "$work/pure.json" ".not_managed_by_go_bytes <= 4 * $MiB" \
  "at most 4 MiB not managed by the Go runtime"
check_json "pure Go" "$work/pure.json" ".metrics[\"/memory/classes/total:bytes\"] == $own_total" \
  "the total equals the target's own ($own_total)"
if jq -e '.cgroup == null or (.cgroup.usage_bytes > 0)' "$work/pure.json" >/dev/null; then
  pass "pure Go: cgroup figures absent or a usage ($(jq -c .cgroup "$work/pure.json"))"
else
  fail "pure Go: cgroup" "$work/pure.json"
fi

# --- --core -------------------------------------------------------------------
gcore_rc=127
if command -v gcore >/dev/null; then
  read_settled "$work/gcore.out" "$work/gcore.log" gcore -o "$work/core" "$tpid"
  gcore_rc=$?
fi
if ((gcore_rc == 127)); then
  skip "mem --core (gcore not installed: Debian package gdb)"
elif ((gcore_rc == 2)); then
  fail "gcore of a target whose total held still" "$work/gcore.log"
elif ((gcore_rc != 0)) || [[ ! -f $work/core.$tpid ]]; then
  skip "mem --core (gcore could not attach: $(tail -n 1 "$work/gcore.log"))"
else
  if "$tool" mem --core "$work/core.$tpid" --format json >"$work/core.json" 2>"$work/core.err"; then
    check_json "--core" "$work/core.json" ".metrics[\"/memory/classes/total:bytes\"] == $own_total and
      .process == null and .cgroup == null and .pid == $tpid" "same total, no process figures"
  else
    fail "mem --core" "$work/core.err"
  fi
  "$tool" mem --core "$work/core.$tpid" >"$work/core.txt" 2>&1
  if grep -q "Process: no RSS figures (read from a core file" "$work/core.txt"; then
    pass "--core: text says a core keeps no RSS figures"
  else
    fail "--core: text" "$work/core.txt"
  fi
  # The one-shot --format debug1 of a core: the block, without MaxRSS (a
  # core keeps no peak RSS; Go 1.20+ leaves the line out when it has none).
  "$tool" --core "$work/core.$tpid" --format debug1 >"$work/core-debug1.txt" 2>&1
  if grep -q "^# runtime.MemStats$" "$work/core-debug1.txt" &&
    grep -q "^# Sys = $own_total$" "$work/core-debug1.txt" &&
    [[ $(tail -n 1 "$work/core-debug1.txt") == "# DebugGC = false" ]]; then
    pass "--core --format debug1: the MemStats block (Sys = the target's own total), no MaxRSS"
  else
    fail "--core --format debug1" "$work/core-debug1.txt"
  fi
  rm -f "$work/core.$tpid"
fi

# --- goroutine stacks by creation site -----------------------------------------
# testdata/goroutines parks 10,000 goroutines created by main.main at one
# site, besides a dozen others: their stacks (g.stack.hi - g.stack.lo,
# summed) are at most the runtime's StackInuse, and most of it; the rest is
# system goroutines, each M's g0 and signal stacks, and stacks cached for reuse.
if (cd "$src/testdata/goroutines" && CGO_ENABLED=0 "${go[@]}" build -o "$work/bin/goroutines" .) \
  >"$work/build-g.log" 2>&1; then
  mkdir -p "$work/g"
  e2e_start "$work/g.out" "$work/g.err" "$work/bin/goroutines" "$work/g" 10000
  gpid=$target_pid
  e2e_wait_until 30 test -e "$work/g/ready"
  "$tool" mem --format json "$gpid" >"$work/g.json" 2>"$work/g.err2"
  "$tool" mem "$gpid" >"$work/g.txt" 2>&1
  if jq -e '.goroutine_stacks as $s | .memstats.StackInuse as $in |
      $s.bytes <= $in and $s.bytes >= 0.9 * $in and $s.goroutines >= 10000 and
      ($s.sites[0].created_by | startswith("main.main at ")) and $s.sites[0].goroutines >= 10000' \
    "$work/g.json" >/dev/null && grep -q "^Goroutine stacks by creation site" "$work/g.txt"; then
    pass "goroutine stacks: $(jq -r '.goroutine_stacks | "\(.bytes) bytes in \(.goroutines) goroutines, \(.bytes * 1000 / .stack_inuse_bytes | round / 10)% of StackInuse \(.stack_inuse_bytes); top site \(.sites[0].goroutines) created by \(.sites[0].created_by)"' "$work/g.json")"
  else
    fail "goroutine stacks by site against StackInuse" "$work/g.json"
  fi
  e2e_stop_pids
else
  fail "go build of testdata/goroutines" "$work/build-g.log"
fi

# --- errors -------------------------------------------------------------------
# expect_error <what> <code> <regex> <args...>
expect_error() {
  local what=$1 code=$2 regex=$3 rc
  shift 3
  "$tool" mem "$@" >"$work/err.out" 2>&1
  rc=$?
  if ((rc == code)) && grep -qE "$regex" "$work/err.out" && grep -q "^hint: " "$work/err.out"; then
    pass "$what: exit $rc, $(head -n 1 "$work/err.out")"
  else
    echo "exit $rc" >>"$work/err.out"
    fail "$what" "$work/err.out"
  fi
}
sleep 60 &
sleeper=$!
e2e_track_pid "$sleeper"
gone=$( (sh -c 'echo $$') )
expect_error "no such pid" 3 "^goheap2pprof mem: error: .*$gone" "$gone"
expect_error "not a Go process" 5 "^goheap2pprof mem: error: " "$sleeper"
expect_error "bad pid" 2 "^goheap2pprof mem: error: \"12x\" is not a process id" 12x
expect_error "no pid" 2 "^goheap2pprof mem: error: a pid or --core is required"
expect_error "bad format" 2 "^goheap2pprof mem: --format" --format xml "$cgo_pid"
if "$tool" mem --help | grep -q "^Usage: goheap2pprof mem "; then
  pass "mem --help has its usage line (man page and completions pick it up)"
else
  fail "mem --help" /dev/null
fi
e2e_finish
