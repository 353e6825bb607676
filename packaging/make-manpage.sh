#!/usr/bin/env bash
# goheap2pprof(1), made at build time from the binary's own --help (cmake/packaging.cmake):
# help2man formats the main --help (whose exit-code table becomes EXIT STATUS) and, in a
# SUBCOMMANDS section, the --help of each subcommand; packaging/goheap2pprof.h2m adds the
# prose --help has no room for (permissions, examples, files). Nothing listed here can
# drift from --help: tests/e2e/packaging_test.sh compares the two, per command.
#
#   bash packaging/make-manpage.sh <out.1> [runner...] <goheap2pprof>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: $0 <out.1> [runner...] <goheap2pprof>}
shift
run=("$@")
((${#run[@]})) || { echo "usage: $0 <out.1> [runner...] <goheap2pprof>" >&2; exit 2; }
source "$here/help-lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$("${run[@]}" --version | awk 'NR == 1 {print $2}')

# help2man runs one executable: a wrapper per command (the emulator, if any, inside it).
wrapper() {
  local file=$tmp/$1
  shift
  printf '#!/bin/sh\nexec' >"$file"
  printf ' %q' "${run[@]}" "$@" >>"$file"
  printf ' "$@"\n' >>"$file"
  chmod +x "$file"
  echo "$file"
}

# Each subcommand's page body, its sections turned into subsections of SUBCOMMANDS.
{
  echo "[SUBCOMMANDS]"
  for cmd in $(help_commands); do
    help2man -N --no-discard-stderr --version-string="$version" \
      -n "goheap2pprof $cmd" "$(wrapper "sub-$cmd" "$cmd")" >"$tmp/$cmd.1"
    echo ".SS \"goheap2pprof $cmd\""
    # The synopsis line, then the description and options, without help2man's headers.
    awk '
      /^\.SH SYNOPSIS/ {part = 1; next}
      /^\.SH DESCRIPTION/ {part = 1; print ".PP"; next}
      /^\.SH OPTIONS/ {part = 1; print ".PP\n.B Options:"; next}
      /^\.SH / {part = 0; next}
      part {
        if ($0 ~ /^\.SS /) { sub(/^\.SS /, ".PP\n.B "); }
        print
      }' "$tmp/$cmd.1" | sed "s|\\\\fI$(basename "$tmp")/sub-$cmd\\\\/\\\\fR|\\\\fBgoheap2pprof $cmd\\\\fR|g; s|\\\\fB$tmp/sub-$cmd\\\\fR|\\\\fBgoheap2pprof $cmd\\\\fR|g; s|$tmp/sub-$cmd|goheap2pprof $cmd|g"
  done
} >"$tmp/subcommands.h2m"

help2man -N --no-discard-stderr --version-string="$version" \
  -n "capture the heap profile of a running Go process from outside it" \
  --include "$here/goheap2pprof.h2m" --include "$tmp/subcommands.h2m" \
  "$(wrapper goheap2pprof)" >"$tmp/main.1"
# The wrapper's name is the program's; "Exit codes:" of --help is the EXIT STATUS section.
# The usage examples at the top of --help stay one per line.
sed -e "s|$tmp/goheap2pprof|goheap2pprof|g" \
  -e 's|^\.SS "Exit codes:"$|.SH "EXIT STATUS"|' "$tmp/main.1" |
  awk '/^goheap2pprof / && last ~ /^goheap2pprof / {print ".br"} {print; last = $0}' >"$out.new"
mv "$out.new" "$out"
