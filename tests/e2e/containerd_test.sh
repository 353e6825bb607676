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
#   labels      serve's /targets, a push to tests/pushreceiver and a watch
#               trigger's watch.jsonl carry the namespace, pod, pod_uid,
#               container, container_id (containerd://), node and
#               service_name (<namespace>/<container>) of what crictl
#               inspectp/inspect report; they read the bundles through
#               --host-root. The same push's OTLP resource carries them as
#               k8s.*, container.id and service.name (when push_otlp_test.sh's
#               Collector build is there; else that case is skipped).
#   agent image the agent in a scratch image, in a pod confined as
#               deploy/kubernetes/daemonset.yaml says (its CRI view from
#               tests/e2e/cri_from_daemonset.jq), captures the oracle of the
#               other pod as its own profile says, with its labels; without
#               SYS_PTRACE the capture is refused with 403.
#   cleanup     no pod, shim, mount or kubepods cgroup outlives the suite
#               (and cd_sweep removes what a killed run left).
#
# Needs root, containerd, runc and ctr (scripts/install-deps.sh --test, which
# also puts crictl v1.37.0 in /usr/local/bin; without a crictl on PATH the
# suite installs it with `go install` into the build tree once). The suite
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
  oracle_pid=$pid oracle_cid=$cid oracle_pod=$pod
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

# make_host_root: what a node's / would show the agent of the runtime's state:
# $work/hostroot/run/containerd is our containerd's state directory.
make_host_root() {
  mkdir -p "$work/hostroot/run"
  ln -sfn "$cd_state" "$work/hostroot/run/containerd"
}

# expect_pod_labels <what> <labels-json>: the labels of the oracle's process
# must name what crictl inspectp/inspect report for its pod and container.
expect_pod_labels() {
  local what=$1 labels=$2 want got
  want=$(jq -c -n --argjson p "$oracle_podinfo" --argjson c "$oracle_ctrinfo" --arg node "$node" '{
    namespace: $p.status.metadata.namespace, pod: $p.status.metadata.name,
    pod_uid: $p.status.metadata.uid, container: $c.status.metadata.name,
    container_id: ("containerd://" + $c.status.id), node: $node,
    service_name: ($p.status.metadata.namespace + "/" + $c.status.metadata.name)}')
  got=$(jq -c --argjson w "$want" 'with_entries(select(.key as $k | $w | has($k)))' <<<"$labels")
  if [[ -n $got && $(jq -S . <<<"$got") == "$(jq -S . <<<"$want")" ]]; then
    pass "$what: $got"
  else
    fail "$what: want $want, got ${got:-nothing}; all labels: $labels"
  fi
}

# The pod's labels in serve's /targets: serve runs on the host with
# --host-root, through which it reads the containers' OCI bundles.
labels_serve_case() {
  local addr labels
  e2e_start "$work/serve.out" "$work/serve.log" "$tool" serve --listen 127.0.0.1:0 \
    --discover-interval 1 --host-root "$work/hostroot" --node-name "$node"
  if ! e2e_wait_for_line "$work/serve.log" "listening on" "$target_pid" 30; then
    fail "labels: serve did not start" "$work/serve.log"
    return
  fi
  addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/serve.log" | head -n 1)
  for _ in $(seq 1 50); do
    labels=$(curl -s "http://$addr/targets" |
      jq -c --arg pid "$oracle_pid" '.[] | select(.labels.pid == $pid) | .labels')
    [[ -n $labels ]] && break
    sleep 0.2
  done
  if [[ -z $labels ]]; then
    fail "labels in serve's /targets: no target with pid $oracle_pid within 10 s" "$work/serve.log"
  else
    expect_pod_labels "labels in serve's /targets" "$labels"
  fi
  e2e_stop_pids_but "$cd_pid"
}

# The pod's labels on what push sends: one push of the oracle to the test
# receiver (tests/pushreceiver, Pyroscope's Push API).
labels_push_case() {
  local line
  source "$(dirname "$0")/push_lib.sh"
  e2e_go_build tests/pushreceiver "$work/bin/pushreceiver"
  receiver=$work/bin/pushreceiver
  push_start_receiver
  # With the OTLP sink of push_otlp_test.sh's Collector build, when there is one, the same push
  # sends OTLP profiles too, whose resource must carry the pod's k8s.* attributes.
  local otlp=()
  push_otlp_collector
  if [[ -x $collector ]]; then
    mkdir -p "$work/otlp"
    e2e_start "$work/sink.out" "$work/sink.err" "$collector" serve -dir "$work/otlp"
    e2e_wait_for_line "$work/sink.out" "^LISTENING" "$target_pid" 10 &&
      otlp=(--otlp "http://$(sed -n 's/^LISTENING //p' "$work/sink.out")")
  fi
  e2e_start "$work/push.out" "$work/push.log" "$tool" push --pid "$oracle_pid" \
    --pyroscope "http://$raddr" --interval 1s --metrics-listen 127.0.0.1:0 \
    --host-root "$work/hostroot" --node-name "$node" "${otlp[@]}"
  local push_pid=$target_pid
  for _ in $(seq 1 150); do
    line=$(grep -s "\"pid\":\"$oracle_pid\"" "$work/rec/pyroscope.jsonl" | head -n 1)
    [[ -n $line ]] && break
    kill -0 "$push_pid" 2>/dev/null || break
    sleep 0.2
  done
  if [[ -z $line ]]; then
    fail "labels of push: no push of pid $oracle_pid reached the receiver within 30 s" "$work/push.log"
  else
    expect_pod_labels "labels of push (Pyroscope series)" "$(jq -c .labels <<<"$line")"
  fi
  if ((${#otlp[@]} == 0)); then
    skip "labels of push (OTLP resource): no OpenTelemetry Collector build at $collector (tests/e2e/push_otlp_test.sh makes it)"
  else
    otlp_resource_case "$push_pid"
  fi
  e2e_stop_pids_but "$cd_pid"
}

# The pod's identity as the OTLP resource attributes of the same push.
otlp_resource_case() {
  local got want
  for _ in $(seq 1 150); do
    got=$(grep -s "\"pid\":$oracle_pid," "$work/otlp/resources.jsonl" | head -n 1)
    [[ -n $got ]] && break
    kill -0 "$1" 2>/dev/null || break
    sleep 0.2
  done
  want=$(jq -c -n --argjson p "$oracle_podinfo" --argjson c "$oracle_ctrinfo" --arg node "$node" '{
    "k8s.namespace.name": $p.status.metadata.namespace, "k8s.pod.name": $p.status.metadata.name,
    "k8s.pod.uid": $p.status.metadata.uid, "k8s.container.name": $c.status.metadata.name,
    "container.id": $c.status.id, "k8s.node.name": $node,
    "service.name": ($p.status.metadata.namespace + "/" + $c.status.metadata.name)}')
  got=$(jq -c --argjson w "$want" '.attributes | with_entries(select(.key as $k | $w | has($k)))' \
    <<<"$got" 2>/dev/null)
  if [[ -n $got && $(jq -S . <<<"$got") == "$(jq -S . <<<"$want")" ]]; then
    pass "labels of push (OTLP resource): $got"
  else
    fail "labels of push (OTLP resource): want $want, got ${got:-nothing}" "$work/push.log"
  fi
}

# The pod's labels in watch.jsonl: a trigger that fires at once (the
# oracle's resident set is above 1 MiB).
labels_watch_case() {
  local line
  mkdir -p "$work/watch"
  e2e_start "$work/watch.out" "$work/watch.log" "$tool" watch "$oracle_pid" -o "$work/watch" \
    --rss-above 1M --no-baseline --host-root "$work/hostroot" --node-name "$node"
  local watch_pid=$target_pid
  for _ in $(seq 1 150); do
    line=$(jq -c --arg pid "$oracle_pid" 'select(.event == "trigger" and (.pid | tostring) == $pid and .file != null)' \
      "$work/watch/watch.jsonl" 2>/dev/null | head -n 1)
    [[ -n $line ]] && break
    kill -0 "$watch_pid" 2>/dev/null || break
    sleep 0.2
  done
  if [[ -z $line ]]; then
    fail "labels in watch.jsonl: no trigger of pid $oracle_pid within 30 s" "$work/watch.log"
  else
    local labels
    labels=$(jq -c '.labels // empty' <<<"$line")
    if [[ -n $labels ]]; then
      expect_pod_labels "labels in watch.jsonl (the trigger's record)" "$labels"
    else
      expect_pod_labels "labels in watch.jsonl (the start record; the trigger's has none)" \
        "$(jq -c 'select(.event == "start") | .labels' "$work/watch/watch.jsonl" | head -n 1)"
    fi
  fi
  e2e_stop_pids_but "$cd_pid"
}

# e2e_stop_pids_but <pid>: ends what the suite started but containerd.
e2e_stop_pids_but() {
  local keep=$1 p rest=()
  for p in "${pids[@]}"; do
    if [[ $p == "$keep" ]]; then rest+=("$p"); continue; fi
    e2e_same_process "$p" && kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  pids=("${rest[@]}")
}

# The agent image: goheap2pprof as the only program of a scratch image
# (scripts/oci-image.sh; with the shared libraries of this build beside it
# unless GOHEAP2PPROF_AGENT_BINARY names a static release binary, such as
# <build>/package/static-amd64/goheap2pprof.stripped), run as uid 0, entry
# point /goheap2pprof.
build_agent_image() {
  local binary=${GOHEAP2PPROF_AGENT_BINARY:-} files=() lib
  if [[ -z $binary ]]; then
    binary=$work/bin/goheap2pprof
    strip -o "$binary" "$tool"
    # libcurl too, which this build loads when first needed (the probe command uses it; a
    # static build links it in).
    local curl
    curl=$(ldconfig -p | awk '$1 == "libcurl.so.4" && /x86-64/ {print $NF; exit}')
    for lib in $( (ldd "$tool"; [[ -n $curl ]] && echo "$curl" && ldd "$curl") | grep -o '/[^ ]*' | sort -u); do
      files+=(--file "$(realpath "$lib"):$lib:0755")
    done
  fi
  cd_image goheap2pprof.test/agent:e2e "$work/agent.tar" --file "$binary:/goheap2pprof:0755" \
    "${files[@]}" --dir /tmp:1777 --entrypoint /goheap2pprof --user 0:0
}

# The DaemonSet's agent container as a kubelet asks the CRI for it
# (deploy/kubernetes/daemonset.yaml through tests/e2e/cri_from_daemonset.jq):
# uid 0, every capability dropped but SYS_PTRACE and DAC_READ_SEARCH,
# no_new_privs, a read-only root, the runtime's default seccomp filter, the
# node's pid namespace (hostPID), read-only host mounts under /host, args.
daemonset_cri() {
  python3 -c 'import json, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d: print(json.dumps(d))' "$src/deploy/kubernetes/daemonset.yaml" |
    jq -c -s -f "$src/tests/e2e/cri_from_daemonset.jq"
}

# The listener's Secrets, which a user creates for the plain manifest (its
# header says how) and a kubelet writes into the container: a CA and a server
# certificate for the Service's name, and a token. The manifest's Secret names
# map to directories of $work/secrets.
make_listener_secrets() {
  local d=$work/secrets
  [[ -d $d ]] && return 0
  mkdir -p "$d/goheap2pprof-tls" "$d/goheap2pprof-token"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=e2e CA" -keyout "$d/ca.key" \
    -out "$d/goheap2pprof-tls/ca.crt" >"$work/openssl.log" 2>&1 &&
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$agent_svc" -keyout "$d/goheap2pprof-tls/tls.key" \
      -out "$d/server.csr" >>"$work/openssl.log" 2>&1 &&
    openssl x509 -req -in "$d/server.csr" -CA "$d/goheap2pprof-tls/ca.crt" -CAkey "$d/ca.key" \
      -CAcreateserial -days 2 -extfile <(printf 'subjectAltName=DNS:%s\n' "$agent_svc") \
      -out "$d/goheap2pprof-tls/tls.crt" >>"$work/openssl.log" 2>&1 &&
    head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$d/goheap2pprof-token/token"
}
agent_svc=goheap2pprof.goheap2pprof.svc

# agent_curl <path> [curl args...]: a GET of the agent's listener as a scraper
# makes it: HTTPS verified against the Secret's CA under the Service's name
# (Prometheus's server_name), the Host header the target's address, with the
# token.
agent_curl() {
  local path=$1
  shift
  curl -s --cacert "$work/secrets/goheap2pprof-tls/ca.crt" --resolve "$agent_svc:$agent_port:127.0.0.1" \
    -H "Host: 127.0.0.1:$agent_port" \
    -H "Authorization: Bearer $(cat "$work/secrets/goheap2pprof-token/token")" "$@" \
    "https://$agent_svc:$agent_port$path"
}

# agent_pod <name> [capability-to-remove]: the agent image in a pod as the
# DaemonSet runs it, with these differences, each because this machine is
# not a node: the node's network (no CNI; the manifest's pod network), so
# it listens on a free loopback port (POD_IP is 127.0.0.1); our containerd's state
# directory mounted where the node's /run/containerd would be; mount
# propagation private where the host's mount is (HostToContainer needs a
# shared or slave source, which a kubelet's node has and this machine's /
# is not); `serve` for `agent` while this build has no agent command (with
# the options serve lacks left out). Sets agent_addr, or "" after
# reporting why.
agent_pod() {
  local name=$1 drop=${2:-} cri sec mounts args cmd log
  cri=$(daemonset_cri) || { fail "$name: the DaemonSet's CRI view"; agent_addr=""; return; }
  sec=$(jq -c --arg drop "$drop" '.security_context | .namespace_options.network = 2
    | .capabilities.add_capabilities -= [$drop]' <<<"$cri")
  mounts=$(jq -c --arg state "$cd_state" --arg crio "$work/crio" --arg crio_ctrs "$work/crio-containers" '[.mounts[]
    | .host_path |= ({"/run/containerd": $state, "/run/crio": $crio,
                      "/run/containers/storage/overlay-containers": $crio_ctrs}[.] // .)]' <<<"$cri")
  mkdir -p "$work/crio" "$work/crio-containers"
  if ! make_listener_secrets; then
    fail "$name: openssl could not make the listener's certificate" "$work/openssl.log"
    agent_addr=""
    return
  fi
  mounts=$(jq -c --arg d "$work/secrets" --argjson m "$mounts" '$m + [.secrets[]
    | {container_path, host_path: ($d + "/" + .secret), readonly: true}]' <<<"$cri")
  local fixed="[]" m path
  for m in $(jq -c '.[]' <<<"$mounts"); do
    path=$(jq -r .host_path <<<"$m")
    if [[ $(jq -r .propagation <<<"$m") != 0 && $(findmnt -no PROPAGATION -T "$path") == private ]]; then
      m=$(jq -c '.propagation = 0' <<<"$m")
    fi
    fixed=$(jq -c --argjson m "$m" '. + [$m]' <<<"$fixed")
  done
  agent_port=$(e2e_free_port)
  args=$(jq -c --arg port "$agent_port" '.args | .[0] = "agent"
    | map(if startswith("--listen=") then "--listen=127.0.0.1:" + $port else . end) + ["-v", "--discover-interval=1"]' <<<"$cri")
  agent_probe=$(jq -c --arg port "$agent_port" '.probe | map(sub(":6061/"; ":" + $port + "/"))' <<<"$cri")
  agent_addr=""
  cd_pod "$name" e2e-agent "$(cat /proc/sys/kernel/random/uuid)" 2 || return
  cd_container "$pod" "$name" agent goheap2pprof.test/agent:e2e "$fixed" "$sec" "$args" \
    "$(jq -cn --arg node "$node" '[{key: "NODE_NAME", value: $node}, {key: "POD_IP", value: "127.0.0.1"}]')" || return
  log=$work/logs/$name/agent.log
  if ! wait_log "$name" agent '.*listening on ' 30; then
    fail "$name: the agent did not start within 30 s" "$log"
    return
  fi
  agent_addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$log" | head -n 1)
  agent_cid=$cid
}

# agent_probe_case <name>: the DaemonSet's probe command, run in the agent's
# container as a kubelet runs an exec probe (crictl exec), passes.
agent_probe_case() {
  local cmd
  mapfile -t cmd < <(jq -r '.[]' <<<"$agent_probe")
  if timeout 30 "$crictl" --config "$work/crictl.yaml" --runtime-endpoint "unix://$cd_sock" \
    exec "$agent_cid" "${cmd[@]}" >"$work/probe-$1.out" 2>&1; then
    pass "$1: the DaemonSet's probe (${cmd[*]:1}), run in the container as a kubelet runs it, passes"
  else
    fail "$1: the DaemonSet's probe failed in the container" "$work/probe-$1.out"
  fi
}

# The least-privilege set: the agent, confined as the DaemonSet confines it,
# captures the oracle in the other pod, and the profile means what the
# oracle's own says; without SYS_PTRACE the same request is refused with 403.
agent_image_case() {
  local code
  build_agent_image
  agent_pod agent
  if [[ -n $agent_addr ]]; then
    agent_probe_case agent
    code=$(agent_curl "/debug/pprof/heap?pid=$oracle_pid" -o "$work/agent.pb.gz" -w '%{http_code}' --max-time 60)
    if [[ $code != 200 ]]; then
      fail "agent image (SYS_PTRACE, DAC_READ_SEARCH): heap?pid=$oracle_pid answered $code: $(head -c 300 "$work/agent.pb.gz")"
    elif "$profdiff" "$work/oracle-out/oracle.pb.gz" "$work/agent.pb.gz" >"$work/agent-profdiff.out" 2>&1; then
      pass "agent image (uid 0, SYS_PTRACE and DAC_READ_SEARCH only, read-only root, hostPID): its capture of the other pod's Go process means what the process's own profile says"
    else
      fail "agent image: its capture differs from the oracle's own profile" "$work/agent-profdiff.out"
    fi
    # The first scan of /proc may not have ended yet (its interval is 1 s).
    local labels=""
    for _ in $(seq 1 50); do
      labels=$(agent_curl /targets --max-time 10 |
        jq -c --arg pid "$oracle_pid" '.[] | select(.labels.pid == $pid) | .labels')
      [[ -n $labels ]] && break
      sleep 0.2
    done
    expect_pod_labels "labels in the agent image's /targets (bundles through /host)" "$labels"
  fi
  agent_pod agent-noptrace SYS_PTRACE
  if [[ -n $agent_addr ]]; then
    code=$(agent_curl "/debug/pprof/heap?pid=$oracle_pid" -o "$work/noptrace.body" -w '%{http_code}' --max-time 60)
    if [[ $code == 403 ]]; then
      pass "agent image without SYS_PTRACE: 403, $(head -c 200 "$work/noptrace.body" | tr '\n' ' ')"
    else
      fail "agent image without SYS_PTRACE: want 403, got $code: $(head -c 300 "$work/noptrace.body")"
    fi
  fi
}

# The systemd cgroup driver: runc asks systemd (over D-Bus) to make each
# container's scope. Where systemd is not pid 1 a pod must fail to start,
# and the case is skipped saying so; where it is, the oracle runs in such a
# pod: its cgroup must be the driver's slices and scope, and goheap2pprof
# must capture it.
systemd_driver_case() {
  local uid pid1 why
  uid=$(cat /proc/sys/kernel/random/uuid)
  pid1=$(cat /proc/1/comm)
  cd_systemd=1
  cd_pod oracle-systemd e2e-systemd "$uid"
  cd_systemd=0
  if [[ -z $pod ]]; then
    why=$(grep -o 'systemd[^"]*' "$work/runp-oracle-systemd.err" | head -n 1)
    if [[ -d /run/systemd/system ]]; then
      fail "systemd driver: crictl runp failed though systemd runs" "$work/runp-oracle-systemd.err"
    else
      skip "systemd driver: runc's systemd cgroup driver needs systemd on D-Bus, and pid 1 here is $pid1: crictl runp fails (${why:-$(head -c 200 "$work/runp-oracle-systemd.err")})"
    fi
    return
  fi
  mkdir -p "$work/systemd-out"
  cd_container "$pod" oracle-systemd oracle goheap2pprof.test/oracle:e2e \
    "$(jq -cn --arg h "$work/systemd-out" '[{container_path: "/out", host_path: $h}]')" '{}' \
    '["-out", "/out/oracle.pb.gz"]' || return
  if ! wait_log oracle-systemd oracle 'READY ' "$ready_timeout"; then
    fail "systemd driver: the container did not print READY" "$work/logs/oracle-systemd/oracle.log"
    return
  fi
  pid=$(container_pid "$cid")
  if ! grep -q "kubepods-burstable-pod${uid//-/_}.slice/cri-containerd-$cid.scope" "/proc/$pid/cgroup"; then
    fail "systemd driver: /proc/$pid/cgroup is not the driver's scope: $(tr '\n' ' ' <"/proc/$pid/cgroup")"
  elif "$tool" "$pid" -o "$work/systemd.pb.gz" >"$work/systemd-tool.out" 2>&1 &&
    "$profdiff" "$work/systemd-out/oracle.pb.gz" "$work/systemd.pb.gz" >"$work/systemd-profdiff.out" 2>&1; then
    pass "systemd driver: a pod in kubepods-burstable-pod….slice/cri-containerd-<id>.scope, captured as its own profile says"
  else
    fail "systemd driver: capture or comparison failed" "$work/systemd-tool.out"
  fi
}

oracle_case
systemd_driver_case
if [[ -n ${oracle_pid:-} ]]; then
  node=e2e-node-$$
  oracle_podinfo=$(cd_crictl inspectp "$oracle_pod")
  oracle_ctrinfo=$(cd_crictl inspect "$oracle_cid")
  make_host_root
  labels_serve_case
  labels_push_case
  labels_watch_case
  agent_image_case
fi

# The end: no pod, shim, mount or cgroup of ours outlives the suite.
cd_stop
if [[ -n $(cd_leftovers) ]]; then
  fail "cleanup: left behind after the pods were removed and containerd stopped:"
  cd_leftovers | sed 's/^/    /'
else
  pass "cleanup: every pod, shim, mount and kubepods cgroup of the suite is gone"
fi
e2e_finish
