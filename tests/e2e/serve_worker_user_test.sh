#!/usr/bin/env bash
# End-to-end test of the capture workers of `goheap2pprof serve` started by
# plain root (issue 38, finding 13): outside the systemd unit and the chart,
# a worker used to keep every capability of root, and some read-only opens
# act with them (/proc/kmsg consumes the kernel log). Now:
#  - each worker runs as uid and gid 65534 (--worker-uid/--worker-gid),
#    with no supplementary groups, and holds CAP_SYS_PTRACE and
#    CAP_DAC_READ_SEARCH only (/proc/<worker>/status);
#  - a worker that tries to open /proc/kmsg (the "open-kmsg" test seam) is
#    refused (EPERM: it lacks CAP_SYSLOG), where root's worker opened it;
#  - captures still work: of a target run by root and of one run by another
#    user (uid 1234), each the same as the target's own /debug/pprof/heap
#    (compared with profdiff);
#  - --worker-uid 0 keeps the old behaviour (a worker of uid 0).
# Needs root.
#
#   bash tests/e2e/serve_worker_user_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
e2e_init "$@"
e2e_require_seams
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command setpriv "needs setpriv (util-linux) to run a target as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the workers of plain root are what is tested)"
  exit 77
fi
e2e_make_work serve_worker_user
chmod 755 "$work"
trap 'e2e_stop_pids -9' EXIT

mkdir -p "$work/bin"
e2e_go_build testdata/servetarget "$work/bin/servetarget"
chmod 755 "$work/bin" "$work/bin/servetarget"
# The uid-1234 target must reach its own executable (its runtime reads the
# build ID there): from a clone in a private directory (mktemp -d makes it
# 0700) it runs from a directory of its own under /tmp, removed on exit.
target_bin=$work/bin/servetarget
if ! setpriv --reuid=1234 --regid=1234 --clear-groups test -r "$target_bin"; then
  exec_dir=$(mktemp -d /tmp/goheap2pprof-worker-user.XXXXXX)
  chmod 755 "$exec_dir"
  cp -p "$target_bin" "$exec_dir/servetarget"
  target_bin=$exec_dir/servetarget
  trap 'e2e_stop_pids -9; rm -rf "$exec_dir"' EXIT
  echo "the build directory is not reachable by uid 1234: the targets run from $exec_dir"
fi

# start_target <name> [runner...]: sets <name>_pid and <name>_own (its own
# /debug/pprof) once it is READY.
start_target() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.err" "$@" "$target_bin"
  if ! e2e_wait_for_line "$work/$name.out" "^READY" "$target_pid" 20; then
    fail "$name did not start" "$work/$name.err"
    e2e_finish
  fi
  printf -v "${name}_pid" %s "$target_pid"
  printf -v "${name}_own" %s "http://127.0.0.1:$(awk '/^READY/ {print $3}' "$work/$name.out")/debug/pprof"
}
start_target rooted
start_target other setpriv --reuid=1234 --regid=1234 --clear-groups

# workers_of <pid>: the live capture workers of a server (its children).
workers_of() {
  pgrep -P "$1" | while read -r w; do
    [[ $(tr '\0' ' ' <"/proc/$w/cmdline" 2>/dev/null) == *__capture-worker* ]] && echo "$w"
  done
}
# confined_workers <server>: waits (at most 10 s) until it has workers that
# all loaded their seccomp filter (their last step), and prints them.
confined_workers() {
  local deadline=$((SECONDS + 10)) w all
  while ((SECONDS < deadline)); do
    all=$(workers_of "$1")
    if [[ -n $all ]]; then
      for w in $all; do grep -q '^Seccomp:[[:space:]]*2' "/proc/$w/status" 2>/dev/null || continue 2; done
      echo "$all"
      return 0
    fi
    sleep 0.05
  done
  return 1
}
# field <pid> <name>: a /proc/<pid>/status field, whitespace squeezed.
field() { awk -v f="$2:" '$1 == f {$1 = ""; sub(/^ /, ""); print}' "/proc/$1/status"; }

start_serve main -- --max-concurrent 2
main_addr=$addr
if ! workers=$(confined_workers "$serve_pid"); then
  fail "the server's workers did not start"
  e2e_finish
fi
# CAP_DAC_READ_SEARCH is bit 2, CAP_SYS_PTRACE bit 19.
want_caps=0000000000080004
for w in $workers; do
  uid=$(field "$w" Uid) gid=$(field "$w" Gid) groups=$(field "$w" Groups)
  eff=$(field "$w" CapEff) prm=$(field "$w" CapPrm) inh=$(field "$w" CapInh)
  if [[ $uid == "65534 65534 65534 65534" && $gid == "65534 65534 65534 65534" && -z $groups &&
    $eff == "$want_caps" && $prm == "$want_caps" && $inh == 0000000000000000 ]]; then
    pass "worker $w runs as 65534:65534, no groups, CapEff=CapPrm=$eff (CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH)"
  else
    fail "worker $w: Uid $uid, Gid $gid, Groups '$groups', CapEff $eff, CapPrm $prm, CapInh $inh"
  fi
done

same_as_own "a target of root: the same as its own heap profile" \
  "http://$main_addr/debug/pprof/heap?pid=$rooted_pid" "$rooted_own/heap"
same_as_own "a target of uid 1234: the same as its own heap profile" \
  "http://$main_addr/debug/pprof/heap?pid=$other_pid" "$other_own/heap"

start_serve kmsg "GOHEAP2PPROF_SERVE_SEAM=open-kmsg:$rooted_pid" --
expect_status "a worker's open of /proc/kmsg is refused" 500 \
  "open(/proc/kmsg, O_RDONLY): Operation not permitted" "http://$addr/debug/pprof/heap?pid=$rooted_pid"

start_serve root -- --worker-uid 0
if workers=$(confined_workers "$serve_pid") &&
  [[ $(field "$(echo "$workers" | head -n 1)" Uid) == "0 0 0 0" ]]; then
  pass "--worker-uid 0: the worker stays root"
else
  fail "--worker-uid 0: the worker is not root"
fi
e2e_stop_pids -9
e2e_finish
