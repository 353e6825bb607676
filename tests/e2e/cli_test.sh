#!/usr/bin/env bash
# The one command line (issue 26, item 4): every command is a subcommand of
# one CLI11 app, and the parts the commands share read the same everywhere.
#   1. goheap2pprof --help lists every command; `help <command>` and
#      `<command> --help` print the same text, with the command's usage line.
#   2. A usage error names the command it was read for and exits 2; the
#      one-shot capture's own usage errors are unchanged.
#   3. One duration syntax: a time option takes 10s, 5m, 250ms or a bare
#      number of seconds in every command, and junk is refused by name.
#   4. One size syntax: a byte option takes 64MiB, 512KiB, 1.5G or bare
#      bytes in every command, its range checked in bytes, junk refused.
# No Go program is needed: every case stops at parsing or option checks.
#
#   bash tests/e2e/cli_test.sh <path-to-goheap2pprof> <path-to-profdiff>
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_make_work cli

# --- 1. one app, every command listed and documented -----------------------
"$tool" --help >"$work/help.out" 2>&1
for cmd in serve push watch agent mem growth probe; do
  if awk '/^Subcommands:/ {on = 1; next} on' "$work/help.out" | grep -q "^  $cmd "; then
    pass "goheap2pprof --help lists $cmd"
  else
    fail "goheap2pprof --help lists $cmd" "$work/help.out"
  fi
  "$tool" "$cmd" --help >"$work/$cmd.help" 2>&1
  "$tool" help "$cmd" >"$work/$cmd.help2" 2>&1
  if grep -q "^Usage: goheap2pprof $cmd " "$work/$cmd.help" &&
    cmp -s "$work/$cmd.help" "$work/$cmd.help2"; then
    pass "$cmd --help and help $cmd print the same text, usage line included"
  else
    diff "$work/$cmd.help" "$work/$cmd.help2" >"$work/$cmd.diff" 2>&1
    cat "$work/$cmd.help" >>"$work/$cmd.diff"
    fail "$cmd --help and help $cmd" "$work/$cmd.diff"
  fi
done
if ! grep -q "__capture-worker" "$work/help.out"; then
  pass "the capture worker's subcommand is hidden from --help"
else
  fail "the worker subcommand is listed" "$work/help.out"
fi

# expect_usage <what> <stderr-regex> <args...>: exit 2, the message on stderr.
expect_usage() {
  local what=$1 pattern=$2
  shift 2
  "$tool" "$@" >"$work/usage.out" 2>"$work/usage.err"
  local rc=$?
  if [[ $rc == 2 ]] && grep -qE -e "$pattern" "$work/usage.err"; then
    pass "$what"
  else
    echo "exit $rc" >>"$work/usage.err"
    fail "$what" "$work/usage.err"
  fi
}

# --- 2. usage errors name their command --------------------------------------
expect_usage "an unknown serve option names serve" \
  "^goheap2pprof serve: .*--no-such-option" serve --no-such-option
expect_usage "its hint points at serve --help" "^hint: run goheap2pprof serve --help" \
  serve --no-such-option
expect_usage "an unknown push option names push" "^goheap2pprof push: " push --no-such-option
expect_usage "watch without -o names watch" "^goheap2pprof watch: .*--output" watch 1
expect_usage "help of an unknown command" '^goheap2pprof help: error: no command "nope"' \
  help nope
# A command is named by an argument alone: cli/main.cc adds every command's
# options only when an argument names one (or asks for help), so each must be
# read as itself, not as the capture's pid.
for cmd in serve push watch agent mem growth probe enable-sampling goroutines help \
  __capture-worker; do
  expect_usage "$cmd on a command line is read as $cmd" "^goheap2pprof $cmd: " "$cmd" --no-such-option
done
expect_usage "the capture without a pid, as before" "^goheap2pprof: pid is required" -o x.pb.gz
expect_usage "a capture pid that is not one, as before" \
  '^goheap2pprof: error: "12x" is not a process id' 12x

# --- 3. one duration syntax -------------------------------------------------
# A duration that parses gets as far as the next check: push without a
# backend, serve with a bad --max-concurrent, watch with no such process.
for d in 10s 5m 250ms 10 1.5; do
  expect_usage "push --interval $d parses (then: no backend)" "push needs --pyroscope" \
    push --interval "$d" --discover-interval "$d"
  expect_usage "serve --timeout $d parses" "--max-concurrent must be 1..64" \
    serve --timeout "$d" --capture-timeout "$d" --max-concurrent 0
done
expect_usage "a junk duration is refused by name" \
  "^goheap2pprof serve: --timeout: expected a duration such as 10s" serve --timeout 10parsecs
expect_usage "watch --poll takes the same syntax and checks it" \
  "^goheap2pprof watch: .*--poll.*expected a duration" watch 1 -o "$work" --poll soon
expect_usage "agent --interval takes the same syntax" \
  "^goheap2pprof agent: .*--interval.*expected a duration" agent --interval 1x

expect_usage "--worker-cpu takes the same syntax, in whole seconds" \
  "--max-concurrent must be 1..64" serve --worker-cpu 2m --max-concurrent 0
expect_usage "--worker-cpu refuses a fraction of a second by name" \
  "^goheap2pprof serve: --worker-cpu: expected whole seconds" serve --worker-cpu 1.5s

# --- 4. one size syntax -----------------------------------------------------
# As for durations: a size that parses gets as far as the next check.
for b in 2GiB 512M 1.5G 2147483648; do
  expect_usage "serve --worker-memory $b parses" "--max-concurrent must be 1..64" \
    serve --worker-memory "$b" --max-capture-bytes 64KiB --max-concurrent 0
  expect_usage "push --max-queue-bytes $b parses (then: no backend)" "push needs --pyroscope" \
    push --max-queue-bytes "$b" --max-profile-bytes "$b" --worker-memory "$b"
done
expect_usage "--max-capture-bytes is checked in bytes, whatever the unit" \
  "^goheap2pprof serve: --max-capture-bytes: Value 65535 not in range" \
  serve --max-capture-bytes 63.99999KiB
expect_usage "a junk size is refused by name" \
  "^goheap2pprof agent: --worker-memory: expected a size such as 64MiB" \
  agent --worker-memory 2GB-ish

e2e_finish
