# The goroutine oracle's comparisons, shared by the suites that hold a
# capture of testdata/goroutines against the target's own files
# (goroutines_test.sh: the CLI; goroutines_arm64_test.sh: the CLI on arm64
# under qemu; serve_goroutine_test.sh: serve's /debug/pprof/goroutine), and
# the build of that target. Not a test: sourced after lib.sh.
#
#   goroutines_program <version> <build> <label>  # sets prog
#   check_diff <profdiff.out>; check_text <theirs.txt> <ours.txt>;
#   check_dump <theirs2.txt> <ours2.txt>;
#   usable_toolchain <version>;
#   check_goroutine_profile <label> <dir> <pid>; check_texts <label> <dir> <pid>;
#   check_busy <profdiff.out>; busy <version> [label]

# goroutines_program <version> <build> <label>: sets prog to the go_programs
# fixture's build goroutines-<arch>-<build> of testdata/goroutines for that
# toolchain (tests/go_programs.sh: exe, pie-stripped, pie-cgo-stripped,
# exe-mod127; arch is $GOARCH, amd64 unless set: arm64 has exe and
# pie-stripped where it runs live); fails <label> and returns 1 when the
# fixture has none.
goroutines_program() {
  prog=$(go_program "$1" "goroutines-${GOARCH:-amd64}-$2")
  [[ -x $prog ]] && return 0
  fail "$3: the go_programs fixture did not build $prog (bash tests/go_programs.sh $bin)"
  return 1
}

# check_diff <profdiff.out>: the only differences are the writer goroutine
# (only in the target's file, inside runtime/pprof.writeGoroutine) and main
# parked in select{} (only in ours), one goroutine each.
check_diff() {
  PYTHONPATH="$src/tests/e2e" python3 - "$1" <<'PY'
import re, sys
from goroutine_dump import profdiff_blocks
expected, actual = profdiff_blocks(sys.argv[1])
ok = (len(expected) == 1 and 'values [1]' in expected[0] and
      'runtime/pprof.writeGoroutine' in expected[0] and
      len(actual) == 1 and 'values [1]' in actual[0] and
      'runtime.block' in actual[0] and 'main.main' in actual[0])
sys.exit(0 if ok else "differences other than the writer goroutine")
PY
}

# check_text <theirs.txt> <ours.txt>: the debug=1 texts are byte for byte
# the same, in the same order, but for the writer's record in theirs and
# main's (parked in select{}, its first frame main.main) in ours.
check_text() {
  python3 - "$1" "$2" <<'PY'
import sys
def records(path, drop):
    lines = open(path).read().split('\n')
    header, body = lines[0], '\n'.join(lines[1:])
    recs = [r for r in body.split('\n\n') if r.strip()]
    kept = [r for r in recs if not drop(r)]
    if len(kept) != len(recs) - 1:
        sys.exit(f"{path}: {len(recs) - len(kept)} records to leave out, not 1")
    return header, kept
def first_frame(r):
    frames = [l for l in r.split('\n') if l.startswith('#\t')]
    return frames[0] if frames else ''
theirs = records(sys.argv[1], lambda r: 'runtime/pprof.writeGoroutine' in r)
ours = records(sys.argv[2], lambda r: '\tmain.main+' in first_frame(r))
if theirs != ours:
    for a, b in zip([theirs[0]] + theirs[1], [ours[0]] + ours[1]):
        if a != b:
            print("theirs:\n" + a + "\nours:\n" + b)
            break
    sys.exit("the debug=1 texts differ")
PY
}

# check_dump <theirs2.txt> <ours2.txt>: the same goroutines in the same
# order, each block equal with argument lists masked and the minutes of
# the header within one; the writer (theirs: [running] in runtime/pprof;
# ours: the same goroutine, parked since) is left out of both.
check_dump() {
  PYTHONPATH="$src/tests/e2e" python3 - "$1" "$2" <<'PY'
import sys
from goroutine_dump import blocks
theirs, ours = blocks(sys.argv[1]), blocks(sys.argv[2])
writers = [g for g, (st, _, body) in theirs.items()
           if st == 'running' and any('runtime/pprof.writeGoroutineStacks' in l for l in body)]
if len(writers) != 1:
    sys.exit(f"{len(writers)} writer goroutines in theirs, not 1")
for d in (theirs, ours):
    d.pop(writers[0], None)
if list(theirs) != list(ours):
    sys.exit(f"goroutine ids or order differ: {len(theirs)} theirs, {len(ours)} ours; "
             f"only theirs {sorted(set(theirs) - set(ours))[:5]}, only ours {sorted(set(ours) - set(theirs))[:5]}")
for g in theirs:
    (s1, m1, b1), (s2, m2, b2) = theirs[g], ours[g]
    if s1 != s2 or abs(m1 - m2) > 1 or b1 != b2:
        sys.exit(f"goroutine {g} differs:\ntheirs [{s1}, {m1} minutes]\n" + '\n'.join(b1) +
                 f"\nours [{s2}, {m2} minutes]\n" + '\n'.join(b2))
print(f"{len(theirs)} goroutines")
PY
}

# usable_toolchain <version>: true when the go_programs fixture has this
# toolchain and it runs here; otherwise reports a skip or a failure.
usable_toolchain() {
  local s why
  read -r s why <<<"$(go_programs_status "$1")"
  if [[ $s != ok ]]; then
    [[ $s == skip ]] && skip "$1 ($why)" || fail "$1 ($why)"
    return 1
  fi
  if ! why=$(toolchain_ok "$1"); then
    fail "$1: $why"
    return 1
  fi
}

# check_texts <label> <dir> <pid>: our debug=1 must be the target's
# ($dir/out/goroutine.txt) byte for byte but the writer's record, and our
# debug=2 its dump but the writer (check_text, check_dump).
check_texts() {
  local label=$1 dir=$2 pid=$3
  if ! "$tool" goroutines "$pid" --format debug1 -o "$dir/ours.txt" 2>"$dir/tool1.err"; then
    fail "$label debug=1: goheap2pprof goroutines failed" "$dir/tool1.err"
  elif check_text "$dir/out/goroutine.txt" "$dir/ours.txt" >"$dir/check1.out" 2>&1; then
    pass "$label debug=1: $(head -n 1 "$dir/ours.txt"), byte for byte but the writer's record"
  else
    fail "$label debug=1: the texts differ ($dir)" "$dir/check1.out"
  fi
  if ! "$tool" goroutines "$pid" --format debug2 -o "$dir/ours2.txt" 2>"$dir/tool2.err"; then
    fail "$label debug=2: goheap2pprof goroutines failed" "$dir/tool2.err"
  elif check_dump "$dir/out/goroutine2.txt" "$dir/ours2.txt" >"$dir/check2.out" 2>&1; then
    pass "$label debug=2: $(cat "$dir/check2.out") with the same headers, frames, +0x offsets and creators but the writer"
  else
    fail "$label debug=2: the dumps differ ($dir)" "$dir/check2.out"
  fi
}

# check_goroutine_profile <label> <dir> <pid>: our pprof profile must be
# the target's ($dir/out/goroutine.pb.gz) but the writer and main
# (check_diff), with nothing dropped from a target that holds still.
check_goroutine_profile() {
  local label=$1 dir=$2 pid=$3
  if ! "$tool" goroutines "$pid" -o "$dir/ours.pb.gz" -v >"$dir/tool.out" 2>"$dir/tool.err"; then
    fail "$label: goheap2pprof goroutines failed" "$dir/tool.err"
  elif ! grep -q 'retried [0-9]*, dropped 0,' "$dir/tool.err"; then
    fail "$label: goroutines were dropped from a target that holds still" "$dir/tool.err"
  else
    "$profdiff" --ignore-comments "$dir/out/goroutine.pb.gz" "$dir/ours.pb.gz" >"$dir/profdiff.out" 2>&1
    if check_diff "$dir/profdiff.out" >"$dir/check.out" 2>&1; then
      pass "$label debug=0: $(sed -n 's/^samples: //p' "$dir/profdiff.out"); only the writer differs"
    else
      cat "$dir/check.out" >>"$dir/profdiff.out"
      fail "$label debug=0: the profiles differ ($dir)" "$dir/profdiff.out"
    fi
  fi
}

# check_busy <profdiff.out>: the target's stable goroutines are all there
# with their counts (the reader waits out a GC scan or a stack copy before it
# reads a goroutine again, so none is dropped); what differs is the writer
# (only in theirs) and, only in ours, main parked in select{} and the
# churning goroutines and spawners.
check_busy() {
  PYTHONPATH="$src/tests/e2e" python3 - "$1" <<'PY'
import re, sys
from goroutine_dump import profdiff_blocks
expected, actual = profdiff_blocks(sys.argv[1])
def count(b):
    return int(re.match(r'only in \w+: values \[(\d+)\]', b).group(1))
def frames(b):
    return [l.split()[1:] for l in b.splitlines()[1:] if l.startswith('    0x')]
writer = [b for b in expected if 'runtime/pprof.writeGoroutine' in b]
if len(writer) != 1:
    sys.exit("the writer of the target's profile is not the one goroutine only in theirs")
for b in expected:
    if b in writer:
        continue
    ours = [a for a in actual if frames(a) == frames(b)]
    if len(ours) != 1 or count(ours[0]) != count(b):
        sys.exit("a stable goroutine of the target is missing or counted differently:\n" + b)
    actual.remove(ours[0])
# A stack only in ours must be one the target makes: runtime (or time)
# frames, then exactly the function of one of its goroutines, outermost.
def runtime(f):
    return f.startswith(('runtime.', 'time.'))
for b in actual:
    funcs = [l.split()[1] for l in b.splitlines()[1:] if l.startswith('    0x')]
    shape = ['main.main', 'runtime.main'] if funcs[-2:] == ['main.main', 'runtime.main'] else funcs[-1:]
    if shape not in (['main.churnOne'], ['main.spawn'], ['main.main', 'runtime.main']) or \
            not all(runtime(f) for f in funcs[:-len(shape)]):
        sys.exit("a stack only in ours that the target does not make:\n" + b)
PY
}

# busy <version> [label]: the target also creates and ends goroutines, up to
# 50,000 a second; five captures must complete, drop nothing of the stable
# goroutines, and return no stack the target does not make. The target has
# $count goroutines from one site, and runs under the command in the array
# target_runner when it is set (qemu).
busy() {
  local version=$1 label=${2:-$1} dir=$work/$1-busy i retried=0 dropped=0 r d bad="" prog
  goroutines_program "$version" exe "$label busy" || return
  mkdir -p "$dir/out"
  e2e_start "$dir/target.out" "$dir/target.err" ${target_runner[@]+"${target_runner[@]}"} \
    "$prog" "$dir/out" "$count" churn
  local pid=$target_pid
  if ! e2e_wait_until 120 test -e "$dir/out/ready"; then
    fail "$label busy: the target did not write its profiles" "$dir/target.err"
    e2e_stop_pids
    return
  fi
  for i in 1 2 3 4 5; do
    if ! "$tool" goroutines "$pid" -o "$dir/ours$i.pb.gz" -v >/dev/null 2>"$dir/tool$i.err"; then
      bad="capture $i failed"
      fail "$label busy: capture $i failed" "$dir/tool$i.err"
      break
    fi
    read -r r d <<<"$(sed -n 's/.*retried \([0-9]*\), dropped \([0-9]*\),.*/\1 \2/p' "$dir/tool$i.err")"
    retried=$((retried + ${r:-0})) dropped=$((dropped + ${d:-0}))
    "$profdiff" --ignore-comments "$dir/out/goroutine.pb.gz" "$dir/ours$i.pb.gz" >"$dir/profdiff$i.out" 2>&1
    if ! check_busy "$dir/profdiff$i.out" >>"$dir/profdiff$i.out" 2>&1; then
      bad="capture $i"
      fail "$label busy: capture $i returned other stacks ($dir)" "$dir/profdiff$i.out"
      break
    fi
  done
  [[ -z $bad ]] && pass "$label busy: 5 captures, every stable goroutine there, no stack the target does not make; retried $retried, dropped $dropped in all"
  e2e_stop_pids
}
