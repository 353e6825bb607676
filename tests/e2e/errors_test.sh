#!/usr/bin/env bash
# Every failure a user can meet, end to end: each case must end with the
# documented exit code, exactly one "goheap2pprof[ command]: error: ..." line naming the
# problem plus one "hint: ..." line, no output file created, and an existing
# -o file left byte-for-byte intact.
#
#   bash tests/e2e/errors_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_seams
e2e_require_command go "no go toolchain on PATH"
e2e_make_work errors
chmod 755 "$work"
mounted=""
# The cases run as the nobody user need the tool, a target and output
# directories that nobody can reach, wherever the build tree lives (a clone
# under a private mktemp directory, say).
nobody_dir=$(mktemp -d /tmp/goheap2pprof-nobody.XXXXXX)
chmod 755 "$nobody_dir"
cleanup() {
  e2e_stop_pids -9
  [[ -n $mounted ]] && umount "$mounted" 2>/dev/null
  rm -rf "$nobody_dir"
}
trap cleanup EXIT

# --- targets ---------------------------------------------------------------
build() {  # build <out> <dir> [env...]
  local out=$1 dir=$2
  shift 2
  (cd "$src/$dir" && env "$@" go build -o "$out" .) > "$work/build.log" 2>&1 || {
    echo "FAIL cannot build $dir: $(tail -3 "$work/build.log")"
    exit 1
  }
}
build "$work/quiet" testdata/errtargets/quiet
build "$work/nopprof" testdata/errtargets/nopprof
cp "$tool" "$work/quiet" "$nobody_dir/"

# start <outfile> <command...>: runs a target, waits for READY, sets TPID.
TPID=""
start() {
  local out=$1
  shift
  "$@" > "$out" 2>&1 &
  TPID=$!
  e2e_track_pid "$TPID"
  e2e_wait_for_line "$out" READY "$TPID" 15 && return 0
  echo "target did not become ready: $*; output: $(cat "$out")"
  return 1
}

# check_case <name> <expected-exit> <expected-message-substring> <dir> <rc> <stderr-file>
# Verifies the exit code, the two-line message, and that <dir> holds only
# keep.pb.gz with its original content.
check_case() {
  local name=$1 want_rc=$2 want_msg=$3 dir=$4 rc=$5 err=$6
  local problems=""
  [[ $rc == "$want_rc" ]] || problems+=" exit $rc (want $want_rc);"
  local msgs
  msgs=$(grep -v 'test seam:' "$err")
  local nerr nhint
  nerr=$(grep -c -E '^goheap2pprof( [a-z-]+)?: error: ' <<< "$msgs")
  nhint=$(grep -c '^hint: ..' <<< "$msgs")
  [[ $nerr == 1 && $nhint == 1 && $(wc -l <<< "$msgs") == 2 ]] ||
    problems+=" stderr is not exactly one error line and one hint line;"
  grep -qF -- "$want_msg" "$err" || problems+=" message lacks \"$want_msg\";"
  if [[ -n $dir ]]; then
    [[ $(ls -A "$dir") == keep.pb.gz ]] || problems+=" output dir now holds: $(ls -A "$dir" | tr '\n' ' ');"
    cmp -s "$dir/keep.pb.gz" "$work/keep.orig" || problems+=" existing -o file was changed;"
  fi
  if [[ -z $problems ]]; then
    pass "$name (exit $rc): $(grep -E '^goheap2pprof( [a-z-]+)?: error: ' "$err" | cut -c1-160)"
  else
    fail "$name:$problems"
    sed 's/^/    /' "$err"
  fi
}

head -c 4096 /dev/urandom > "$work/keep.orig"
# new_dir [parent]: a fresh output directory holding keep.pb.gz (the
# "existing -o file"), in $work unless a parent is given.
new_dir() {
  local d
  d=$(mktemp -d "${1:-$work}/out.XXXXXX")
  chmod 777 "$d"
  cp "$work/keep.orig" "$d/keep.pb.gz"
  chmod 666 "$d/keep.pb.gz"
  echo "$d"
}

# run_tool <name> <want-rc> <want-msg> [env VAR=... --] <pid> : runs with -o keep.pb.gz
run_case() {
  local name=$1 want_rc=$2 want_msg=$3
  shift 3
  local d rc
  d=$(new_dir)
  "$@" -o "$d/keep.pb.gz" > "$work/stdout" 2> "$work/stderr"
  rc=$?
  check_case "$name" "$want_rc" "$want_msg" "$d" "$rc" "$work/stderr"
  # The same failure with a new output name must create nothing.
  d=$(new_dir)
  "$@" -o "$d/new.pb.gz" > /dev/null 2>&1
  [[ ! -e $d/new.pb.gz ]] || fail "$name: created $d/new.pb.gz"
}

# --- 1. the pid is not usable ------------------------------------------------
run_case "pid does not exist" 3 "no process with pid" "$tool" 999999999
run_case "pid is not a number" 2 "is not a process id" "$tool" 12abc
bash -c 'sleep 0 & echo $! > '"$work"'/zombie; exec sleep 60' &
e2e_track_pid $!
sleep 0.5
zombie=$(cat "$work/zombie")
if [[ $(awk '{print $3}' "/proc/$zombie/stat" 2>/dev/null) == Z ]]; then
  run_case "zombie" 3 "is a zombie" "$tool" "$zombie"
else
  skip "zombie: could not make one"
fi
kthread=""
for s in /proc/[0-9]*/stat; do
  flags=$(awk '{print $9}' "$s" 2>/dev/null) || continue
  if [[ -n $flags ]] && (( (flags & 0x00200000) != 0 )); then
    kthread=$(basename "$(dirname "$s")")
    break
  fi
done
if [[ -n $kthread ]]; then
  run_case "kernel thread" 5 "kernel thread" "$tool" "$kthread"
else
  skip "kernel thread: none visible in this pid namespace"
fi
sleep 60 &
e2e_track_pid $!
run_case "not Go: sleep" 5 "bin/sleep (pid $!) is not a Go program" "$tool" $!
bash -c 'sleep 60; :' &
e2e_track_pid $!
run_case "not Go: bash" 5 "bin/bash (pid $!) is not a Go program" "$tool" $!
if command -v python3 >/dev/null; then
  python3 -c 'import time; print("READY", flush=True); time.sleep(60)' > "$work/py.out" &
  e2e_track_pid $!
  # python3 may be a shell shim that execs the interpreter: wait for it.
  for _ in $(seq 100); do grep -q READY "$work/py.out" && break; sleep 0.05; done
  run_case "not Go: python3" 5 "python" "$tool" $!
else
  skip "not Go: python3 is not installed"
fi

# --- 2. heap sampling is off ----------------------------------------------
start "$work/nopprof.out" "$work/nopprof" && \
  run_case "sampling compiled out" 7 "runtime.disableMemoryProfiling" "$tool" "$TPID"
start "$work/rate0.out" env GODEBUG=memprofilerate=0 "$work/quiet" -rate0 && \
  run_case "MemProfileRate = 0" 7 "turned off in process $TPID by the program or GODEBUG" "$tool" "$TPID"

# --- 3. nothing sampled yet: a valid empty profile, a warning, exit 0 ---------
# Sampling off from the start, then enabled with no allocation since: the
# bucket list is empty while the rate is positive. The runtime itself may
# still allocate in between (on a loaded machine sysmon starts a new M:
# runtime.allocm), and then the profile rightly has that sample; such a run
# is tried again, up to three times, with a fresh target.
nothing_sampled() {
  local attempt rc runtime_only=""
  for attempt in 1 2 3; do
    start "$work/idle.out" env GODEBUG=memprofilerate=0 "$work/quiet" -late-enable || return
    "$tool" "$TPID" -o "$work/empty.pb.gz" 2> "$work/stderr"
    rc=$?
    kill "$TPID" 2>/dev/null
    go tool pprof -raw "$work/empty.pb.gz" > "$work/empty.raw" 2>&1
    local samples
    samples=$(awk '/^Samples:/ {f = 1; next} /^Locations/ {f = 0} f' "$work/empty.raw" | wc -l)
    if [[ $rc == 0 ]] && grep "warning: no heap allocation has been sampled yet" "$work/stderr" >/dev/null &&
       [[ $samples == 1 ]]; then
      pass "nothing sampled yet (exit 0, empty profile, warning; attempt $attempt${runtime_only:+; before: $runtime_only})"
      return
    fi
    # Samples whose every frame is the runtime's own: try again.
    if [[ $rc == 0 && $samples -gt 1 ]] &&
       ! awk '/^Locations/ {f = 1; next} /^Mappings/ {f = 0} f' "$work/empty.raw" |
         grep -v " runtime\.[^ ]* " >/dev/null; then
      runtime_only+="${runtime_only:+, }$((samples - 1)) sample(s) of the runtime's own allocation"
      continue
    fi
    break
  done
  fail "nothing sampled yet: exit $rc${runtime_only:+ (before: $runtime_only)}"
  sed 's/^/    /' "$work/stderr" "$work/empty.raw" 2>/dev/null
}
nothing_sampled

# --- 4. unsupported targets ------------------------------------------------
if (cd "$src/testdata/errtargets/quiet" && GOARCH=386 go build -o "$work/quiet386" .) 2>/dev/null &&
   start "$work/q386.out" "$work/quiet386"; then
  run_case "32-bit ELF" 6 "32-bit ELF" "$tool" "$TPID"
else
  skip "32-bit ELF: cannot build or run a GOARCH=386 program here"
fi
# Same-length edits of the Go version string stand in for other toolchains.
version=$(go version "$work/quiet" | awk '{print $2}')
patch_version() {  # patch_version <new> <out>
  perl -pe "s/\\Q$version\\E/$1/g" "$work/quiet" > "$2" && chmod +x "$2"
}
old=go1.17.${version##*.}
new=go1.29.${version##*.}
if [[ ${#version} == "${#old}" ]] && patch_version "$old" "$work/quiet117" &&
   start "$work/q117.out" "$work/quiet117"; then
  run_case "Go older than 1.18" 6 "reads Go 1.18 and newer" "$tool" "$TPID"
else
  skip "Go older than 1.18: cannot patch $version"
fi
# A Go 1.26 runtime claiming a Go newer than every tested one is read with
# the newest (1.27) layout only if its DWARF proves it, and it does not:
# memRecordCycle still holds bytes. (tests/e2e/layout_test.sh has the cases
# where it does, and without DWARF.)
if [[ ${#version} == "${#new}" ]] && patch_version "$new" "$work/quiet129" &&
   start "$work/q129.out" "$work/quiet129"; then
  run_case "Go newer than tested, layout disproved by DWARF" 6 \
    "runtime.memRecordCycle is 32 bytes in the DWARF, 16 in the table" "$tool" "$TPID"
else
  skip "Go newer than tested: cannot patch $version"
fi

# --- 5. permission denied --------------------------------------------------
if command -v setpriv >/dev/null && [[ $(id -u) == 0 ]] && id nobody >/dev/null 2>&1 &&
   start "$work/perm.out" "$work/quiet"; then
  d=$(new_dir "$nobody_dir")
  setpriv --reuid=nobody --regid=nogroup --clear-groups "$nobody_dir/goheap2pprof" "$TPID" \
    -o "$d/keep.pb.gz" \
    > /dev/null 2> "$work/stderr"
  rc=$?
  check_case "permission denied (as nobody)" 4 "not permitted to inspect process $TPID" "$d" "$rc" \
    "$work/stderr"
  for word in CAP_SYS_PTRACE kernel.yama.ptrace_scope container; do
    grep -q "$word" "$work/stderr" || fail "permission hint does not mention $word"
  done
else
  skip "permission denied: needs root, setpriv and the nobody user"
fi

# --- 6. the target exits during a capture ----------------------------------
# Killed by SIGKILL in the middle of the walk of a long bucket list.
if start "$work/big.out" "$work/quiet" -big 20000; then
  d=$(new_dir)
  GOHEAP2PPROF_TEST_SEAM=pause-mid-walk=3000 "$tool" "$TPID" -o "$d/keep.pb.gz" \
    > /dev/null 2> "$work/stderr" &
  tpid=$!
  for _ in $(seq 100); do grep -q 'test seam: pausing' "$work/stderr" && break; sleep 0.05; done
  kill -9 "$TPID"
  wait "$TPID" 2>/dev/null
  wait "$tpid"
  check_case "target killed mid-walk" 3 "exited" "$d" "$?" "$work/stderr"
fi
# Ends between the walk and the end of the capture: once the tool announces
# its pause after the walk, not after a fixed time (-exit-after 1s ended the
# target mid-walk when the walk took over a second on a loaded machine).
if start "$work/exit.out" "$work/quiet"; then
  d=$(new_dir)
  GOHEAP2PPROF_TEST_SEAM=pause-after-walk=3000 "$tool" "$TPID" -o "$d/keep.pb.gz" \
    > /dev/null 2> "$work/stderr" &
  tpid=$!
  for _ in $(seq 200); do grep -q 'test seam: pausing' "$work/stderr" && break; sleep 0.05; done
  kill -TERM "$TPID"
  wait "$TPID" 2>/dev/null
  wait "$tpid"
  check_case "target exits during capture, after the walk" 3 "exited during the capture" "$d" "$?" \
    "$work/stderr"
fi

# --- 7. the pid is reused ----------------------------------------------------
if start "$work/reuse.out" "$work/quiet"; then
  d=$(new_dir)
  GOHEAP2PPROF_TEST_SEAM=pid-reuse "$tool" "$TPID" -o "$d/keep.pb.gz" > /dev/null 2> "$work/stderr"
  check_case "pid reused during capture" 3 "now belongs to another process" "$d" "$?" \
    "$work/stderr"
fi

# --- 8. the output is bad ------------------------------------------------------
if start "$work/out.out" "$work/quiet"; then
  "$tool" "$TPID" -o "$work/no/such/dir/heap.pb.gz" > /dev/null 2> "$work/stderr"
  check_case "output directory missing" 9 "does not exist" "" "$?" "$work/stderr"
  "$tool" "$TPID" -o /dev/full > /dev/null 2> "$work/stderr"
  check_case "output is /dev/full" 9 "No space left on device" "" "$?" "$work/stderr"
  mkdir -p "$work/tiny"
  if mount -t tmpfs -o size=64k tmpfs "$work/tiny" 2>/dev/null; then
    mounted=$work/tiny
    cp "$work/keep.orig" "$work/tiny/keep.pb.gz"
    head -c 1M /dev/zero > "$work/tiny/filler" 2>/dev/null
    "$tool" "$TPID" -o "$work/tiny/keep.pb.gz" > /dev/null 2> "$work/stderr"
    rc=$?
    rm -f "$work/tiny/filler"
    check_case "output filesystem full" 9 "No space left on device" "$work/tiny" "$rc" \
      "$work/stderr"
    umount "$work/tiny" && mounted=""
  else
    skip "output filesystem full: cannot mount a small tmpfs here"
  fi
fi
if command -v setpriv >/dev/null && [[ $(id -u) == 0 ]] &&
   start "$work/nobody.out" setpriv --reuid=nobody --regid=nogroup --clear-groups \
     "$nobody_dir/quiet"; then
  # Target and tool both run as nobody, so only the output directory is wrong.
  d=$(new_dir "$nobody_dir")
  chmod 755 "$d"
  TPID=$(pgrep -n -f "^$nobody_dir/quiet\$")
  setpriv --reuid=nobody --regid=nogroup --clear-groups "$nobody_dir/goheap2pprof" "$TPID" \
    -o "$d/keep.pb.gz" \
    > /dev/null 2> "$work/stderr"
  check_case "output directory not writable" 9 "is not writable" "$d" "$?" "$work/stderr"
else
  skip "output directory not writable: needs root and setpriv"
fi

# --- 9. a goroutine capture past its limits ----------------------------------
# The bounds of `goroutines` (goroutines in allgs, bytes read in all) stop the
# capture with a message naming the limit and the flag that raises it.
if start "$work/glimits.out" "$work/quiet"; then
  run_case "goroutines over --max-goroutines" 6 "over the limit of 2 goroutines" \
    "$tool" goroutines "$TPID" --max-goroutines 2
  run_case "goroutines over --max-bytes" 6 "passed the limit of 1000 bytes read" \
    "$tool" goroutines "$TPID" --max-bytes 1000
fi

e2e_finish
