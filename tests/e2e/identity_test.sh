#!/usr/bin/env bash
# End-to-end test of the agents' Kubernetes identity without the API server
# (src/agent/common/cgroup_path.h, pod_identity.h): real processes placed in the
# cgroups the runtimes make, read by `serve` (/targets, /metrics, the index
# page) and `watch` (watch.jsonl):
#   1. a containerd pod's container: cgroup /kubepods/burstable/pod<uid>/<id>
#      and its OCI bundle under a fake --host-root: every label, and
#      service_name <namespace>/<container>; a second container whose bundle
#      is missing and a third whose bundle is damaged keep their uid and id
#      and are counted in goheap2pprof_pod_identity_failures_total;
#   2. a systemd service (this machine's init is no systemd: a v1 cgroup named
#      system.slice/pay\x2dments.service): service_name "pay-ments";
#   3. a Go program in a podman container (libpod-<id>): its container id;
#   4. issue 38, finding 9: a process in a cgroup named after the pod's
#      container (its id is world-readable in /proc/*/cgroup) wears none of
#      its labels: a user's scope (.../user@1000.service/app.slice/
#      cri-containerd-<id>.scope, what `systemd-run --user --scope -u` makes),
#      and a kubepods tree elsewhere than the bundle's linux.cgroupsPath
#      (counted as cgroup_mismatch).
#
#   bash tests/e2e/identity_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command jq "needs jq"
e2e_make_work identity

v1=/sys/fs/cgroup/memory
top=$v1/$(e2e_cgroup_name top)
image=localhost/goheap2pprof-identity-e2e:$$
podman_name=goheap2pprof-identity-e2e-$$
cleanup() {
  e2e_stop_pids -9
  if command -v podman >/dev/null; then
    podman rm -f -t 0 "$podman_name" >/dev/null 2>&1
    podman rmi -f "$image" >/dev/null 2>&1
  fi
  # Deepest first; the cgroups are empty once their processes are gone.
  [[ -d $top ]] && for _ in $(seq 10); do
    find "$top" -depth -type d -exec rmdir {} + 2>/dev/null
    [[ -d $top ]] || break
    sleep 0.2
  done
}
trap cleanup EXIT

# A static Go program that holds some heap and waits for SIGTERM.
mkdir -p "$work/target"
cat >"$work/target/main.go" <<'EOF'
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

var keep [][]byte

func main() {
	for i := 0; i < 64; i++ {
		keep = append(keep, make([]byte, 64<<10))
	}
	fmt.Printf("READY %d\n", os.Getpid())
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	<-c
}
EOF
printf 'module idtarget\n\ngo 1.19\n' >"$work/target/go.mod"
if ! (cd "$work/target" && CGO_ENABLED=0 "${go[@]}" build -o "$work/idtarget" .) >"$work/build.log" 2>&1; then
  fail "go build of the target" "$work/build.log"
  e2e_finish
fi

# start_in_cgroup <name> <cgroup dir>: starts the target inside the cgroup
# (it joins before exec, so the Go process is in it from its start); sets
# target_pid once it is READY.
start_in_cgroup() {
  local name=$1 dir=$2
  mkdir -p "$dir"
  e2e_start "$work/$name.out" "$work/$name.err" \
    bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2"' _ "$dir" "$work/idtarget"
  if ! e2e_wait_for_line "$work/$name.out" "^READY" "$target_pid" 20; then
    fail "$name did not start" "$work/$name.err"
    return 1
  fi
}

# labels_of <pid>: the /targets labels of pid as JSON, polled until serve
# has found it (at most 20 s).
labels_of() {
  local got
  for _ in $(seq 100); do
    got=$(curl -s "http://$addr/targets" | jq -c --arg p "$1" '.[] | select(.labels.pid == $p) | .labels')
    [[ -n $got ]] && break
    sleep 0.2
  done
  echo "$got"
}

# expect_labels <what> <labels JSON> <jq condition>
expect_labels() {
  if jq -e "$3" <<<"$2" >/dev/null 2>&1; then
    pass "$1"
  else
    echo "    labels: $2"
    fail "$1"
  fi
}

if [[ $(id -u) != 0 || ! -w $v1/cgroup.procs ]]; then
  skip "pods and services: needs root and the cgroup v1 memory hierarchy at $v1 to place processes"
else
  mkdir -p "$top"
  # --- 1. containerd pods -------------------------------------------------
  uid=6d3a2a3c-1b5e-4e6f-9a0b-$(printf '%012x' $$)
  id_ok=$(printf '%s' "ok$$" | sha256sum | cut -c1-64)
  id_missing=$(printf '%s' "missing$$" | sha256sum | cut -c1-64)
  id_bad=$(printf '%s' "bad$$" | sha256sum | cut -c1-64)
  host=$work/host
  tasks=$host/run/containerd/io.containerd.runtime.v2.task/k8s.io
  mkdir -p "$tasks/$id_ok" "$tasks/$id_bad"
  # The annotations containerd 1.6 writes (fleet.md §10), among the rest of a spec.
  # linux.cgroupsPath: where the runtime put the container (here below our own
  # top cgroup), which the process's cgroup must be.
  cat >"$tasks/$id_ok/config.json" <<EOF
{"ociVersion":"1.0.2-dev","process":{"args":["/idtarget"],"cwd":"/"},
 "linux":{"cgroupsPath":"/${top#$v1/}/kubepods/burstable/pod$uid/$id_ok"},
 "annotations":{"io.kubernetes.cri.container-type":"container",
  "io.kubernetes.cri.container-name":"api","io.kubernetes.cri.image-name":"example.com/api:1",
  "io.kubernetes.cri.sandbox-id":"$(printf '%s' "sandbox$$" | sha256sum | cut -c1-64)",
  "io.kubernetes.cri.sandbox-name":"web-0","io.kubernetes.cri.sandbox-namespace":"shop",
  "io.kubernetes.cri.sandbox-uid":"$uid"}}
EOF
  printf '{"annotations": {"io.kubernetes.cri.sandbox-name": ' >"$tasks/$id_bad/config.json"
  pod=$top/kubepods/burstable/pod$uid
  start_in_cgroup pod-ok "$pod/$id_ok" && pid_ok=$target_pid
  start_in_cgroup pod-missing "$pod/$id_missing" && pid_missing=$target_pid
  start_in_cgroup pod-bad "$pod/$id_bad" && pid_bad=$target_pid
  # --- 2. a systemd service -----------------------------------------------
  start_in_cgroup service "$top/system.slice/pay\\x2dments.service" && pid_service=$target_pid
  # --- 4. cgroups named after the pod's container -------------------------
  start_in_cgroup spoof-user \
    "$top/user.slice/user-1000.slice/user@1000.service/app.slice/cri-containerd-$id_ok.scope" &&
    pid_spoof_user=$target_pid
  start_in_cgroup spoof-tree "$top/elsewhere/kubepods/burstable/pod$uid/$id_ok" &&
    pid_spoof_tree=$target_pid

  start_serve serve -- --host-root "$host/" --node-name node-e2e
  if [[ -n ${pid_ok:-} ]]; then
    l=$(labels_of "$pid_ok")
    expect_labels "containerd pod: namespace, pod, pod_uid, container, container_id, node" "$l" \
      ".namespace == \"shop\" and .pod == \"web-0\" and .pod_uid == \"$uid\" and
       .container == \"api\" and .container_id == \"containerd://$id_ok\" and .node == \"node-e2e\""
    expect_labels "containerd pod: service_name is namespace/container" "$l" '.service_name == "shop/api"'
  fi
  if [[ -n ${pid_missing:-} ]]; then
    l=$(labels_of "$pid_missing")
    expect_labels "no bundle: uid and id from the cgroup, no names" "$l" \
      ".pod_uid == \"$uid\" and .container_id == \"$id_missing\" and (has(\"pod\") | not) and
       .service_name == \"idtarget\""
  fi
  if [[ -n ${pid_bad:-} ]]; then
    l=$(labels_of "$pid_bad")
    expect_labels "damaged bundle: containerd's prefix, no names" "$l" \
      ".container_id == \"containerd://$id_bad\" and (has(\"namespace\") | not)"
  fi
  if [[ -n ${pid_service:-} ]]; then
    l=$(labels_of "$pid_service")
    expect_labels "systemd service: service_name pay-ments, no pod labels" "$l" \
      '.service_name == "pay-ments" and (has("pod_uid") | not) and .node == "node-e2e"'
  fi
  if [[ -n ${pid_spoof_user:-} ]]; then
    l=$(labels_of "$pid_spoof_user")
    expect_labels "a user's scope named cri-containerd-<the pod's id>.scope: no pod labels" "$l" \
      '(has("namespace") or has("pod") or has("pod_uid") or has("container_id")) | not'
  fi
  if [[ -n ${pid_spoof_tree:-} ]]; then
    l=$(labels_of "$pid_spoof_tree")
    expect_labels "a kubepods tree elsewhere than the bundle's cgroupsPath: no pod labels" "$l" \
      '((has("namespace") or has("pod") or has("pod_uid") or has("container_id")) | not) and
       .service_name == "idtarget"'
  fi
  # Several scans have run by now: a bundle is read (and a failure counted)
  # once per process. Other Go processes of this machine in kubepods
  # cgroups (another suite's pods) have no bundle under our fake root either,
  # so no_bundle counts them too; only ours can be malformed.
  curl -s "http://$addr/metrics" >"$work/metrics.txt"
  no_bundle=$(awk '$1 == "goheap2pprof_pod_identity_failures_total{reason=\"no_bundle\"}" {print $2}' "$work/metrics.txt")
  if grep -qx 'goheap2pprof_pod_identity_failures_total{reason="malformed"} 1' "$work/metrics.txt" &&
    grep -qx 'goheap2pprof_pod_identity_failures_total{reason="cgroup_mismatch"} 1' "$work/metrics.txt" &&
    ((${no_bundle:-0} >= 1)); then
    pass "/metrics counts the damaged bundle once, the missing one (no_bundle $no_bundle) and the kubepods tree that is not the bundle's (cgroup_mismatch 1)"
  else
    grep pod_identity "$work/metrics.txt" >"$work/metrics-identity.txt"
    fail "/metrics counts the damaged bundle once, the missing one and the cgroup mismatch" "$work/metrics-identity.txt"
  fi
  curl -s "http://$addr/" >"$work/index.html"
  if grep -qF "shop/web-0 api (containerd://$id_ok)" "$work/index.html"; then
    pass "the index page names the pod"
  else
    fail "the index page names the pod" "$work/index.html"
  fi
  # --service-name-from keeps working: exe wins over the pod's name.
  serve_addr=$addr
  start_serve serve-exe -- --host-root "$host" --service-name-from exe
  l=$(labels_of "${pid_ok:-0}")
  expect_labels "--service-name-from exe: the executable, pod labels still given" "$l" \
    '.service_name == "idtarget" and .pod == "web-0" and (has("node") | not)'
  addr=$serve_addr

  # watch.jsonl: the same labels on the process's records.
  for which in ok service; do
    pid_var=pid_$which
    [[ -n ${!pid_var:-} ]] || continue
    dir=$work/watch-$which
    mkdir -p "$dir"
    NODE_NAME=node-env "$tool" watch "${!pid_var}" -o "$dir" --every 1h --no-baseline \
      --host-root "$host" >"$dir/out" 2>"$dir/err" &
    watch_pid=$!
    e2e_track_pid "$watch_pid"
    for _ in $(seq 100); do
      [[ -s $dir/watch.jsonl ]] && break
      sleep 0.1
    done
    kill "$watch_pid" 2>/dev/null
    wait "$watch_pid" 2>/dev/null
    start=$(jq -c 'select(.event == "start") | .labels' "$dir/watch.jsonl" 2>/dev/null)
    if [[ $which == ok ]]; then
      expect_labels "watch.jsonl: the pod's labels, node from \$NODE_NAME" "$start" \
        ".namespace == \"shop\" and .pod == \"web-0\" and .container_id == \"containerd://$id_ok\" and
         .node == \"node-env\" and .service_name == \"shop/api\""
    else
      expect_labels "watch.jsonl: the service's name" "$start" '.service_name == "pay-ments"'
    fi
  done
  e2e_stop_pids
fi

# --- 3. podman --------------------------------------------------------------
# Without CAP_SYS_RESOURCE (as here) podman's default rlimits (nofile
# 1048576) cannot be set, so the container asks for small ones.
podman_run=(podman run -d --name "$podman_name" --network none --ulimit nofile=1024:1024
  --ulimit nproc=1024:1024 "$image" /idtarget)
if ! command -v podman >/dev/null; then
  skip "podman: not installed (scripts/install-deps.sh installs it)"
elif ! tar -C "$work" -cf "$work/rootfs.tar" idtarget >"$work/podman.log" 2>&1 ||
  ! timeout 120 podman import "$work/rootfs.tar" "$image" >>"$work/podman.log" 2>&1 ||
  ! cid=$(timeout 120 "${podman_run[@]}" 2>>"$work/podman.log"); then
  echo "    $(tail -n 1 "$work/podman.log")"
  skip "podman: cannot run a container here (see above)"
else
  ppid=""
  for _ in $(seq 100); do
    ppid=$(podman inspect -f '{{.State.Pid}}' "$podman_name" 2>/dev/null)
    [[ -n $ppid && $ppid != 0 ]] && break
    sleep 0.1
  done
  start_serve serve-podman --
  l=$(labels_of "$ppid")
  cgroup_line=$(grep -m1 libpod "/proc/$ppid/cgroup" 2>/dev/null)
  expect_labels "podman (cgroup ${cgroup_line:-?}): container_id is podman's id" "$l" \
    ".container_id == \"$cid\" and (has(\"pod\") | not)"
fi

e2e_finish
