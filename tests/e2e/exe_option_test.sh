#!/usr/bin/env bash
# --exe and --force, end to end on native targets. The realistic workflow: the
# production binary is `strip`ped from a build whose unstripped original is
# kept; goheap2pprof reads the running stripped process with --exe pointing
# at the original. For Go 1.26.8 (PIE; Go and GNU build IDs) and 1.19.8 (exe;
# Go build ID only):
#   match     the stripped target with --exe <original>: exit 0, -v says the
#             file matches and the variables came from its symbol table, and
#             profdiff finds the capture identical to the target's own
#             profile (executable mapping named as the stripped file, with
#             the running file's build ID);
#   mismatch  --exe <another Go program>: exit 2 with a "does not match" error
#             naming the build ID and a hint on strip and --force;
#   forced    --exe <a copy of the original with another Go build ID> and
#             --force: exit 0 with the mismatch as a warning, and still the
#             target's own profile.
# Also: --force without --exe is a usage error.
#
#   bash tests/e2e/exe_option_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
for cmd in go strip python3; do
  e2e_require_command "$cmd" "no $cmd on PATH"
done
e2e_make_work exe-option
trap e2e_stop_pids EXIT

# Writes a copy of $1 to $2 whose Go build ID differs in its last character
# (same length, same layout): "the same program, another build" for --force.
other_build_id() {
  python3 - "$1" "$2" <<'EOF'
import subprocess, sys
data = open(sys.argv[1], "rb").read()
out = subprocess.run(["go", "tool", "buildid", sys.argv[1]], capture_output=True, check=True)
old = out.stdout.strip()
new = old[:-1] + (b"A" if old[-1:] != b"A" else b"B")
assert data.count(old) >= 1, "Go build ID not found in the file"
open(sys.argv[2], "wb").write(data.replace(old, new))
EOF
  chmod +x "$2"
}

# run_target <dir> <binary>: starts the oracle target at rate 1, waits for READY.
run_target() {
  local dir=$1 binary=$2
  e2e_start "$dir/target.out" "$dir/target.err" "$binary" -rate 1 -out "$dir/oracle.pb.gz"
  e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" 120
}

# identical <label> <dir> <profile>: profdiff against the target's own profile.
identical() {
  if "$profdiff" "$2/oracle.pb.gz" "$3" >"$3.diff" 2>&1; then
    return 0
  fi
  fail "$1 (profile differs from the target's own)" "$3.diff"
  return 1
}

for entry in "go1.26.8 pie" "go1.19.8 exe"; do
  read -r version mode <<<"$entry"
  if ! toolchain_ok "$version" >/dev/null; then
    echo "SKIP $version (toolchain unavailable)"
    skipped=$((skipped + 3))
    continue
  fi
  dir=$work/$version-$mode
  mkdir -p "$dir"
  if ! (cd "$src/testdata/oracle" &&
    CGO_ENABLED=0 $(go_cmd "$version") build -buildmode="$mode" -o "$dir/original" .) >"$dir/build.log" 2>&1 ||
    ! strip -o "$dir/app" "$dir/original" 2>>"$dir/build.log" ||
    ! other_build_id "$dir/original" "$dir/rebuilt" 2>>"$dir/build.log"; then
    fail "$version $mode (build failed)" "$dir/build.log"
    continue
  fi
  if LC_ALL=C readelf -S "$dir/app" | grep -q ' \.symtab '; then
    fail "$version $mode (strip left a .symtab)"
    continue
  fi
  if ! run_target "$dir" "$dir/app"; then
    fail "$version $mode (target did not print READY)" "$dir/target.err"
    e2e_stop_pids
    continue
  fi

  label="$version $mode match"
  "$tool" -v --exe "$dir/original" "$target_pid" -o "$dir/match.pb.gz" >"$dir/match.log" 2>&1
  rc=$?
  if [[ $rc -ne 0 ]]; then
    fail "$label (exit $rc)" "$dir/match.log"
  elif ! grep -q -- "--exe .* matches the running" "$dir/match.log" ||
    ! grep -q 'runtime.mbuckets at .* (symbol table)' "$dir/match.log"; then
    fail "$label (-v does not say --exe matched and symbols came from it)" "$dir/match.log"
  elif identical "$label" "$dir" "$dir/match.pb.gz"; then
    pass "$label"
  fi

  label="$version $mode mismatch"
  other=$(go env GOROOT)/bin/gofmt
  "$tool" --exe "$other" "$target_pid" -o "$dir/mismatch.pb.gz" >"$dir/mismatch.log" 2>&1
  rc=$?
  if [[ $rc -ne 2 ]]; then
    fail "$label (exit $rc, want 2)" "$dir/mismatch.log"
  elif ! grep -q "^goheap2pprof: error: --exe $other does not match the executable of process" \
    "$dir/mismatch.log" ||
    ! grep -q '^hint: .*--force' "$dir/mismatch.log"; then
    fail "$label (message)" "$dir/mismatch.log"
  elif [[ -e $dir/mismatch.pb.gz ]]; then
    fail "$label (an output file was written)"
  else
    pass "$label"
  fi

  label="$version $mode forced"
  "$tool" --exe "$dir/rebuilt" --force "$target_pid" -o "$dir/forced.pb.gz" >"$dir/forced.log" 2>&1
  rc=$?
  if [[ $rc -ne 0 ]]; then
    fail "$label (exit $rc)" "$dir/forced.log"
  elif ! grep -q '^goheap2pprof: warning: --exe .* does not match .*Go build ID.*--force' \
    "$dir/forced.log"; then
    fail "$label (no mismatch warning)" "$dir/forced.log"
  elif identical "$label" "$dir" "$dir/forced.pb.gz"; then
    pass "$label"
  fi
  e2e_stop_pids
done

"$tool" --force 1 >"$work/force-alone.log" 2>&1
rc=$?
if [[ $rc -eq 2 ]] && grep -q -- '--force requires --exe' "$work/force-alone.log"; then
  pass "--force without --exe"
else
  fail "--force without --exe (exit $rc)" "$work/force-alone.log"
fi

e2e_finish
