#!/usr/bin/env bash
# The user documentation holds together (docs_check.py does the work):
#
# (1) README.md is at most 12,288 bytes: a user's five-minute read, with the
#     details in docs/.
# (2) Every relative link in README.md, bench/README.md and docs/**/*.md
#     names an existing file or directory, and its #anchor a heading of the
#     target file (GitHub's slug rules).
# (3) Every `goheap2pprof ...` command in a code block of README.md and the
#     guides is real: its subcommand answers `goheap2pprof SUB --help`, and
#     each flag it uses is in that help.
# (4) The "## Flags" table of each command's guide (capture, watch, serve,
#     push) lists exactly the flags of that command's --help.
# (5) Every repository path the docs name (src/..., tests/..., scripts/...,
#     also in code) exists, every source file named bare in a code span
#     exists somewhere in the repository, and so does every .h/.cc file a
#     comment in src/ names: a moved file leaves no stale name behind.
# (6) The checker itself fails on a broken link, a missing anchor, an unknown
#     subcommand, an unknown flag, a flag missing from a guide's table, one
#     the command lacks, a stale path and a stale bare file name (a copy of
#     the docs with one of each planted), so a checker that has gone blind
#     cannot pass.
#
#   bash tests/e2e/docs_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Needs python3 only; builds and runs no Go program.
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_command python3 "python3 is not installed (scripts/install-deps.sh installs it)"
e2e_make_work docs

check="$src/tests/e2e/docs_check.py"
if python3 "$check" "$src" "$tool" >"$work/real.out" 2>&1; then
  pass "README.md size, links, commands, flag tables and file names ($(tail -n 1 "$work/real.out"))"
else
  fail "README.md size, links, commands, flag tables and file names" "$work/real.out"
fi

# (6) A copy of README.md and docs/ with one planted fault each; the rest of the repository is
# linked in, so that the copy names the same existing files.
copy_docs() {  # copy_docs <name>: sets copy to a fresh copy of the documentation
  copy="$work/copy-$1"
  mkdir -p "$copy/bench"
  cp -r "$src/docs" "$copy/docs"
  cp "$src/README.md" "$copy/README.md"
  [[ -f $src/bench/README.md ]] && cp "$src/bench/README.md" "$copy/bench/README.md"
  local entry
  for entry in "$src"/* "$src"/bench/*; do
    [[ -e $copy/${entry#"$src"/} ]] || ln -s "$entry" "$copy/${entry#"$src"/}"
  done
}
check_copy() {  # check_copy <name>: the checker on the copy, its report in <name>.out
  python3 "$check" "$copy" "$tool" --max-readme-bytes 1000000 >"$work/$1.out" 2>&1
}
plant() {  # plant <name> <markdown line>: the copy's README.md ends with the line
  copy_docs "$1"
  printf '\n%s\n' "$2" >>"$copy/README.md"
  check_copy "$1"
}
plant_in_serve_flags() {  # plant_in_serve_flags <name> <sed script> for docs/serve.md
  copy_docs "$1"
  sed -i "$2" "$copy/docs/serve.md"
  check_copy "$1"
}
expect_caught() {  # expect_caught <name> <markdown> <words the report must hold>
  if plant "$1" "$2"; then
    fail "planted $1 is caught" "$work/$1.out"
  elif grep -qF -- "$3" "$work/$1.out"; then
    pass "planted $1 is caught: $(grep -F -- "$3" "$work/$1.out" | head -n 1)"
  else
    fail "planted $1 is reported as '$3'" "$work/$1.out"
  fi
}
expect_caught broken-link '[gone](docs/no-such-guide.md)' 'docs/no-such-guide.md does not exist'
expect_caught broken-anchor '[gone](docs/troubleshooting.md#no-such-heading)' \
  'no heading #no-such-heading in docs/troubleshooting.md'
expect_caught unknown-subcommand $'    goheap2pprof frobnicate --all' "no subcommand 'frobnicate'"
expect_caught unknown-flag $'```\ngoheap2pprof serve --listen 127.0.0.1:6061 --no-such-flag\n```' \
  '--no-such-flag is not in `goheap2pprof serve --help`'
expect_caught unknown-top-flag $'    goheap2pprof 1234 --format text --sort-by size' \
  '--sort-by is not in `goheap2pprof --help`'
expect_caught stale-path 'The pool lives in `src/agent/serve_pool.{h,cc}`.' \
  'README.md:'"$(($(wc -l <"$src/README.md") + 2))"': src/agent/serve_pool.cc does not exist'
expect_caught stale-bare-name 'The sender (`push_sender.h`) retries.' \
  'push_sender.h is no file of the repository'
expect_table_caught() {  # expect_table_caught <name> <sed script> <words>
  if plant_in_serve_flags "$1" "$2"; then
    fail "planted $1 is caught" "$work/$1.out"
  elif grep -qF -- "$3" "$work/$1.out"; then
    pass "planted $1 is caught: $(grep -F -- "$3" "$work/$1.out" | head -n 1)"
  else
    fail "planted $1 is reported as '$3'" "$work/$1.out"
  fi
}
expect_table_caught undocumented-flag '/^| `--max-deltas N`/d' \
  "docs/serve.md: --max-deltas is in \`goheap2pprof serve --help\` but not in the guide's Flags table"
expect_table_caught unknown-table-flag '/^| `--max-deltas N`/a | `--max-sessions N` | 4 | no such flag |' \
  "docs/serve.md: the Flags table has --max-sessions, which \`goheap2pprof serve --help\` does not list"

plant oversized ''
if python3 "$check" "$work/copy-oversized" "$tool" --max-readme-bytes 100 >"$work/oversized.out" 2>&1; then
  fail "a README over the limit is caught" "$work/oversized.out"
elif grep -q '^README.md: [0-9]* bytes, more than 100$' "$work/oversized.out"; then
  pass "a README over the limit is caught"
else
  fail "a README over the limit is reported as such" "$work/oversized.out"
fi

e2e_finish --no-skipped
