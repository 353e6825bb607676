#!/usr/bin/env bash
# End-to-end test of `goheap2pprof serve` out of file descriptors (issue 22,
# defect 11): a discovery scan that cannot open /proc keeps the last good
# list in /targets and counts the failure in /metrics, instead of answering
# that the node has no Go processes. The test lowers the running server's
# RLIMIT_NOFILE with `prlimit --pid` to the descriptors it has open, so
# that every open(2) it tries fails with EMFILE, and asks over a connection
# opened before (a new one could not be accepted).
#
#   bash tests/e2e/serve_scan_errors_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command prlimit "needs prlimit (util-linux) to lower a running process's RLIMIT_NOFILE"
e2e_make_work serve_scan_errors
trap 'e2e_stop_pids -9' EXIT
export LC_ALL=C  # read -N counts bytes

echo "== building the target"
mkdir -p "$work/bin"
if ! (cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/bin/servetarget" .) \
  >"$work/build.log" 2>&1; then
  fail "build servetarget" "$work/build.log"
  e2e_finish
fi
e2e_start "$work/target.out" "$work/target.err" "$work/bin/servetarget" -http=false
tpid=$target_pid
e2e_wait_for_line "$work/target.out" "^READY" "$tpid" 20 || {
  fail "the target did not start" "$work/target.err"
  e2e_finish
}

start_serve scan  # scans every second
deadline=$((SECONDS + 20))
until [[ $(status "http://$addr/targets") == 200 ]] && grep -q "\"pid\":\"$tpid\"" "$work/body"; do
  if ((SECONDS >= deadline)); then
    fail "the target never appeared in /targets" "$work/body"
    e2e_finish
  fi
  sleep 0.2
done
pass "the target is in /targets"

# get <path>: one request on the kept-alive connection (fd 3); the body in
# $work/kept.body. Returns 1 if no whole answer came within 5 s.
get() {
  local line len=-1 body
  printf 'GET %s HTTP/1.1\r\nHost: %s\r\n\r\n' "$1" "$addr" >&3 || return 1
  while IFS= read -r -t 5 line <&3; do
    line=${line%$'\r'}
    [[ -z $line ]] && break
    [[ ${line,,} == content-length:* ]] && len=${line#*: }
  done
  ((len >= 0)) || return 1
  IFS= read -r -d '' -N "$len" -t 5 body <&3 || return 1
  printf '%s' "$body" >"$work/kept.body"
}

# metric <name>: its value in $work/kept.body (a /metrics answer).
metric() { sed -n "s/^$1 //p" "$work/kept.body"; }

exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}"
get /metrics || fail "no /metrics answer on the kept connection"
errors_before=$(metric goheap2pprof_discovery_scan_errors_total)

# The lowest free descriptor number: below the limit, no open can succeed.
read -r -a soft_hard < <(prlimit --pid "$serve_pid" --nofile --noheadings --raw --output SOFT,HARD)
lowest=0
while [[ -e /proc/$serve_pid/fd/$lowest ]]; do lowest=$((lowest + 1)); done
echo "serve has descriptors 0..$((lowest - 1)) open; lowering RLIMIT_NOFILE to $lowest for 3 s"
# Only the soft limit: raising a hard limit again needs CAP_SYS_RESOURCE.
prlimit --pid "$serve_pid" --nofile="$lowest:${soft_hard[1]}"
sleep 3  # about three scans at --discover-interval 1 (start_serve)
ok=yes
get /targets || ok=no
cp "$work/kept.body" "$work/targets.json" 2>/dev/null
get /metrics || ok=no
prlimit --pid "$serve_pid" --nofile="${soft_hard[0]}:${soft_hard[1]}"
exec 3>&-

if [[ $ok != yes ]]; then
  fail "no answer on the kept connection while out of descriptors"
elif grep -q "\"pid\":\"$tpid\"" "$work/targets.json"; then
  pass "out of descriptors, /targets still lists the target"
else
  echo "    /targets: $(head -c 300 "$work/targets.json")"
  fail "out of descriptors, /targets lost the target"
fi
errors=$(metric goheap2pprof_discovery_scan_errors_total)
last=$(metric goheap2pprof_discovery_last_success_timestamp_seconds)
if [[ -n $errors && $errors -gt ${errors_before:-0} ]]; then
  pass "/metrics counts the failed scans (goheap2pprof_discovery_scan_errors_total $errors)"
else
  fail "/metrics does not count the failed scans (goheap2pprof_discovery_scan_errors_total '${errors}')" \
    "$work/kept.body"
fi
now=$(date +%s)
if [[ -n $last ]] && awk -v t="$last" -v now="$now" 'BEGIN { exit !(t > now - 600 && t <= now - 1) }'; then
  pass "the last successful scan is the one before the limit ($last, now $now)"
else
  fail "goheap2pprof_discovery_last_success_timestamp_seconds '$last' (now $now)"
fi

# Descriptors back: the scans succeed again and the server answers new connections.
sleep 2
if [[ $(status "http://$addr/metrics") == 200 ]] &&
  awk -v now="$now" '$1 == "goheap2pprof_discovery_last_success_timestamp_seconds" { ok = $2 >= now - 1 }
    END { exit !ok }' "$work/body"; then
  pass "with descriptors back, scans succeed again"
else
  fail "scans did not recover" "$work/body"
fi
if [[ $(status "http://$addr/targets") == 200 ]] && grep -q "\"pid\":\"$tpid\"" "$work/body"; then
  pass "with descriptors back, /targets lists the target"
else
  fail "with descriptors back, /targets lost the target" "$work/body"
fi

e2e_stop_pids -9
e2e_finish
