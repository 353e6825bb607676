# The goroutine oracle's comparisons, shared by the suites that hold a
# capture of testdata/goroutines against the target's own files
# (goroutines_test.sh: the CLI; serve_goroutine_test.sh: serve's
# /debug/pprof/goroutine). Not a test: sourced after lib.sh.
#
#   goroutines_program <version> <build> <label>  # sets prog
#   check_diff <profdiff.out>; check_text <theirs.txt> <ours.txt>;
#   check_dump <theirs2.txt> <ours2.txt>

# goroutines_program <version> <build> <label>: sets prog to the go_programs
# fixture's build goroutines-amd64-<build> of testdata/goroutines for that
# toolchain (tests/go_programs.sh: exe, pie-stripped, pie-cgo-stripped); fails
# <label> and returns 1 when the fixture has none.
goroutines_program() {
  prog=$(go_program "$1" "goroutines-amd64-$2")
  [[ -x $prog ]] && return 0
  fail "$3: the go_programs fixture did not build $prog (bash tests/go_programs.sh $bin)"
  return 1
}

# check_diff <profdiff.out>: the only differences are the writer goroutine
# (only in the target's file, inside runtime/pprof.writeGoroutine) and main
# parked in select{} (only in ours), one goroutine each.
check_diff() {
  python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
if re.search(r'^(header differs|main mapping differs)', text, re.M):
    sys.exit("header or main mapping differs")
blocks = re.split(r'^(?=only in (?:expected|actual):)', text, flags=re.M)[1:]
expected = [b for b in blocks if b.startswith('only in expected')]
actual = [b for b in blocks if b.startswith('only in actual')]
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
