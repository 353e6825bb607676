#!/usr/bin/env bash
# The build works with CMake's default generator (Unix Makefiles), not only with Ninja, which
# every script uses: `cmake -S . -B b && cmake --build b` failed at the man page (issue 40),
# since make, unlike Ninja, does not create the folder of a custom command's output.
#
#   bash tests/e2e/makefile_generator_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# A whole second build would take minutes, so the suite configures a Makefile tree, puts the
# goheap2pprof under test where that tree builds its own, and makes the man page and completions
# alone (`make goheap2pprof_docs/fast`: the target without its dependencies): the step that
# failed, run as the default generator runs it.
# Needs cmake, make and help2man (scripts/install-deps.sh --package installs make).
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_executables "$tool"
e2e_require_command make "make is not installed (bash scripts/install-deps.sh --package)"
e2e_require_command help2man "help2man is not installed (bash scripts/install-deps.sh)"
e2e_make_work makefile-generator
tree=$work/make
start=$SECONDS

if cmake -S "$src" -B "$tree" -G "Unix Makefiles" -DBUILD_TESTING=OFF \
  >"$work/configure.out" 2>&1; then
  pass "cmake -G 'Unix Makefiles' configures ($((SECONDS - start)) s)"
else
  fail "cmake -G 'Unix Makefiles' configures" "$work/configure.out"
  e2e_finish --no-skipped
fi

cp "$tool" "$tree/goheap2pprof"
docs=(packaging/goheap2pprof.1 packaging/goheap2pprof.1.gz packaging/completions/goheap2pprof
  packaging/completions/_goheap2pprof)
start=$SECONDS
if make -C "$tree" goheap2pprof_docs/fast >"$work/make.out" 2>&1; then
  missing=()
  for f in "${docs[@]}"; do [[ -s $tree/$f ]] || missing+=("$f"); done
  if ((${#missing[@]} == 0)) &&
    grep -q '^\.SH "\?EXIT STATUS' "$tree/packaging/goheap2pprof.1"; then
    pass "make goheap2pprof_docs: the man page and completions ($((SECONDS - start)) s)"
  else
    fail "make goheap2pprof_docs left out: ${missing[*]:-the EXIT STATUS section}" "$work/make.out"
  fi
else
  fail "make goheap2pprof_docs" "$work/make.out"
fi
e2e_finish --no-skipped
