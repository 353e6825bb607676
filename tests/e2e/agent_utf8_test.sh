#!/usr/bin/env bash
# One function name that is not UTF-8 must not stop the agent (issue 38,
# finding 4). Go identifiers are UTF-8, but a function name is whatever bytes
# the target's pclntab holds: this suite makes testdata/oomgrower's
# main.growHeap into main.gr\xffwHeap by patching every occurrence in the
# executable (pclntab, symtab), checks that the patched program still runs,
# and runs `goheap2pprof agent` with serve, push and watch --report over two
# such targets, run from a file named gr<ESC>[2Jower (a comm that clears a
# terminal):
#   1. the short-lived one (A) exits; its growth report is written, with
#      U+FFFD where the byte was, in valid UTF-8 (.txt) and JSON (.json);
#   2. the agent is still running after it: /metrics answers within 1 s, a
#      capture and a delta (?seconds=2) of the other target (B) answer with
#      the raw bytes in the profile (as the runtime's own writer has them),
#      ?debug=1 and the flame graph answer valid UTF-8, push goes on pushing
#      B, watch goes on capturing B;
#   3. `growth --format json` over two captures of B succeeds;
#   4. the agent's log holds no terminal control byte (the name is written
#      gr\x1b[2Jower), nor does any file name in its output directory.
# The targets run as a user of their own (a uid from this shell's pid), which
# the agent admits alone (--allow-uid); that needs root.
#
#   bash tests/e2e/agent_utf8_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/push_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command jq "jq is not installed (scripts/install-deps.sh installs it)"
e2e_require_command perl "perl is not installed"
e2e_require_command iconv "needs iconv to check UTF-8"
e2e_require_command setpriv "needs setpriv (util-linux) to run the targets as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the targets run as a user of their own, apart from this machine's other Go processes)"
  exit 77
fi
e2e_make_work agent_utf8
chmod 755 "$work"
trap 'e2e_stop_pids -9' EXIT
export LC_ALL=C
uid=$((61000 + $$ % 4000))

push_build_programs
e2e_go_build oomgrower "$work/bin/oomgrower"
# The targets run as $uid and must reach their executable: a clone in a
# private directory (mktemp -d makes it 0700) does not let them through, so
# the patched copy then goes to a directory of its own under /tmp.
exec_dir=$work/bin
if ! setpriv --reuid=$uid --regid=$uid --clear-groups test -x "$work/bin/oomgrower"; then
  exec_dir=$(mktemp -d /tmp/goheap2pprof-agent-utf8.XXXXXX)
  chmod 755 "$exec_dir"
  trap 'e2e_stop_pids -9; rm -rf "$exec_dir"' EXIT
  echo "the build directory is not reachable by uid $uid: the target runs from $exec_dir"
fi
patched=$exec_dir/$'gr\x1b[2Jower'
raw=$'main.gr\xffwHeap' shown=$'main.gr\xef\xbf\xbdwHeap'
n=$(perl -0777 -ne 'print scalar(() = /main\.growHeap/g)' "$work/bin/oomgrower")
perl -0777 -pe 's/main\.growHeap/main.gr\xffwHeap/g' "$work/bin/oomgrower" >"$patched"
chmod 755 "$patched"
if ((n >= 2)) && ! grep -qa 'main\.growHeap' "$patched"; then
  pass "main.growHeap patched to main.gr\\xffwHeap in all $n places of the executable"
else
  fail "patching main.growHeap: $n occurrences"
  e2e_finish
fi
push_start_receiver

# shows_name <file>: whether the file is valid UTF-8 and names $shown.
shows_name() {
  iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 && grep -qF "$shown" "$1"
}

# as_user <name> <command...>: starts it as $uid, waits for READY; sets its
# pid in the variable <name>_pid.
as_user() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.err" setpriv --reuid=$uid --regid=$uid \
    --clear-groups "$@"
  if ! e2e_wait_for_line "$work/$name.out" "^READY" "$target_pid" 20; then
    fail "$name did not start" "$work/$name.err"
    e2e_finish
  fi
  printf -v "${name}_pid" %s "$target_pid"
}

dir=$work/out
mkdir "$dir"
e2e_start "$work/agent.out" "$work/agent.log" "$tool" agent --listen 127.0.0.1:0 \
  --pyroscope "http://$raddr" --interval 1s --discover-interval 1 --allow-uid $uid \
  -o "$dir" --every 1s --report --poll 100ms --max-concurrent 2 --capture-timeout 20s -v
agent_pid=$target_pid
if ! e2e_wait_for_line "$work/agent.log" "roles: serve on" "$agent_pid" 10; then
  fail "the agent did not start" "$work/agent.log"
  e2e_finish
fi
addr=$(sed -n 's/.*roles: serve on \([^ ]*\) .*/\1/p' "$work/agent.log" | head -n 1)
# B grows all along (5 MiB/s for 40 s) and collects at every step (GOGC=1),
# so that a delta over 2 s has its site: a heap profile is of the cycle
# before last.
as_user b env GOGC=1 "$patched" -step-mib 1 -every 200ms -max-mib 200
as_user a "$patched" -max-mib 16 -exit-code 0 -linger 6s
pass "the patched program runs (pids $a_pid, $b_pid)"

# --- 1. A's growth report -------------------------------------------------------------
# (jq 1.6's -e succeeds on an empty file: test its output instead.)
report() {
  [[ -n $(jq -c --argjson p "$a_pid" 'select(.pid == $p and .event == "growth-report")' \
    "$dir/watch.jsonl" 2>/dev/null) ]]
}
if e2e_wait_until 40 report; then
  files=$(jq -c --argjson p "$a_pid" 'select(.pid == $p and .event == "growth-report") | .files' "$dir/watch.jsonl")
  json=$(jq -r '.[1] // empty' <<<"$files")
  txt=$(jq -r '.[0] // empty' <<<"$files")
  if [[ -n $json ]] && jq -e --arg n "$shown" '[.. | strings | select(contains($n))] | length > 0' \
    "$dir/$json" >/dev/null 2>&1; then
    pass "watch --report: $json parses and names $shown (U+FFFD for the byte)"
  else
    fail "watch --report: the growth report's JSON: $files" "$work/agent.log"
  fi
  if [[ -n $txt ]] && shows_name "$dir/$txt"; then
    pass "watch --report: $txt is valid UTF-8 and names $shown"
  else
    fail "watch --report: the growth report's text: $files" "$work/agent.log"
  fi
else
  fail "watch: no growth report of pid $a_pid" "$work/agent.log"
fi

# --- 2. every role goes on ------------------------------------------------------------
sleep 1
if e2e_same_process "$agent_pid" "${pid_start_time[$agent_pid]}"; then
  pass "the agent is still running after the report"
else
  fail "the agent stopped" "$work/agent.log"
  e2e_finish
fi
code=$(curl -s -o "$work/metrics.txt" -w '%{http_code}' --max-time 1 "http://$addr/metrics")
if [[ $code == 200 ]]; then
  pass "serve: /metrics answers 200 within 1 s"
else
  fail "serve: /metrics answered '$code'" "$work/agent.log"
fi
# capture <name> <query>: the profile of B (gunzipped) in $work/<name>.pb; the status in code.
capture() {
  code=$(curl -s -o "$work/$1.pb.gz" -w '%{http_code}' --max-time 30 \
    "http://$addr/debug/pprof/heap?pid=$b_pid$2")
  gzip -dc "$work/$1.pb.gz" >"$work/$1.pb" 2>/dev/null
}
capture scrape1 ""
if [[ $code == 200 ]] && grep -qaF "$raw" "$work/scrape1.pb"; then
  pass "serve: a capture of B answers 200 with the raw bytes in its string table"
else
  fail "serve: capture of B: status $code, $(wc -c <"$work/scrape1.pb") bytes"
fi
capture delta "&seconds=2"
if [[ $code == 200 ]] && grep -qaF "$raw" "$work/delta.pb"; then
  pass "serve: a delta (?seconds=2) of B answers 200 with the raw bytes"
else
  fail "serve: delta of B: status $code, $(wc -c <"$work/delta.pb") bytes"
fi
# text_answer <what> <file> <path>: GETs the path into the file; it must answer
# 200 in valid UTF-8 naming $shown.
text_answer() {
  code=$(curl -s -o "$work/$2" -w '%{http_code}' --max-time 30 "http://$addr$3")
  if [[ $code == 200 ]] && shows_name "$work/$2"; then
    pass "serve: $1 of B answers valid UTF-8 naming $shown"
  else
    fail "serve: $1 of B: status $code" "$work/$2"
  fi
}
text_answer "?debug=1" debug1.txt "/debug/pprof/heap?pid=$b_pid&debug=1"
text_answer "the flame graph" flame.html "/pid/$b_pid/flamegraph?sample_index=inuse_space"
pushes() { "$receiver" count -dir "$work/rec" -pid "$b_pid" 2>/dev/null || echo 0; }
records() {
  jq -c --argjson p "$b_pid" 'select(.pid == $p and .event == "trigger" and .file != null)' \
    "$dir/watch.jsonl" 2>/dev/null | wc -l
}
pushed=$(pushes) recorded=$(records)
if e2e_wait_until 20 eval '(($(pushes) > pushed))'; then
  pass "push: B is still pushed ($pushed pushes, then $(pushes))"
else
  fail "push: no push of B after the report ($pushed)" "$work/agent.log"
fi
if e2e_wait_until 20 eval '(($(records) > recorded))'; then
  pass "watch: B is still captured ($recorded captures, then $(records))"
else
  fail "watch: no capture of B after the report ($recorded)" "$work/agent.log"
fi

# --- 3. growth over captures of B -----------------------------------------------------
capture scrape2 ""
if "$tool" growth --format json "$work/scrape1.pb.gz" "$work/scrape2.pb.gz" \
  >"$work/growth.json" 2>"$work/growth.err" &&
  jq -e --arg n "$shown" '[.. | strings | select(contains($n))] | length > 0' \
    "$work/growth.json" >/dev/null 2>&1; then
  pass "growth --format json over two captures of B names $shown"
else
  fail "growth --format json over two captures of B" "$work/growth.err"
fi
# --- 4. the log -------------------------------------------------------------------------
if ! grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$work/agent.log" &&
  grep -qF 'gr\x1b[2Jower' "$work/agent.log"; then
  pass "the agent's log holds no control byte and names gr\\x1b[2Jower"
else
  fail "the agent's log holds control bytes: $(grep -c $'\x1b' "$work/agent.log") lines with ESC"
fi
# shellcheck disable=SC2012 # names are what is checked
if ! ls "$dir" | grep -q $'[\x01-\x1f\x7f]'; then
  pass "no file name in the output directory holds a control byte"
else
  fail "file names with control bytes: $(ls "$dir" | grep -c $'[\x01-\x1f\x7f]')"
fi
if e2e_same_process "$agent_pid" "${pid_start_time[$agent_pid]}"; then
  kill -TERM "$agent_pid"
  e2e_wait_exit "$agent_pid" 30
  if [[ $rc == 0 ]]; then
    pass "the agent ran to the end and exits 0 on SIGTERM"
  else
    fail "agent exit status $rc" "$work/agent.log"
  fi
else
  fail "the agent died" "$work/agent.log"
fi
e2e_finish
