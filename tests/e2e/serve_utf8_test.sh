#!/usr/bin/env bash
# One process name must not break `goheap2pprof serve` for the node (issue
# 22, defect 5): a Go program run from a file whose name is not UTF-8
# ($'\xff\xfe') has those bytes in its exe, comm and service_name. /targets
# must still answer 200 with JSON that jq parses, naming that process with
# U+FFFD where the bytes were, and the index page and an error answer that
# names a process must be valid UTF-8 too.
#
#   bash tests/e2e/serve_utf8_test.sh <goheap2pprof>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
e2e_init "$@"
e2e_require_executables "$tool"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command jq "jq is not installed (scripts/install-deps.sh installs it)"
e2e_make_work serve_utf8
trap 'e2e_stop_pids -9' EXIT

echo "building testdata/oomgrower with $("${go[@]}" version)"
if ! (cd "$src/testdata/oomgrower" && CGO_ENABLED=0 "${go[@]}" build -o "$work/bin/grower" .) \
  >"$work/build.log" 2>&1; then
  fail "go build of testdata/oomgrower" "$work/build.log"
  e2e_finish
fi
bad=$work/bin/$'\xff\xfe'
cp "$work/bin/grower" "$bad"
e2e_start "$work/grower.out" "$work/grower.err" "$bad" -max-mib 8
grower_pid=$target_pid
if ! e2e_wait_for_line "$work/grower.out" '^READY' "$grower_pid" 10; then
  fail "the grower named \\xff\\xfe did not start" "$work/grower.err"
  e2e_finish
fi

start_serve utf8 --
replacement=$'\xef\xbf\xbd'
# Discovery runs every second: wait (bounded) until the process is listed.
code="" entry=""
for _ in $(seq 50); do
  code=$(status "http://$addr/targets")
  if [[ $code != 200 ]]; then sleep 0.2; continue; fi
  entry=$(jq -c --arg p "$grower_pid" '.[] | select(.labels.pid == $p) | .labels' "$work/body" 2>/dev/null)
  [[ -n $entry ]] && break
  sleep 0.2
done
if [[ $code == 200 ]] && jq -e 'type == "array"' "$work/body" >/dev/null 2>&1; then
  pass "/targets answers 200 with JSON that jq parses"
else
  fail "/targets answered $code: $(head -c 300 "$work/body")"
fi
if [[ $(jq -r .comm <<<"$entry") == "$replacement$replacement" &&
  $(jq -r .service_name <<<"$entry") == "$replacement$replacement" &&
  $(jq -r .exe <<<"$entry") == "$work/bin/$replacement$replacement" ]]; then
  pass "/targets names the process with U+FFFD for the invalid bytes: $entry"
else
  fail "/targets entry of pid $grower_pid: '$entry'"
fi
# An error answer names the process too: a program that is not Go, run from
# a file of that name, gets 404 "... is not a Go program" in valid UTF-8.
cp "$(command -v sleep)" "$work/bin/notgo-"$'\xff'
e2e_start "$work/notgo.out" "$work/notgo.err" "$work/bin/notgo-"$'\xff' 60
code=$(status "http://$addr/debug/pprof/heap?pid=$target_pid")
if [[ $code == 404 ]] && iconv -f UTF-8 -t UTF-8 "$work/body" >/dev/null 2>&1 &&
  grep -qF "notgo-$replacement" "$work/body"; then
  pass "an error answer naming the process is valid UTF-8 with U+FFFD: $(head -c 120 "$work/body")"
else
  fail "the error answer for a non-Go \\xff program: $code" "$work/body"
fi
code=$(status "http://$addr/")
if [[ $code == 200 ]] && iconv -f UTF-8 -t UTF-8 "$work/body" >/dev/null 2>&1 &&
  grep -qF "$replacement$replacement" "$work/body"; then
  pass "the index page is valid UTF-8 and shows U+FFFD"
else
  fail "the index page: $code, or not valid UTF-8"
fi
e2e_finish
