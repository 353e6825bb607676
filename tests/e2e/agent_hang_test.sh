#!/usr/bin/env bash
# A worker in uninterruptible sleep does not freeze the agent (issue 38,
# finding 7). A Go target runs from a FUSE mount (tests/e2e/hangfs.c) whose
# daemon then stops answering opens and reads, as a hung NFS or FUSE server
# does. The agent's capture of that target takes a worker that blocks in the
# kernel opening the executable; at --capture-timeout the worker is killed
# and, the request being in the daemon's hands, sleeps on in state D,
# ignoring SIGKILL. Meanwhile:
#   1. /metrics answers within 1 s and shows goheap2pprof_workers_unreaped 1;
#   2. /targets answers within 1 s;
#   3. a capture of another process answers 200;
#   4. the hung capture answers 504, and the log names the unreaped worker;
#      another capture of that executable answers 503 at once (no second
#      worker hangs on it);
#   5. once the mount answers again, the worker ends and is reaped (log, gauge 0).
# Before the fix, the pool reaped with its mutex held and /metrics took that
# mutex on the one I/O thread: every connection waited for the mount.
# Needs root, /dev/fuse, and fuse3 with its headers (scripts/install-deps.sh --test).
#
#   bash tests/e2e/agent_hang_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command setpriv "needs setpriv (util-linux) to run the targets as another user"
e2e_require_command fusermount3 "needs fuse3 (scripts/install-deps.sh --test installs it)"
e2e_require_command pkg-config "needs pkg-config"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (a FUSE mount other users may read, targets as user 65531)"
  exit 77
fi
[[ -e /dev/fuse ]] || modprobe fuse 2>/dev/null
if [[ ! -e /dev/fuse ]]; then
  echo "SKIP: no /dev/fuse (and modprobe fuse failed): no FUSE mount can be made here"
  exit 77
fi
if ! pkg-config --exists fuse3; then
  echo "SKIP: needs libfuse3-dev (scripts/install-deps.sh --test installs it)"
  exit 77
fi
# A user of its own: other suites' targets (user 65534) stay out of its agent.
e2e_nobody_uid=65531
e2e_make_work agent_hang
chmod 755 "$work"
mnt=$work/mnt
flag=$work/hang
fs_pid=""
# The mount goes first, whatever happened: the daemon is woken and killed
# (which ends every request it held, so the D-state worker dies), then the
# mount is detached.
cleanup_mount() {
  rm -f "$flag"
  if [[ -n $fs_pid ]]; then
    kill -CONT "$fs_pid" 2>/dev/null
    kill -KILL "$fs_pid" 2>/dev/null
    wait "$fs_pid" 2>/dev/null
    fs_pid=""
  fi
  if grep -qF " $mnt " /proc/mounts; then
    fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
  fi
}
trap 'cleanup_mount; e2e_stop_pids -9' EXIT

e2e_go_build servetarget "$work/bin/servetarget"
if ! cc -O1 -Wall -o "$work/bin/hangfs" "$src/tests/e2e/hangfs.c" \
  $(pkg-config --cflags --libs fuse3) >"$work/build-hangfs.log" 2>&1; then
  fail "cc tests/e2e/hangfs.c" "$work/build-hangfs.log"
  e2e_finish
fi
mkdir -p "$mnt"
"$work/bin/hangfs" "$work/bin/servetarget" "$flag" "$mnt" -f -o allow_other \
  >"$work/hangfs.log" 2>&1 &
fs_pid=$!
if ! e2e_wait_until 10 test -x "$mnt/exe"; then
  fail "the FUSE mount did not come up" "$work/hangfs.log"
  cleanup_mount
  e2e_finish
fi

e2e_start_as_nobody onmount "$mnt/exe" -http=false
e2e_start_as_nobody other "$work/bin/servetarget" -http=false

e2e_start "$work/agent.out" "$work/agent.log" "$tool" agent --listen 127.0.0.1:0 \
  --allow-uid "$e2e_nobody_uid" --discover-interval 1 --max-concurrent 2 --capture-timeout 2s -v
agent_pid=$target_pid
if ! e2e_wait_for_line "$work/agent.log" "roles: serve on" "$agent_pid" 10; then
  fail "the agent did not start" "$work/agent.log"
  cleanup_mount
  e2e_finish
fi
addr=$(sed -n 's/.*roles: serve on \([^ ;]*\).*/\1/p' "$work/agent.log" | head -n 1)
listed() { curl -s -m 5 "http://$addr/targets" | grep -q "\"pid\":\"$1\""; }
if e2e_wait_until 20 listed "$onmount_pid" && e2e_wait_until 20 listed "$other_pid"; then
  pass "discovery lists both targets (the one on the FUSE mount: pid $onmount_pid)"
else
  fail "discovery did not list both targets" "$work/agent.log"
fi

# timed <file> <url>: "<status> <seconds>" of a GET that may take at most 1 s.
timed() { curl -s -m 1 -o "$1" -w '%{http_code} %{time_total}' "$2"; }

# --- the mount hangs ----------------------------------------------------------
touch "$flag"
hung_started=$SECONDS
curl -s -m 60 -o "$work/hung.txt" -w '%{http_code}' \
  "http://$addr/debug/pprof/heap?pid=$onmount_pid" >"$work/hung.code" &
hung_curl=$!
# A worker of the agent in state D: the capture's, killed at the timeout.
d_worker() {
  local p state
  for p in $(cat "/proc/$agent_pid/task/"*/children 2>/dev/null); do
    state=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)
    [[ $state == D ]] && echo "$p" && return 0
  done
  return 1
}
if e2e_wait_until 15 d_worker >/dev/null; then
  pass "a capture worker sleeps uninterruptibly on the hung mount (pid $(d_worker))"
else
  fail "no worker of the agent in state D on the hung mount" "$work/agent.log"
fi
sleep 1  # past the capture timeout and the pool's bounded wait for the killed worker

read -r code secs < <(timed "$work/metrics.txt" "http://$addr/metrics")
if [[ $code == 200 ]] && grep -q '^goheap2pprof_workers_unreaped 1$' "$work/metrics.txt"; then
  pass "/metrics answers in ${secs} s with the hung worker: goheap2pprof_workers_unreaped 1"
else
  fail "/metrics with a hung worker: status ${code:-none} in ${secs:-?} s (1 s allowed)" \
    "$work/metrics.txt"
fi
read -r code secs < <(timed "$work/targets.txt" "http://$addr/targets")
if [[ $code == 200 ]] && grep -q "\"pid\":\"$other_pid\"" "$work/targets.txt"; then
  pass "/targets answers in ${secs} s"
else
  fail "/targets with a hung worker: status ${code:-none} in ${secs:-?} s (1 s allowed)" \
    "$work/targets.txt"
fi
code=$(curl -s -m 20 -o "$work/other.pb" -w '%{http_code}' \
  "http://$addr/debug/pprof/heap?pid=$other_pid")
if [[ $code == 200 && -s $work/other.pb ]]; then
  pass "a capture of another process answers 200 meanwhile"
else
  fail "a capture of another process with a hung worker: status ${code:-none}" "$work/agent.log"
fi
if wait "$hung_curl" && [[ $(cat "$work/hung.code") == 504 ]]; then
  pass "the hung capture answers 504 after $((SECONDS - hung_started)) s"
else
  fail "the hung capture: status $(cat "$work/hung.code" 2>/dev/null)" "$work/hung.txt"
fi
# Another capture of the hung executable fails fast rather than hang a
# second worker: one unreaped worker per hung executable.
read -r code secs < <(timed "$work/again.txt" "http://$addr/debug/pprof/heap?pid=$onmount_pid")
if [[ $code == 503 ]] && grep -q "stuck in the kernel" "$work/again.txt" &&
  [[ $(curl -s -m 1 "http://$addr/metrics" | awk '$1 == "goheap2pprof_workers_unreaped" {print $2}') == 1 ]]; then
  pass "another capture of the hung executable answers 503 in ${secs} s: $(head -c 120 "$work/again.txt")"
else
  fail "another capture of the hung executable: status ${code:-none} in ${secs:-?} s" "$work/again.txt"
fi
if grep -q "did not end after SIGKILL" "$work/agent.log"; then
  pass "the log names it: $(grep -m1 "did not end after SIGKILL" "$work/agent.log" | head -c 200)"
else
  fail "the log does not name the unreaped worker" "$work/agent.log"
fi

# --- the mount answers again ----------------------------------------------------
rm -f "$flag"
unreaped_zero() {
  curl -s -m 1 "http://$addr/metrics" | grep -q '^goheap2pprof_workers_unreaped 0$'
}
if e2e_wait_until 15 grep -q "after it was killed; reaped" "$work/agent.log" &&
  e2e_wait_until 5 unreaped_zero; then
  pass "once the mount answers, the worker ends and is reaped: $(grep -m1 "after it was killed; reaped" "$work/agent.log" | head -c 160)"
else
  fail "the worker was not reaped after the mount answered again" "$work/agent.log"
fi
e2e_check_same_process "the agent" "$agent_pid" && pass "the agent is still running"

cleanup_mount
e2e_finish
