#!/usr/bin/env bash
# goheap2pprof against Go processes in real Kubernetes-style pods: a private
# containerd (Debian 12's 1.6, runc, its CRI plugin) started by this suite,
# driven by crictl as a kubelet drives it (tests/e2e/containerd_lib.sh),
# with images built offline here and imported with `ctr images import`.
#
#   bash tests/e2e/containerd_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Cases:
#   oracle      testdata/oracle in a pod (kubepods cgroup_parent, cgroupfs
#               driver) writes its own heap profile into a mounted directory;
#               goheap2pprof <pid>, from the host, through the container's
#               root, must mean exactly the same (profdiff).
#   systemd driver  the issue asks for pods under runc's systemd cgroup
#               driver too: it needs systemd on D-Bus, which a machine without
#               systemd as pid 1 lacks; the suite checks that a pod then truly
#               fails and prints a SKIP saying why (it runs the case where
#               systemd runs).
#
# Needs root, containerd, runc and ctr (scripts/install-deps.sh --test);
# crictl is installed with `go install` into the build tree once. The suite
# holds the CTest resource lock "containerd" (tests/CMakeLists.txt): the
# kubepods cgroups are the machine's.
# Exit status: 0 all cases passed, 1 some failed, 77 nothing could run.
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containerd_lib.sh"

e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
e2e_require_go
e2e_require_command jq "needs jq"
e2e_make_work containerd
trap cd_stop EXIT
trap 'exit 1' INT TERM
cd_require
ready_timeout=${CONTAINERD_READY_TIMEOUT:-120} # seconds; the oracle at rate 1 does a lot of work

# The two images: the sandbox ("pause") and testdata/oracle, each one static
# binary at the root of its only layer (scripts/oci-image.sh).
e2e_build_oracle
e2e_go_build pause "$work/bin/pause"
cd_start
cd_image "$cd_pause_ref" "$work/pause.tar" --file "$work/bin/pause:/pause:0755" --entrypoint /pause
cd_image goheap2pprof.test/oracle:e2e "$work/oracle.tar" --file "$binary:/oracle:0755" \
  --entrypoint /oracle

# container_pid <cid>: the pid (in our namespace) of the container's process.
container_pid() {
  cd_crictl inspect "$1" | jq -r '.info.pid'
}

# wait_log <pod-name> <container> <regex> <seconds>: waits for a line of the
# container's CRI log (lines "<time> stdout F <text>").
wait_log() {
  local log=$work/logs/$1/$2.log deadline=$((SECONDS + $4))
  until grep -q " $3" "$log" 2>/dev/null; do
    ((SECONDS >= deadline)) && return 1
    sleep 0.2
  done
}

# The oracle: its profile is written to /out (a host directory) before READY.
oracle_case() {
  local uid pid rc
  uid=$(cat /proc/sys/kernel/random/uuid)
  mkdir -p "$work/oracle-out"
  cd_pod oracle e2e-oracle "$uid" || return
  cd_container "$pod" oracle oracle goheap2pprof.test/oracle:e2e \
    "$(jq -cn --arg h "$work/oracle-out" '[{container_path: "/out", host_path: $h}]')" '{}' \
    '["-rate", "1", "-out", "/out/oracle.pb.gz"]' || return
  if ! wait_log oracle oracle 'READY ' "$ready_timeout"; then
    fail "oracle: the container did not print READY within ${ready_timeout}s" "$work/logs/oracle/oracle.log"
    return
  fi
  pid=$(container_pid "$cid")
  oracle_pid=$pid oracle_cid=$cid oracle_uid=$uid
  if [[ ! $(cat "/proc/$pid/cgroup") =~ /kubepods/burstable/pod$uid/$cid ]]; then
    fail "oracle: /proc/$pid/cgroup is not in the pod's kubepods cgroup:$(tr '\n' ' ' <"/proc/$pid/cgroup")"
  fi
  "$tool" -v "$pid" -o "$work/ours.pb.gz" >"$work/tool.out" 2>&1
  rc=$?
  if [[ $rc -ne 0 ]]; then
    fail "oracle: goheap2pprof $pid exited $rc" "$work/tool.out"
    return
  fi
  if "$profdiff" "$work/oracle-out/oracle.pb.gz" "$work/ours.pb.gz" >"$work/profdiff.out" 2>&1; then
    pass "oracle: goheap2pprof $pid of a container means what its own profile says ($(sed -n \
      's/^samples: expected \([0-9]*\),.*/\1/p' "$work/profdiff.out") samples)"
  else
    fail "oracle: profdiff differs (files in $work)" "$work/profdiff.out"
  fi
}

oracle_case

# The end: no pod, shim, mount or cgroup of ours outlives the suite.
cd_stop
if [[ -n $(cd_leftovers) ]]; then
  fail "cleanup: left behind after the pods were removed and containerd stopped:"
  cd_leftovers | sed 's/^/    /'
else
  pass "cleanup: every pod, shim, mount and kubepods cgroup of the suite is gone"
fi
e2e_finish
