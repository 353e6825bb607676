#!/usr/bin/env bash
# The heap-bucket layout is proven or the capture is refused. Targets are
# testdata/oracle built with Go 1.27.3 whose version string is patched (same
# length) to stand in for other toolchains:
#   - claiming go1.29.8 (newer than every tested Go), with DWARF: read with
#     a warning that the layout was proven from DWARF, and the profile means
#     exactly what the target's own does;
#   - the same built with -ldflags=-w (no DWARF): refused with exit 6 and no
#     output file; with --assume-go-layout 1.27 read, the warning in the
#     log, in the profile's comments and in the JSON snapshot's warnings;
#   - claiming go1.26.3, whose table has another memRecordCycle: refused
#     with exit 6, naming runtime.memRecordCycle and both sizes.
#
#   bash tests/e2e/layout_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
e2e_require_command perl "perl is needed to patch the version string"
e2e_make_work layout
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM

if ! why=$(toolchain_ok go1.27.3); then
  echo "SKIP: $why"
  exit 77
fi

# build <out> [go build flags...]: testdata/oracle with Go 1.27.3.
build() {
  local out=$1
  shift
  if ! (cd "$src/testdata/oracle" && CGO_ENABLED=0 $(go_cmd go1.27.3) build "$@" -o "$out" .) \
    >"$work/build.log" 2>&1; then
    fail "go build $* of testdata/oracle with go1.27.3" "$work/build.log"
    e2e_finish
  fi
}
# patch <in> <new-version> <out>: the same binary claiming another version.
patch() {
  perl -pe 's/\Qgo1.27.3\E/'"$2"'/g' "$1" >"$3" && chmod +x "$3"
  if [[ $($(go_cmd go1.26.8) version "$3" 2>&1) != *": $2" ]]; then
    fail "patching $1 to $2: go version says $($(go_cmd go1.26.8) version "$3" 2>&1)"
    e2e_finish
  fi
}
build "$work/oracle127"
build "$work/oracle127w" -ldflags=-w
if LC_ALL=C readelf -S "$work/oracle127w" | grep -q ' \.debug_info'; then
  fail "-ldflags=-w left a .debug_info section"
  e2e_finish
fi
patch "$work/oracle127" go1.29.8 "$work/bin-dwarf129"
patch "$work/oracle127w" go1.29.8 "$work/bin-nodwarf129"
patch "$work/oracle127" go1.26.3 "$work/bin-claims126"

# start <binary> <dir>: runs the oracle target, waits for READY; 1 if it did not come.
start() {
  mkdir -p "$2"
  e2e_start "$2/target.out" "$2/target.err" "$1" -out "$2/oracle.pb.gz"
  if ! e2e_wait_for_line "$2/target.out" '^READY ' "$target_pid" 60; then
    fail "$(basename "$1") did not print READY within 60 s" "$2/target.err"
    e2e_stop_pids
    return 1
  fi
}

# same_profile <label> <dir>: ours.pb.gz means what oracle.pb.gz means (our
# profile has a comment more: the warning, checked by has_comment).
same_profile() {
  if "$profdiff" --ignore-comments "$2/oracle.pb.gz" "$2/ours.pb.gz" >"$2/profdiff.out" 2>&1; then
    pass "$1: $(grep '^samples:' "$2/profdiff.out")"
  else
    fail "$1: the profile differs from the target's own" "$2/profdiff.out"
  fi
}

# has_comment <label> <profile> <text>: the profile carries a comment with text.
has_comment() {
  if $(go_cmd go1.26.8) tool pprof -comments "$2" 2>/dev/null | grep -qF -- "$3"; then
    pass "$1"
  else
    fail "$1: no comment with \"$3\" in $2; comments: $($(go_cmd go1.26.8) tool pprof -comments "$2" 2>&1)"
  fi
}

# refused <label> <stderr> <rc> <dir> <text...>: exit 6, the error names each
# text, and no output file was written.
refused() {
  local label=$1 err=$2 rc=$3 dir=$4 problems=""
  shift 4
  [[ $rc == 6 ]] || problems+=" exit $rc (want 6);"
  [[ $(grep -c '^goheap2pprof: error: ' "$err") == 1 && $(grep -c '^hint: ' "$err") == 1 ]] ||
    problems+=" not one error and one hint line;"
  local text
  for text in "$@"; do grep -qF -- "$text" "$err" || problems+=" stderr lacks \"$text\";"; done
  [[ ! -e $dir/ours.pb.gz ]] || problems+=" wrote $dir/ours.pb.gz;"
  if [[ -z $problems ]]; then
    pass "$label (exit 6): $(grep '^goheap2pprof: error: ' "$err" | cut -c1-200)"
  else
    fail "$label:$problems" "$err"
  fi
}

# --- a newer Go with DWARF: proven, read, identical --------------------------
dir=$work/dwarf129
if start "$work/bin-dwarf129" "$dir"; then
  "$tool" "$target_pid" -o "$dir/ours.pb.gz" 2>"$dir/tool.err"
  rc=$?
  e2e_stop_pids
  if [[ $rc == 0 ]] &&
     grep -q "warning: go1.29.8 is newer than the Go versions .* proven from the executable's DWARF to be Go 1.27's" "$dir/tool.err"; then
    pass "go1.29.8 with DWARF: exit 0, warning says the layout was proven from DWARF"
    same_profile "go1.29.8 with DWARF: same profile as the target's own" "$dir"
    has_comment "go1.29.8 with DWARF: the warning is in the profile's comments" "$dir/ours.pb.gz" \
      "proven from the executable's DWARF"
  else
    fail "go1.29.8 with DWARF: exit $rc or no DWARF warning" "$dir/tool.err"
  fi
fi

# --- a newer Go without DWARF: refused, unless the layout is assumed ---------
dir=$work/nodwarf129
if start "$work/bin-nodwarf129" "$dir"; then
  "$tool" "$target_pid" -o "$dir/ours.pb.gz" 2>"$dir/refused.err"
  refused "go1.29.8 without DWARF" "$dir/refused.err" $? "$dir" "has no DWARF" \
    "--assume-go-layout 1.27"
  "$tool" "$target_pid" --assume-go-layout 1.27 -o "$dir/ours.pb.gz" 2>"$dir/tool.err"
  rc=$?
  "$tool" "$target_pid" --assume-go-layout 1.27 --format json -o "$dir/snapshot.json" \
    2>"$dir/json.err"
  json_rc=$?
  e2e_stop_pids
  if [[ $rc == 0 ]] && grep -q "warning: go1.29.8 is newer .* assumed to be Go 1.27's (--assume-go-layout)" "$dir/tool.err"; then
    pass "go1.29.8 without DWARF, --assume-go-layout 1.27: exit 0 with the warning"
    same_profile "go1.29.8 without DWARF, --assume-go-layout 1.27: same profile as the target's own" "$dir"
    has_comment "go1.29.8 without DWARF: the assumption is in the profile's comments" \
      "$dir/ours.pb.gz" "assumed to be Go 1.27's (--assume-go-layout)"
  else
    fail "go1.29.8 without DWARF, --assume-go-layout 1.27: exit $rc or no warning" "$dir/tool.err"
  fi
  if [[ $json_rc == 0 ]] && grep -q '"warnings": *\[[^]]*assumed to be Go 1.27' <(tr -d '\n' <"$dir/snapshot.json"); then
    pass "go1.29.8 without DWARF: the assumption is in the JSON snapshot's warnings"
  else
    fail "go1.29.8 without DWARF, --format json: exit $json_rc or no warning in warnings[]" \
      "$dir/snapshot.json"
  fi
fi

# --- a version whose table disagrees with the DWARF: refused -----------------
dir=$work/claims126
if start "$work/bin-claims126" "$dir"; then
  "$tool" "$target_pid" -o "$dir/ours.pb.gz" 2>"$dir/refused.err"
  refused "Go 1.27 runtime claiming go1.26.3" "$dir/refused.err" $? "$dir" \
    "runtime.memRecordCycle is 16 bytes in the DWARF, 32 in the table" "table for Go 1.26"
  # Nothing overrides what the DWARF shows.
  "$tool" "$target_pid" --assume-go-layout 1.26 -o "$dir/ours.pb.gz" 2>"$dir/assume.err"
  refused "Go 1.27 runtime claiming go1.26.3, --assume-go-layout 1.26" "$dir/assume.err" $? \
    "$dir" "runtime.memRecordCycle is 16 bytes in the DWARF"
  e2e_stop_pids
fi

e2e_finish
