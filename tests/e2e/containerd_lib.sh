# A private containerd with its CRI plugin, driven by crictl, for the suites
# that need a real Kubernetes-style pod (tests/e2e/containerd_test.sh). Not a
# test: source it after lib.sh and e2e_init/e2e_make_work.
#
# No kubelet can run here, but the runtime a kubelet drives can: a pod started
# through the CRI gets the cgroups, the OCI bundle and its annotations that it
# would get on a node (docs/containerd-test.md has the quirks).
#
#   cd_require                  skip unless root, containerd, runc, ctr; sets crictl
#   cd_start                    a containerd of our own (root, state, socket)
#   cd_image <ref> <tar> <oci-image.sh args...>
#                               an image of scripts/oci-image.sh, imported into
#                               the k8s.io namespace
#   cd_pod <name> <ns> <uid> [host_pid]  sets pod (its id) from crictl runp
#   cd_container <pod> <pod-name> <name> <image> <mounts-json> [security-json] [args-json] [envs-json]
#                               sets cid; created and started
#   cd_stop                     pods stopped and removed, containerd ended,
#                               the pods' cgroups removed (the EXIT trap's)
#
# Everything containerd keeps goes under a private root and state directory
# and socket (cd_state, cd_sock), so a containerd of the machine's own at
# /run/containerd is never touched; the OCI bundles then live under
# $cd_state/io.containerd.runtime.v2.task/k8s.io/<id>/ instead of
# /run/containerd/..., which cd_host_root makes look like a node's.

# The sandbox image of containerd 1.6's default configuration: our own tiny
# program under the name the runtime pulls, so nothing is ever pulled.
cd_pause_ref=registry.k8s.io/pause:3.6
cd_pods=()
cd_pid=""
cd_cgroups=()
cd_all_cgroups=()

# cd_require: skips (exit 77) unless this runs as root with containerd, runc
# and ctr installed (scripts/install-deps.sh --test installs them); sets
# crictl, installing cri-tools' crictl with `go install` into
# $bin/e2e/crictl once (the Go module proxy must be reachable then).
cd_require() {
  if [[ $(id -u) != 0 ]]; then
    echo "SKIP: containerd and runc need root"
    exit 77
  fi
  local c
  for c in containerd runc ctr containerd-shim-runc-v2; do
    e2e_require_command "$c" "needs $c (apt-get install containerd runc; scripts/install-deps.sh --test)"
  done
  crictl=$(command -v crictl || echo "$bin/e2e/crictl/crictl")
  if [[ ! -x $crictl ]]; then
    mkdir -p "$bin/e2e/crictl"
    if ! GOBIN=$bin/e2e/crictl "${go[@]}" install sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0 \
      >"$work/crictl-install.log" 2>&1; then
      fail "go install sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0" "$work/crictl-install.log"
      e2e_finish
    fi
  fi
}

# cd_crictl <args...>: crictl against our socket, bounded.
cd_crictl() {
  timeout 60 "$crictl" --config "$work/crictl.yaml" --runtime-endpoint "unix://$cd_sock" --image-endpoint "unix://$cd_sock" \
    --timeout 30s "$@"
}

# cd_ctr <args...>: ctr against our socket.
cd_ctr() {
  timeout 60 ctr --address "$cd_sock" "$@"
}

# cd_sweep: what a killed earlier run of a suite left (CTest's timeout kills
# without a trap): for each /run/goheap2pprof-e2e-containerd.<pid> whose
# shell is gone, its shims' containers and shims are killed, its mounts
# undone, the containers' cgroups (from their bundles) and the directory
# removed. Only that run's own processes, named by its socket, are touched.
cd_sweep() {
  local dir owner f pid child cgpath cgpaths c alive
  for dir in /run/goheap2pprof-e2e-containerd.*; do
    [[ -d $dir ]] || continue
    owner=${dir##*.}
    [[ -r /proc/$owner/cmdline ]] && grep -qsF containerd_test "/proc/$owner/cmdline" && continue
    echo "sweeping what a killed run left in $dir"
    local killed=()
    for f in /proc/[0-9]*/cmdline; do
      grep -qsF -- "$dir/" "$f" || continue
      pid=${f//[!0-9]/}
      # A shim's socket is in /run/containerd/s whatever the state directory:
      # found through its listening socket's inode in /proc/net/unix.
      for f in $(ls -l "/proc/$pid/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]$/\1/p'); do
        awk -v i="$f" '$7 == i && $8 ~ /^\/run\/containerd\/s\// {print $8}' /proc/net/unix
      done | sort -u | xargs -r rm -f
      for child in $(cat "/proc/$pid/task/"*/children 2>/dev/null); do
        kill -9 "$child" 2>/dev/null && killed+=("$child")
      done
      kill -9 "$pid" 2>/dev/null && killed+=("$pid")
    done
    # Their cgroups can be removed once they have exited.
    for _ in $(seq 1 50); do
      alive=0
      for pid in "${killed[@]}"; do
        [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z) != Z ]] && alive=1
      done
      ((alive)) || break
      sleep 0.1
    done
    grep -F " $dir/" /proc/mounts | awk '{print $2}' | sort -r | while read -r f; do
      umount -l "$f" 2>/dev/null
    done
    # The containers' cgroups first, then their pods'.
    cgpaths=$(cat "$dir"/io.containerd.runtime.v2.task/*/*/config.json 2>/dev/null |
      jq -r '.linux.cgroupsPath // empty' | grep '^/kubepods/')
    for cgpath in $cgpaths $(for c in $cgpaths; do dirname "$c"; done | sort -u); do
      for c in /sys/fs/cgroup/*"$cgpath"; do
        [[ -d $c ]] && rmdir "$c" 2>/dev/null
      done
    done
    rm -rf "$dir"
  done
  return 0
}

# cd_start: writes $work/containerd/config.toml and starts containerd on it;
# waits (bounded) until the CRI answers. Ends the suite on failure.
cd_start() {
  local dir=$work/containerd
  cd_sweep
  # runc makes the kubepods parents of our pods; cd_stop removes them only if
  # they were not there before (a node's kubelet would own them).
  cd_made_kubepods=1
  compgen -G "/sys/fs/cgroup/*/kubepods" >/dev/null && cd_made_kubepods=0
  # The socket's path must fit a sockaddr_un (108 bytes): a short one in /run.
  cd_state=/run/goheap2pprof-e2e-containerd.$$
  cd_sock=$cd_state/containerd.sock
  mkdir -p "$dir/root" "$cd_state"
  # crictl warns on every call without a configuration file: an empty one.
  : >"$work/crictl.yaml"
  # restrict_oom_score_adj: the sandbox asks for oom_score_adj -998, which root
  # without CAP_SYS_RESOURCE may not set, and every pod fails with "can't get
  # final child's PID from pipe: EOF" (runc: "failed to update
  # /proc/self/oom_score_adj: Permission denied").
  containerd config default |
    sed -e "s|^root = .*|root = \"$dir/root\"|" \
      -e "s|^state = .*|state = \"$cd_state\"|" \
      -e "/^\[grpc\]/,/^\[/ s|^  address = .*|  address = \"$cd_sock\"|" \
      -e "/^\[ttrpc\]/,/^\[/ s|^  address = .*|  address = \"$cd_sock.ttrpc\"|" \
      -e 's|restrict_oom_score_adj = false|restrict_oom_score_adj = true|' \
      -e "s|sandbox_image = .*|sandbox_image = \"$cd_pause_ref\"|" \
      -e "s|^            Root = \"\"|            Root = \"$cd_state/runc\"|" \
      -e 's|SystemdCgroup = true|SystemdCgroup = false|' >"$dir/config.toml"
  # A second runtime handler, runc with the systemd cgroup driver (crictl runp
  # --runtime runc-systemd), as a kubelet with cgroupDriver: systemd uses.
  cat >>"$dir/config.toml" <<TOML

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc-systemd]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc-systemd.options]
    Root = "$cd_state/runc"
    SystemdCgroup = true
TOML
  # --address: names our socket on the command line, for cd_sweep.
  containerd --config "$dir/config.toml" --address "$cd_sock" >"$dir/containerd.out" 2>"$dir/containerd.log" &
  cd_pid=$!
  e2e_track_pid "$cd_pid"
  for _ in $(seq 1 150); do
    cd_crictl info >/dev/null 2>&1 && return 0
    kill -0 "$cd_pid" 2>/dev/null || break
    sleep 0.2
  done
  fail "containerd did not answer on $cd_sock within 30 s" "$dir/containerd.log"
  e2e_finish
}

# cd_image <ref> <tar> <oci-image.sh arguments...>: an image built offline by
# scripts/oci-image.sh (reproducible, one layer), imported into the CRI's
# namespace (k8s.io). Ends the suite on failure.
cd_image() {
  local ref=$1 tar=$2
  shift 2
  if ! bash "$src/scripts/oci-image.sh" --out "$tar.layout" --name "$ref" --tar "$tar" "$@" \
    >"$tar.build.log" 2>&1; then
    fail "scripts/oci-image.sh for $ref" "$tar.build.log"
    e2e_finish
  fi
  if ! cd_ctr -n k8s.io images import "$tar" >"$tar.import.log" 2>&1; then
    fail "ctr images import of $ref" "$tar.import.log"
    e2e_finish
  fi
}

# cd_pod <name> <namespace> <uid> [pid-namespace]: runs a pod sandbox with
# host networking (no CNI here) in a kubepods-style cgroup of the cgroupfs
# driver; pid-namespace 2 is hostPID (the CRI's NODE), else the pod's own.
# Sets pod to its id, or to "" after reporting the failure. With
# cd_systemd=1, the systemd driver's runtime handler and slice instead
# (kubepods-burstable-pod<uid with _>.slice); the failure is then only
# stored in $work/runp-<name>.err, for the caller to judge.
cd_systemd=0
cd_pod() {
  local name=$1 ns=$2 uid=$3 pidns=${4:-0} json=$work/pod-$1.json parent runtime=()
  parent=/kubepods/burstable/pod$uid
  if ((cd_systemd)); then
    parent=kubepods-burstable-pod${uid//-/_}.slice
    runtime=(--runtime runc-systemd)
  fi
  jq -n --arg name "$name" --arg ns "$ns" --arg uid "$uid" --argjson pidns "$pidns" \
    --arg parent "$parent" --arg logs "$work/logs/$name" '{
    metadata: {name: $name, namespace: $ns, uid: $uid, attempt: 0},
    log_directory: $logs,
    linux: {cgroup_parent: $parent,
            security_context: {namespace_options: {network: 2, pid: $pidns}}}}' >"$json"
  mkdir -p "$work/logs/$name"
  cd_cgroups+=("kubepods/burstable/pod$uid")
  cd_all_cgroups+=("kubepods/burstable/pod$uid")
  pod=""
  if ! pod=$(cd_crictl runp "${runtime[@]}" "$json" 2>"$work/runp-$name.err"); then
    pod=""
    ((cd_systemd)) || fail "crictl runp $name" "$work/runp-$name.err"
    return 1
  fi
  cd_pods+=("$pod")
}

# cd_container <pod> <pod-name> <name> <image> <mounts-json> [security-json] [args-json] [envs-json]:
# creates and starts a container in the pod (host network, like its pod);
# its log is $work/logs/<pod-name>/<name>.log. Sets cid, or "" after
# reporting the failure.
cd_container() {
  local pod=$1 pod_name=$2 name=$3 image=$4 mounts=$5 security=${6:-'{}'} args=${7:-'[]'} envs=${8:-'[]'}
  local json=$work/ctr-$name.json
  jq -n --arg name "$name" --arg image "$image" --argjson mounts "$mounts" \
    --argjson sec "$security" --argjson args "$args" --argjson envs "$envs" '{
    metadata: {name: $name}, image: {image: $image}, args: $args, envs: $envs,
    log_path: ($name + ".log"), mounts: $mounts,
    linux: {security_context: ({namespace_options: {network: 2}} + $sec)}}' >"$json"
  cid=""
  if ! cid=$(cd_crictl create "$pod" "$json" "$work/pod-$pod_name.json" 2>"$work/create-$name.err"); then
    cid=""
    fail "crictl create $name" "$work/create-$name.err"
    return 1
  fi
  if ! cd_crictl start "$cid" >/dev/null 2>"$work/start-$name.err"; then
    fail "crictl start $name" "$work/start-$name.err"
    cid=""
    return 1
  fi
}

# cd_leftovers: prints what of our containerd outlived cd_stop: processes
# naming its socket or state (shims), mounts under its state, pod cgroups.
cd_leftovers() {
  local f c
  for f in /proc/[0-9]*/cmdline; do
    grep -qsF -- "$cd_state/" "$f" && echo "process ${f//[!0-9]/}: $(tr '\0' ' ' <"$f")"
  done
  grep -F " $cd_state/" /proc/mounts | awk '{print "mount " $2}'
  for c in "${cd_all_cgroups[@]}"; do
    ls -d /sys/fs/cgroup/*/"$c" 2>/dev/null | sed 's/^/cgroup /'
  done
}

# cd_stop: every pod stopped and removed (their containers and shims end with
# them), containerd ended, its state and the pods' cgroups removed. Call it
# before e2e_finish (which removes $work, containerd's root, on success) and
# in the EXIT trap; a second call does nothing.
cd_stop() {
  local p c
  if [[ -n $cd_pid ]]; then
    for p in "${cd_pods[@]}"; do
      cd_crictl stopp "$p" >/dev/null 2>&1
      cd_crictl rmp "$p" >/dev/null 2>&1
    done
    cd_pods=()
  fi
  e2e_stop_pids
  cd_pid=""
  for c in "${cd_cgroups[@]}"; do
    for p in /sys/fs/cgroup/*/"$c"; do
      [[ -d $p ]] && rmdir "$p" 2>/dev/null
    done
  done
  cd_cgroups=()
  if ((${cd_made_kubepods:-0})); then
    for p in /sys/fs/cgroup/*/kubepods/burstable /sys/fs/cgroup/*/kubepods; do
      [[ -d $p ]] && rmdir "$p" 2>/dev/null
    done
  fi
  # The snapshots are overlay mounts of the pods, gone with them; what is left
  # of ours under /run is the socket and the (then empty) task directories.
  [[ -n ${cd_state:-} ]] && ! grep -q " $cd_state" /proc/mounts && rm -rf "$cd_state"
  # The shims' sockets go to /run/containerd/s whatever the state directory
  # (containerd 1.6); the directories are removed when no one else uses them.
  rmdir /run/containerd/s /run/containerd 2>/dev/null
  return 0
}
