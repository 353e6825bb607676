#!/usr/bin/env bash
# Post-mortem heap profiles from core files (goheap2pprof --core):
#  - oracle from real kernel cores: testdata/oracle (MemProfileRate=1, GC off
#    after publishing, its own heap profile written) is killed with SIGABRT
#    under GOTRACEBACK=crash and `ulimit -c unlimited`; the profile of its core
#    must mean exactly what its own profile says (tools/profdiff), for Go
#    1.19.8, 1.26.8 and 1.27.3 x exe and PIE, and one cgo build; one case also
#    renders json, text and --counters=published from the core;
#  - one gcore (gdb) core of a live target, compared the same way and deleted
#    at once (gdb 13 writes the whole address space, about 1.3 GB);
#  - a real out-of-memory death (testdata/oomcrash under `ulimit -v`): the
#    profile of its core must name main.growHeap as the top in-use site;
#  - bad inputs: a truncated core (small `ulimit -c`), the core of a non-Go
#    program, a core without NT_FILE, a wrong --exe, a file that is not a
#    core, an empty file: each a clear error, the right exit code, no output.
# Kernel cores need kernel.core_pattern to be a file name in the crashing
# process's directory (as on the test machines: "core"); the cases that need
# one are skipped with the reason when it is a pipe or a path.
#
#   bash tests/e2e/core_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
e2e_require_go
e2e_make_work core
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM
ready_timeout=${ORACLE_READY_TIMEOUT:-120}

# --- can the kernel write cores where we look? ------------------------------
e2e_kernel_core_check
[[ -n $kernel_why ]] && echo "note: kernel-core cases skip: $kernel_why"

# build <version> <mode> <cgo 0|1> <out> [dir]: builds testdata/oracle (or dir).
build() {
  local version=$1 mode=$2 cgo=$3 out=$4 dir=${5:-testdata/oracle} flags=()
  [[ $cgo == 1 ]] && flags=(-tags withcgo)
  (cd "$src/$dir" && env CGO_ENABLED="$cgo" $(go_cmd "$version") build -buildmode="$mode" \
    "${flags[@]}" -o "$out" .)
}

# crash_oracle <dir> <binary> [core-limit]: runs the oracle in dir (so its
# core lands there), waits for READY, aborts it, and sets core_file. Returns
# 1 with the reason in crash_why if the run failed.
core_file="" crash_why=""
crash_oracle() {
  local dir=$1 binary=$2 limit=${3:-unlimited} rc
  core_file="" crash_why=""
  e2e_start "$dir/target.out" "$dir/target.err" bash -c \
    'cd "$1" && ulimit -c "$2" && GOTRACEBACK=crash exec "$3" -rate 1 -out oracle.pb.gz' \
    _ "$dir" "$limit" "$binary"
  if ! e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" "$ready_timeout"; then
    crash_why="target did not print READY within ${ready_timeout}s: $(tail -n 3 "$dir/target.err")"
    e2e_stop_pids -9
    return 1
  fi
  kill -ABRT "$target_pid"
  wait "$target_pid"
  rc=$?
  pids=()
  if [[ $rc -ne 134 ]]; then
    crash_why="target exited $rc after SIGABRT, not 134 (SIGABRT with a core)"
    return 1
  fi
  core_file=$(ls -t "$dir/$core_prefix"* 2>/dev/null | head -n 1)
  [[ -n $core_file ]] || { crash_why="no core file in $dir"; return 1; }
}

# compare <label> <dir> <core> [tool args...]: profiles the core and diffs it
# with dir/oracle.pb.gz; -v must name the producer, pid, command and signal.
compare() {
  local label=$1 dir=$2 core=$3 rc samples
  shift 3
  "$tool" -v --core "$core" "$@" -o "$dir/ours.pb.gz" >"$dir/tool.out" 2>&1
  rc=$?
  if [[ $rc -ne 0 ]]; then
    fail "$label (goheap2pprof exited $rc)" "$dir/tool.out"
    return 1
  fi
  "$profdiff" "$dir/oracle.pb.gz" "$dir/ours.pb.gz" >"$dir/profdiff.out" 2>&1
  rc=$?
  samples=$(sed -n 's/^samples: expected \([0-9]*\),.*/\1/p' "$dir/profdiff.out")
  if [[ $rc -ne 0 ]]; then
    fail "$label (profdiff exited $rc; files in $dir)" "$dir/profdiff.out"
    return 1
  fi
  pass "$label (${samples:-?} samples, $(grep -o 'written by [^(]*[^( ]' "$dir/tool.out" | head -n 1))"
}

# verbose_names <label> <file> <regex>...: every regex must match a line.
verbose_names() {
  local label=$1 file=$2 missing=""
  shift 2
  for re in "$@"; do grep -qE -- "$re" "$file" || missing+=" '$re'"; done
  if [[ -z $missing ]]; then pass "$label"; else fail "$label: -v lacks$missing" "$file"; fi
}

# --- 1. the oracle matrix on kernel cores -------------------------------------
builds=()
for version in go1.19.8 go1.26.8 go1.27.3; do
  for mode in exe pie; do builds+=("$version $mode 0"); done
done
builds+=("go1.26.8 exe 1")
declare -A toolchain_state
saved_core=""  # the go1.26.8 exe core, kept for the format and bad-input cases
for entry in "${builds[@]}"; do
  read -r version mode cgo <<<"$entry"
  name="kernel core $version $mode$([[ $cgo == 1 ]] && echo ' cgo')"
  if [[ -n $kernel_why ]]; then
    skip "$name ($kernel_why)"
    continue
  fi
  if [[ -z ${toolchain_state[$version]:-} ]]; then
    if why=$(toolchain_ok "$version"); then toolchain_state[$version]=ok; else toolchain_state[$version]=$why; fi
  fi
  if [[ ${toolchain_state[$version]} != ok ]]; then
    skip "$name (${toolchain_state[$version]})"
    continue
  fi
  dir=$work/$(echo "$name" | tr ' ' '-')
  mkdir -p "$dir"
  binary=$work/bin/oracle-$version-$mode-cgo$cgo
  if ! build "$version" "$mode" "$cgo" "$binary" >"$dir/build.log" 2>&1; then
    if [[ $cgo == 1 ]] && ! command -v "${CC:-gcc}" >/dev/null; then
      skip "$name (no C compiler for cgo)"
      continue
    fi
    fail "$name (go build failed)" "$dir/build.log"
    continue
  fi
  if ! crash_oracle "$dir" "$binary"; then
    fail "$name ($crash_why)"
    continue
  fi
  if compare "$name" "$dir" "$core_file"; then
    if [[ $version == go1.26.8 && $mode == exe && $cgo == 0 ]]; then
      saved_core=$core_file
      saved_binary=$binary
      saved_dir=$dir
      verbose_names "$name: -v names producer, pid, command and signal" "$dir/tool.out" \
        'written by the Linux kernel' "process [0-9]+ \\(oracle-go1\\.26" 'signal SIGABRT' \
        'libdwfl: module .*load bias 0x0'
    else
      rm -f "$core_file"
    fi
  fi
done

# --- 2. every output format from a core ---------------------------------------
if [[ -n $saved_core ]]; then
  d=$saved_dir
  if "$tool" --core "$saved_core" --format json -o "$d/ours.json" 2>"$d/json.err" &&
    jq -e '.status == "complete" and (.entries | length) > 0' "$d/ours.json" >/dev/null 2>&1; then
    pass "core --format json ($(jq '.entries | length' "$d/ours.json") entries)"
  else
    fail "core --format json" "$d/json.err"
  fi
  if "$tool" --core "$saved_core" --format text --sample-index alloc_objects -o "$d/ours.txt" \
    2>"$d/text.err" && grep -q 'flat%' "$d/ours.txt" && grep -q 'main\.' "$d/ours.txt"; then
    pass "core --format text ($(grep -c . "$d/ours.txt") lines)"
  else
    fail "core --format text" "$d/text.err"
  fi
  # The oracle was written after two GCs with GC off: nothing is pending, so
  # the published counters are the whole profile; only the comment saying
  # "published" may differ.
  if "$tool" --core "$saved_core" --counters published -o "$d/published.pb.gz" 2>"$d/pub.err"; then
    "$profdiff" "$d/oracle.pb.gz" "$d/published.pb.gz" >"$d/pub.diff" 2>&1
    if grep -qE '^samples: expected ([0-9]+), actual \1, matched \1, only in expected 0, only in actual 0' "$d/pub.diff" &&
      [[ $(grep -c 'differ' "$d/pub.diff") == 1 ]] && grep -q '^header differs' "$d/pub.diff" &&
      [[ "$(grep 'expected: period_type' "$d/pub.diff" | sed 's/comments 0$/comments 1/; s/^ *expected: //')" == \
        "$(grep 'actual: *period_type' "$d/pub.diff" | sed 's/^ *actual: *//')" ]]; then
      pass "core --counters published: the oracle's samples, plus the comment that says published"
    else
      fail "core --counters published" "$d/pub.diff"
    fi
  else
    fail "core --counters published (goheap2pprof failed)" "$d/pub.err"
  fi
fi

# --- 3. gcore of a live target --------------------------------------------------
name="gcore go1.26.8 pie"
if ! command -v gcore >/dev/null; then
  skip "$name (gcore not installed: Debian package gdb, see scripts/install-deps.sh)"
elif [[ ${toolchain_state[go1.26.8]:-ok} != ok ]]; then
  skip "$name (${toolchain_state[go1.26.8]})"
else
  dir=$work/gcore
  mkdir -p "$dir"
  binary=$work/bin/oracle-go1.26.8-pie-cgo0
  [[ -x $binary ]] || build go1.26.8 pie 0 "$binary" >"$dir/build.log" 2>&1
  e2e_start "$dir/target.out" "$dir/target.err" "$binary" -rate 1 -out "$dir/oracle.pb.gz"
  if ! e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" "$ready_timeout"; then
    fail "$name (target did not print READY)" "$dir/target.err"
  elif ! gcore -o "$dir/core" "$target_pid" >"$dir/gcore.log" 2>&1 || [[ ! -f $dir/core.$target_pid ]]; then
    if grep -qiE 'ptrace|not permitted' "$dir/gcore.log"; then
      skip "$name (gdb may not attach here: $(grep -iE 'ptrace|not permitted' "$dir/gcore.log" | head -n 1))"
    else
      fail "$name (gcore failed)" "$dir/gcore.log"
    fi
  else
    gcore_file=$dir/core.$target_pid
    echo "gcore wrote $(du -h --apparent-size "$gcore_file" | cut -f1) ($(du -h "$gcore_file" | cut -f1) on disk)"
    e2e_stop_pids
    compare "$name" "$dir" "$gcore_file" &&
      verbose_names "$name: -v names gdb and the page size 1" "$dir/tool.out" \
        'written by gdb \(gcore\) \(NT_FILE page size 1\)' 'process [0-9]+ \(oracle-go1' \
        'alive: gcore stopped it'
  fi
  rm -f "$dir"/core.*
  e2e_stop_pids
fi

# --- 4. a real out-of-memory death -----------------------------------------------
name="out-of-memory death (ulimit -v, GOTRACEBACK=crash)"
if [[ -n $kernel_why ]]; then
  skip "$name ($kernel_why)"
else
  dir=$work/oom
  mkdir -p "$dir"
  if ! build go1.26.8 exe 0 "$work/bin/oomcrash" testdata/oomcrash >"$dir/build.log" 2>&1; then
    fail "$name (go build failed)" "$dir/build.log"
  else
    # 1 GB of address space: enough for the runtime to start (400 MB is
    # not), little enough to run out after a few hundred MiB of heap.
    (cd "$dir" && ulimit -c unlimited && ulimit -v 1000000 &&
      GOTRACEBACK=crash exec "$work/bin/oomcrash") >"$dir/target.out" 2>"$dir/target.err"
    rc=$?
    core=$(ls -t "$dir/$core_prefix"* 2>/dev/null | head -n 1)
    if [[ $rc -ne 134 ]] || ! grep -q '^fatal error: out of memory' "$dir/target.err" || [[ -z $core ]]; then
      fail "$name (exit $rc, core '${core:-none}'; want 134, 'fatal error: out of memory' and a core)" "$dir/target.err"
    elif ! "$tool" -v --core "$core" -o "$dir/oom.pb.gz" >"$dir/tool.out" 2>&1; then
      fail "$name (goheap2pprof failed)" "$dir/tool.out"
    else
      echo "the runtime said: $(head -n 1 "$dir/target.err")"
      # go tool pprof reads our file independently; its first row is the top
      # in-use site.
      "${go[@]}" tool pprof -top -sample_index=inuse_space "$dir/oom.pb.gz" >"$dir/top.txt" 2>&1
      sed 's/^/    /' "$dir/top.txt" | head -n 9
      top=$(awk '/flat%/ {getline; print $NF; exit}' "$dir/top.txt")
      if [[ $top == main.growHeap ]]; then
        pass "$name: top in-use site is main.growHeap"
      else
        fail "$name: top in-use site is '$top', not main.growHeap" "$dir/top.txt"
      fi
    fi
    rm -f "$dir/$core_prefix"*
  fi
fi

# --- 5. bad inputs ------------------------------------------------------------------
# bad_input <label> <want-exit> <message> <tool args...>: the tool must fail
# with that exit code and message, and leave no output file.
bad_input() {
  local label=$1 want=$2 msg=$3 d=$work/bad rc
  shift 3
  mkdir -p "$d"
  rm -f "$d/out.pb.gz"
  "$tool" "$@" -o "$d/out.pb.gz" >"$d/err" 2>&1
  rc=$?
  local problems=""
  [[ $rc == "$want" ]] || problems+=" exit $rc (want $want);"
  grep -qF -- "$msg" "$d/err" || problems+=" message lacks \"$msg\";"
  grep -q '^hint: ..' "$d/err" || problems+=" no hint;"
  [[ ! -e $d/out.pb.gz ]] || problems+=" an output file was written;"
  [[ -z $(ls "$d" | grep -v '^err$') ]] || problems+=" left files: $(ls "$d" | grep -v '^err$' | tr '\n' ' ');"
  if [[ -z $problems ]]; then
    pass "$label (exit $rc): $(grep '^goheap2pprof: error: ' "$d/err" | cut -c 1-150)"
  else
    fail "$label:$problems" "$d/err"
  fi
}
mkdir -p "$work/inputs"
: >"$work/inputs/empty"
bad_input "empty file" 2 "is empty" --core "$work/inputs/empty"
bad_input "not a core (an executable)" 2 "is not a core file" --core "$tool"
bad_input "not a core (text)" 2 "is not a core file" --core "$src/README.md"
bad_input "no such core" 9 "cannot open core file" --core "$work/inputs/absent"
if [[ -n $saved_core ]]; then
  bad_input "wrong --exe (another program)" 2 "is not the executable of" \
    --core "$saved_core" --exe "$work/bin/oomcrash"
  if [[ -x $work/bin/oracle-go1.26.8-pie-cgo0 ]]; then
    bad_input "wrong --exe (same program, PIE build)" 2 "is not the executable of" \
      --core "$saved_core" --exe "$work/bin/oracle-go1.26.8-pie-cgo0"
  fi
  # Without NT_FILE the core does not say which file the process ran: the
  # note's type is renamed in a copy.
  python3 - "$saved_core" "$work/inputs/no-nt-file" <<'EOF'
import struct, sys
data = bytearray(open(sys.argv[1], 'rb').read())
phoff, = struct.unpack_from('<Q', data, 32)
phnum, = struct.unpack_from('<H', data, 56)
for i in range(phnum):
    t, _, off, _, _, fs, _, _ = struct.unpack_from('<IIQQQQQQ', data, phoff + i * 56)
    if t != 4:
        continue
    pos = off
    while pos + 12 <= off + fs:
        namesz, descsz, ntype = struct.unpack_from('<III', data, pos)
        if ntype == 0x46494c45:  # NT_FILE
            struct.pack_into('<I', data, pos + 8, 0x46494c46)
        pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
open(sys.argv[2], 'wb').write(data)
EOF
  bad_input "core without NT_FILE" 2 "has no NT_FILE note" --core "$work/inputs/no-nt-file"
  if "$tool" --core "$work/inputs/no-nt-file" --exe "$saved_binary" -o "$work/inputs/no-nt-file.pb.gz" \
    2>"$work/inputs/no-nt-file.err"; then
    pass "core without NT_FILE but with --exe: profiled"
  else
    fail "core without NT_FILE but with --exe" "$work/inputs/no-nt-file.err"
  fi
  rm -f "$work/inputs/no-nt-file"
fi
if [[ -z $kernel_why ]]; then
  # A real truncated core: RLIMIT_CORE of 8 MiB stops the kernel mid-dump.
  dir=$work/truncated
  mkdir -p "$dir"
  if [[ ! -x $work/bin/oracle-go1.26.8-exe-cgo0 ]]; then
    skip "truncated core (the go1.26.8 exe oracle was not built)"
  elif crash_oracle "$dir" "$work/bin/oracle-go1.26.8-exe-cgo0" 8192; then
    echo "truncated core: $(stat -c %s "$core_file") bytes"
    bad_input "truncated core (ulimit -c 8192)" 8 "is truncated" --core "$core_file"
  else
    fail "truncated core ($crash_why)"
  fi
  rm -f "$dir/$core_prefix"*
  # A core of a program that is not Go.
  dir=$work/notgo
  mkdir -p "$dir"
  e2e_start "$dir/out" "$dir/err" bash -c 'cd "$1" && ulimit -c unlimited && exec sleep 60' _ "$dir"
  sleep 0.5
  kill -ABRT "$target_pid"
  wait "$target_pid"
  pids=()
  core=$(ls -t "$dir/$core_prefix"* 2>/dev/null | head -n 1)
  if [[ -n $core ]]; then
    bad_input "core of a non-Go program (sleep)" 5 "is not a Go program" --core "$core"
  else
    fail "core of a non-Go program (sleep left no core)"
  fi
  rm -f "$dir/$core_prefix"*
else
  skip "truncated core ($kernel_why)"
  skip "core of a non-Go program ($kernel_why)"
fi
[[ -n $saved_core ]] && rm -f "$saved_core"

e2e_finish
