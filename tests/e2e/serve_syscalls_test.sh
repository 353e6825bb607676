#!/usr/bin/env bash
# End-to-end test of the systemd unit's system-call filter
# (packaging/goheap2pprof-serve.service, SystemCallFilter=; issue 38): every
# system call that `goheap2pprof serve` and its capture workers make while
# they start, discover, capture a Go target (a heap profile, a ?seconds=1
# delta, memory statistics, a flame graph, a goroutine profile and dump) and shut down, traced with
# strace -f, is in the set the unit allows, as systemd-analyze expands it.
# A call outside would kill the server under the unit (SIGSYS).
#
#   bash tests/e2e/serve_syscalls_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command strace "needs strace to see the system calls"
e2e_require_command systemd-analyze "needs systemd-analyze to expand the unit's filter"
e2e_require_command python3 "needs python3"
e2e_make_work serve_syscalls
# serve runs as strace's child: strace, killed, would leave it running.
trap 'pkill -9 -P "${serve_pid:-0}" -x goheap2pprof 2>/dev/null; e2e_stop_pids -9' EXIT

unit=$src/packaging/goheap2pprof-serve.service
filter=$(sed -n 's/^SystemCallFilter=//p' "$unit")
if [[ -z $filter ]]; then
  fail "the unit has no SystemCallFilter=" "$unit"
  e2e_finish
fi
# The allowed names, groups expanded (systemd-analyze lists a group's
# members, nested groups as @names).
python3 - "$filter" >"$work/allowed.txt" <<'PY'
import subprocess, sys
seen, names = set(), set()
def expand(item):
    if not item.startswith("@"):
        names.add(item)
        return
    if item in seen:
        return
    seen.add(item)
    out = subprocess.run(["systemd-analyze", "syscall-filter", item], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines()[1:]:
        word = line.strip()
        if word and not word.startswith("#"):
            expand(word)
for item in sys.argv[1].split():
    expand(item)
print("\n".join(sorted(names)))
PY
echo "the unit allows $(wc -l <"$work/allowed.txt") system calls: SystemCallFilter=$filter"

e2e_build_oracle
e2e_start "$work/target.out" "$work/target.err" "$binary" -rate 1 -out "$work/oracle.pb.gz"
tpid=$target_pid
if ! e2e_wait_for_line "$work/target.out" '^READY ' "$tpid" 60; then
  fail "the target did not start" "$work/target.err"
  e2e_finish
fi
e2e_start "$work/serve.out" "$work/serve.log" strace -f -qq -o "$work/strace.txt" \
  "$tool" serve --listen 127.0.0.1:0 --discover-interval 1 --max-concurrent 2
serve_pid=$target_pid
if ! e2e_wait_for_line "$work/serve.log" "listening on" "$serve_pid" 30; then
  fail "serve did not start" "$work/serve.log"
  e2e_finish
fi
addr=$(sed -n 's/.*listening on //p' "$work/serve.log" | head -n 1)
ok=0
for path in "debug/pprof/heap?pid=$tpid" "debug/pprof/heap?pid=$tpid&seconds=1" \
  "pid/$tpid/metrics" "debug/pprof/heap?pid=$tpid&debug=1" "pid/$tpid/flamegraph" targets metrics \
  "debug/pprof/goroutine?pid=$tpid" "debug/pprof/goroutine?pid=$tpid&debug=2"; do
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 "http://$addr/$path")
  [[ $code == 200 ]] && ok=$((ok + 1)) || echo "    /$path: $code"
done
if ((ok == 9)); then
  pass "serve answered 9 requests for the target under strace"
else
  fail "serve answered only $ok of 9 requests under strace" "$work/serve.log"
fi
# The signal goes to serve itself (strace, signalled, would detach from it
# and leave it running), and strace ends with it.
server=$(pgrep -P "$serve_pid" -x goheap2pprof | head -n 1)
kill -TERM "${server:-$serve_pid}"
e2e_wait_exit "$serve_pid" 20
# strace's lines: "<pid> name(args...) = ...", and resumed or signal lines.
sed -n 's/^[0-9]\+ \+\([a-z_0-9]\+\)(.*/\1/p' "$work/strace.txt" | sort -u >"$work/made.txt"
echo "serve and its workers made $(wc -l <"$work/made.txt") distinct system calls"
outside=$(comm -23 "$work/made.txt" "$work/allowed.txt" | tr '\n' ' ')
if [[ -z $outside ]]; then
  pass "every system call made is in the unit's SystemCallFilter"
else
  fail "system calls outside the unit's SystemCallFilter: $outside"
fi
e2e_stop_pids -9
e2e_finish
