#!/usr/bin/env bash
# The Kubernetes manifests (deploy/kubernetes), parsed by the tools a cluster uses:
#  - `helm lint --strict` of the chart;
#  - `helm template` with the default values and with each group of options (TLS and token,
#    push, NetworkPolicy and AppArmor, extra arguments and volumes), every rendered object
#    decoded strictly into its k8s.io/api type (tests/k8svalidate: an unknown, misspelled or
#    duplicated field, or an unknown kind, fails as the API server's strict field validation
#    fails it);
#  - deploy/kubernetes/daemonset.yaml is what scripts/render-manifests.sh renders from the
#    chart now (the two cannot drift), and decodes strictly too;
#  - negative cases: a misspelled field in the plain manifest and in a chart template (helm
#    renders it: only the strict decode catches it), and a misspelled kind, each fail;
#  - what the decoded objects say: hostPID; uid 0 with capabilities exactly SYS_PTRACE and
#    DAC_READ_SEARCH (drop ALL), not privileged, no privilege escalation, read-only root;
#    read-only host mounts of /run/containerd, /run/crio, /sys/fs/cgroup under --host-root;
#    NODE_NAME from the downward API; the memory limit equal to workers x (worker memory + 2
#    x largest capture) + 64 MiB (+ the push queue when pushing), computed from the
#    arguments the agent is given; probes on the listener's port; a node-local Service for
#    /targets and /metrics selecting the DaemonSet's pods; no service account token;
#  - when this build has `goheap2pprof agent`, every option the manifests give it is one its
#    --help lists (else that case is skipped, saying so);
#  - the listener started with the default manifest's arguments (agent, or serve with the
#    ones it knows) answers the probes' GET /metrics with 200.
# helm v3.22: GOHEAP2PPROF_HELM, else the one on PATH if it is v3.22 (scripts/install-deps.sh
# --test installs it), else installed with `go install` into <build>/e2e/helm-v3.22.0 once (the
# Go module proxy must be reachable then).
#
#   bash tests/e2e/deploy_manifests_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_go
e2e_require_command jq "jq is not installed (bash scripts/install-deps.sh --test)"
e2e_make_work deploy_manifests
chart=$src/deploy/kubernetes/helm/goheap2pprof

helm=${GOHEAP2PPROF_HELM:-}
if [[ -z $helm && $(helm version --short 2>/dev/null) == v3.22* ]]; then
  helm=$(command -v helm)  # scripts/install-deps.sh --test put it there
fi
helm=${helm:-$bin/e2e/helm-v3.22.0/helm}
if [[ ! -x $helm ]]; then
  echo "installing helm v3.22.0 into $(dirname "$helm") (go install; minutes on a cold Go cache)"
  mkdir -p "$(dirname "$helm")"
  if ! GOBIN=$(dirname "$helm") GOFLAGS=-mod=mod timeout 1200 nice "${go[@]}" install \
    helm.sh/helm/v3/cmd/helm@v3.22.0 >"$work/helm-install.log" 2>&1; then
    fail "go install helm.sh/helm/v3/cmd/helm@v3.22.0" "$work/helm-install.log"
    e2e_finish
  fi
fi
echo "helm: $("$helm" version --short 2>&1)"
if ! (cd "$src/tests/k8svalidate" && "${go[@]}" build -o "$work/k8svalidate" .) >"$work/k8svalidate-build.log" 2>&1; then
  fail "build tests/k8svalidate" "$work/k8svalidate-build.log"
  e2e_finish
fi

# ---- helm lint
if "$helm" lint --strict "$chart" >"$work/lint.out" 2>&1; then
  pass "helm lint --strict"
else
  fail "helm lint --strict" "$work/lint.out"
fi

# render <name> [helm args...]: helm template into $work/<name>.yaml, then the strict decode
# into $work/<name>.json (one object a line). Passes or fails one case.
render() {
  local name=$1
  shift
  if ! "$helm" template goheap2pprof "$chart" --namespace goheap2pprof "$@" \
    >"$work/$name.yaml" 2>"$work/$name.err"; then
    fail "helm template ($name)" "$work/$name.err"
    return 1
  fi
  if "$work/k8svalidate" -json "$work/$name.json" "$work/$name.yaml" >"$work/$name.check" 2>&1; then
    pass "helm template ($name): $(grep -c '^ok ' "$work/$name.check") objects decode strictly: $(awk '/^ok /{printf "%s ", $3}' "$work/$name.check")"
  else
    fail "strict decode of helm template ($name)" "$work/$name.check"
    return 1
  fi
}

# expect <case> <file.json> <jq program>: the jq program (over all objects, slurped) must
# print true.
expect() {
  local got
  got=$(jq -s "$3" "$2" 2>&1)
  if [[ $got == true ]]; then
    pass "$1"
  else
    echo "$got" >"$work/expect.out"
    fail "$1 (jq: $3)" "$work/expect.out"
  fi
}

# jq helpers over the slurped objects.
ds='(map(select(.kind == "DaemonSet")) | .[0])'
pod="$ds.spec.template.spec"
ctr="($pod.containers[0])"
args="($ctr.args)"
# The value of --name=value in the container's arguments, as a number.
arg_num() { echo "($args | map(select(startswith(\"--$1=\")))[0] | split(\"=\")[1] | tonumber)"; }
mib=1048576
memory_formula="(($(arg_num max-concurrent)) * (($(arg_num worker-memory)) + 2 * ($(arg_num max-capture-bytes))) / $mib + 64)"

if render default; then
  expect "default: a ServiceAccount, a Service and a DaemonSet" "$work/default.json" \
    '[.[].kind] | sort == ["DaemonSet", "Service", "ServiceAccount"]'
  expect "default: hostPID" "$work/default.json" "$pod.hostPID == true"
  expect "default: capabilities exactly SYS_PTRACE and DAC_READ_SEARCH, all others dropped" \
    "$work/default.json" "$ctr.securityContext.capabilities == {\"add\": [\"SYS_PTRACE\", \"DAC_READ_SEARCH\"], \"drop\": [\"ALL\"]}"
  expect "default: uid 0, not privileged, no privilege escalation, read-only root, RuntimeDefault seccomp" \
    "$work/default.json" "$ctr.securityContext as \$s | \$s.runAsUser == 0 and \$s.privileged == false and \$s.allowPrivilegeEscalation == false and \$s.readOnlyRootFilesystem == true and $pod.securityContext.seccompProfile.type == \"RuntimeDefault\""
  expect "default: /run/containerd, /run/crio, /sys/fs/cgroup mounted read-only under --host-root=/host" \
    "$work/default.json" "($pod.volumes | map({key: .name, value: .hostPath.path}) | from_entries) as \$v |
      ($ctr.volumeMounts | map(select(.name | startswith(\"host-\")))) as \$m |
      ([\$m[] | \$v[.name]] | sort) == [\"/run/containerd\", \"/run/crio\", \"/sys/fs/cgroup\"] and
      all(\$m[]; .readOnly == true and .mountPath == \"/host\" + \$v[.name]) and
      ($args | index(\"--host-root=/host\")) != null"
  expect "default: NODE_NAME and POD_IP from the downward API; --listen on the pod IP" "$work/default.json" \
    "($ctr.env | map({key: .name, value: .valueFrom.fieldRef.fieldPath}) | from_entries) == {\"NODE_NAME\": \"spec.nodeName\", \"POD_IP\": \"status.podIP\"} and ($args | index(\"--listen=\$(POD_IP):6061\")) != null"
  expect "default: memory limit = workers x (worker memory + 2 x max capture) + 64 MiB, from the agent's arguments" \
    "$work/default.json" "($ctr.resources.limits.memory) == (($memory_formula | tostring) + \"Mi\") and $memory_formula == 2368"
  expect "default: readiness and liveness probes GET /metrics on the listener's port" "$work/default.json" \
    "$ctr.readinessProbe.httpGet.path == \"/metrics\" and $ctr.livenessProbe.httpGet.port == \"http\" and ($ctr.ports[0] | .name == \"http\" and .containerPort == 6061)"
  expect "default: a node-local Service on port http, selecting the DaemonSet's pods" "$work/default.json" \
    "(map(select(.kind == \"Service\"))[0]) as \$s | $ds as \$d | \$d.spec.template.metadata.labels as \$l |
      \$s.spec.internalTrafficPolicy == \"Local\" and \$s.spec.ports[0].targetPort == \"http\" and
      (\$s.spec.selector | to_entries | all(\$l[.key] == .value)) and
      (\$d.spec.selector.matchLabels | to_entries | all(\$l[.key] == .value))"
  expect "default: no service account token in the pod" "$work/default.json" \
    "$pod.automountServiceAccountToken == false and (map(select(.kind == \"ServiceAccount\"))[0].automountServiceAccountToken == false)"
  expect "default: --insecure-listen (no TLS Secret given)" "$work/default.json" "($args | index(\"--insecure-listen\")) != null"
fi

if render secure --set listener.tlsSecret=agent-tls --set listener.tokenSecret=agent-token; then
  expect "secure: TLS files and token file from the Secrets, no --insecure-listen, TCP probes" "$work/secure.json" \
    "($args | index(\"--insecure-listen\")) == null and ($args | index(\"--tls-cert-file=/etc/goheap2pprof/tls/tls.crt\")) != null and
     ($args | index(\"--token-file=/etc/goheap2pprof/token/token\")) != null and
     ([$pod.volumes[] | .secret.secretName // empty] | sort) == [\"agent-tls\", \"agent-token\"] and
     $ctr.readinessProbe.tcpSocket.port == \"http\""
fi

if render push --set push.pyroscope=http://alloy.monitoring.svc:4040 --set push.parca=http://parca.parca.svc:7070; then
  expect "push: --pyroscope and --parca given; the memory limit adds the 64 MiB push queue" "$work/push.json" \
    "($args | index(\"--pyroscope=http://alloy.monitoring.svc:4040\")) != null and ($args | index(\"--parca=http://parca.parca.svc:7070\")) != null and
     $ctr.resources.limits.memory == ((($memory_formula) + ($(arg_num max-queue-bytes)) / $mib | tostring) + \"Mi\") and $ctr.resources.limits.memory == \"2432Mi\""
fi

if render options --set networkPolicy.enabled=true \
  --set 'networkPolicy.from[0].namespaceSelector.matchLabels.kubernetes\.io/metadata\.name=monitoring' \
  --set appArmorProfile.type=Unconfined --set workers.count=4 --set workers.memoryMiB=512 \
  --set 'extraArgs={--allow-uid=1000}' --set 'extraVolumes[0].name=out' --set 'extraVolumes[0].emptyDir.sizeLimit=1Gi' \
  --set 'extraVolumeMounts[0].name=out' --set 'extraVolumeMounts[0].mountPath=/out'; then
  expect "options: NetworkPolicy, AppArmor Unconfined, extra arguments and volume, 4 workers of 512 MiB -> 2624Mi" "$work/options.json" \
    "(map(select(.kind == \"NetworkPolicy\"))[0].spec.ingress[0].from[0].namespaceSelector.matchLabels[\"kubernetes.io/metadata.name\"]) == \"monitoring\" and
     $ctr.securityContext.appArmorProfile.type == \"Unconfined\" and ($args | index(\"--allow-uid=1000\")) != null and
     ($ctr.volumeMounts | map(.mountPath) | index(\"/out\")) != null and $ctr.resources.limits.memory == \"2624Mi\" and $memory_formula == 2624"
fi

# ---- the plain manifest
if bash "$src/scripts/render-manifests.sh" --helm "$helm" --out "$work/daemonset.yaml" >"$work/render.out" 2>&1 &&
  diff -u "$src/deploy/kubernetes/daemonset.yaml" "$work/daemonset.yaml" >"$work/render.diff"; then
  pass "deploy/kubernetes/daemonset.yaml is what scripts/render-manifests.sh renders from the chart"
else
  cat "$work/render.out" >>"$work/render.diff"
  fail "deploy/kubernetes/daemonset.yaml is out of date (bash scripts/render-manifests.sh)" "$work/render.diff"
fi
if "$work/k8svalidate" -json "$work/plain.json" "$src/deploy/kubernetes/daemonset.yaml" >"$work/plain.check" 2>&1; then
  pass "daemonset.yaml: $(grep -c '^ok ' "$work/plain.check") objects decode strictly"
  expect "daemonset.yaml: a privileged-admitting Namespace holds the agent's objects" "$work/plain.json" \
    '(map(select(.kind == "Namespace"))[0].metadata.labels["pod-security.kubernetes.io/enforce"]) == "privileged" and
     all(.[] | select(.kind != "Namespace"); .metadata.namespace == "goheap2pprof")'
else
  fail "strict decode of deploy/kubernetes/daemonset.yaml" "$work/plain.check"
fi

# What tests/e2e/cri_from_daemonset.jq gives the containerd suite: the CRI security context
# and mounts a kubelet would ask for, from the manifest.
want_cri='{"security_context":{"run_as_user":{"value":0},"readonly_rootfs":true,"no_new_privs":true,"privileged":false,"capabilities":{"add_capabilities":["SYS_PTRACE","DAC_READ_SEARCH"],"drop_capabilities":["ALL"]},"seccomp":{"profile_type":0},"namespace_options":{"pid":2}},"mounts":[{"container_path":"/host/run/containerd","host_path":"/run/containerd","readonly":true,"propagation":1},{"container_path":"/host/run/crio","host_path":"/run/crio","readonly":true,"propagation":1},{"container_path":"/host/sys/fs/cgroup","host_path":"/sys/fs/cgroup","readonly":true,"propagation":1}]}'
if [[ -f $work/plain.json ]] &&
  got_cri=$(jq -c -s -f "$src/tests/e2e/cri_from_daemonset.jq" "$work/plain.json" | jq -c 'del(.args)') &&
  [[ $got_cri == "$want_cri" ]]; then
  pass "cri_from_daemonset.jq: uid 0, read-only root, no_new_privs, SYS_PTRACE+DAC_READ_SEARCH, RuntimeDefault seccomp, host pid namespace, three read-only host mounts"
else
  echo "${got_cri:-no output}" >"$work/cri.out"
  fail "cri_from_daemonset.jq on daemonset.yaml (want $want_cri)" "$work/cri.out"
fi

# ---- negative cases: each must fail, naming what is wrong
sed 's/readOnlyRootFilesystem:/readOnlyRootFileSystem:/' "$src/deploy/kubernetes/daemonset.yaml" >"$work/typo.yaml"
if ! "$work/k8svalidate" "$work/typo.yaml" >"$work/typo.check" 2>&1 &&
  grep -q 'unknown field "spec.template.spec.containers\[0\].securityContext.readOnlyRootFileSystem"' "$work/typo.check"; then
  pass "a misspelled field in daemonset.yaml fails: $(grep -o 'unknown field "[^"]*"' "$work/typo.check")"
else
  fail "a misspelled field in daemonset.yaml was not caught" "$work/typo.check"
fi
cp -r "$chart" "$work/chart-typo"
sed -i 's/internalTrafficPolicy:/internalTraficPolicy:/' "$work/chart-typo/templates/service.yaml"
if "$helm" template goheap2pprof "$work/chart-typo" >"$work/chart-typo.yaml" 2>&1 &&
  ! "$work/k8svalidate" "$work/chart-typo.yaml" >"$work/chart-typo.check" 2>&1 &&
  grep -q 'unknown field "spec.internalTraficPolicy"' "$work/chart-typo.check"; then
  pass "a misspelled field in a chart template: helm renders it, the strict decode fails it"
else
  fail "a misspelled field in a chart template was not caught" "$work/chart-typo.check"
fi
sed 's/^kind: DaemonSet$/kind: Daemonset/' "$src/deploy/kubernetes/daemonset.yaml" >"$work/kind.yaml"
if ! "$work/k8svalidate" "$work/kind.yaml" >"$work/kind.check" 2>&1 && grep -q 'no kind "Daemonset" is registered' "$work/kind.check"; then
  pass "a misspelled kind fails"
else
  fail "a misspelled kind was not caught" "$work/kind.check"
fi

# ---- the agent knows every option the manifests give it
# (A build without it answers with the capture's help, whose usage line is not agent's.)
if "$tool" agent --help >"$work/agent-help.txt" 2>&1 &&
  grep '^Usage:.*goheap2pprof agent' "$work/agent-help.txt" >/dev/null; then
  missing=()
  for f in "$work"/{default,secure,push,options}.json; do
    [[ -f $f ]] || continue
    while read -r opt; do
      grep -q -- "$opt\b" "$work/agent-help.txt" || missing+=("$opt")
    done < <(jq -r 'select(.kind == "DaemonSet") | .spec.template.spec.containers[0].args[1:][] | select(startswith("--")) | sub("=.*"; "")' "$f" | sort -u)
  done
  if ((${#missing[@]} == 0)); then
    pass "goheap2pprof agent --help lists every option the manifests give it"
  else
    fail "options the manifests give that goheap2pprof agent does not list: $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
  fi
else
  fail "goheap2pprof agent --help shows no agent usage line" "$work/agent-help.txt"
fi

# ---- the probes: the listener, started with the default manifest's arguments, answers the
# probes' GET /metrics with 200. --listen on loopback port 0 (there is no pod IP here) and
# --host-root=/ (this machine's own files).
if [[ -f $work/default.json ]]; then
  run_args=()
  while read -r a; do
    name=${a%%=*}
    case $name in
      --listen) a=--listen=127.0.0.1:0 ;;
      --host-root) a=--host-root=/ ;;
    esac
    run_args+=("$a")
  done < <(jq -r 'select(.kind == "DaemonSet") | .spec.template.spec.containers[0].args[1:][]' "$work/default.json")
  "$tool" agent "${run_args[@]}" >"$work/listener.log" 2>&1 &
  listener_pid=$!
  trap 'kill "$listener_pid" 2>/dev/null' EXIT
  addr=""
  for _ in $(seq 1 100); do
    addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/listener.log" | head -n 1)
    [[ -n $addr ]] || ! kill -0 "$listener_pid" 2>/dev/null && break
    sleep 0.1
  done
  code=$( [[ -n $addr ]] && curl -s -o "$work/metrics.txt" -w '%{http_code}' --max-time 10 "http://$addr/metrics")
  if [[ $code == 200 ]] && grep -q '^# TYPE ' "$work/metrics.txt"; then
    pass "goheap2pprof agent ${run_args[*]}: GET /metrics (the probes' request) answers 200"
  else
    fail "goheap2pprof agent ${run_args[*]}: GET /metrics answered '${code:-}' (address '${addr}')" "$work/listener.log"
  fi
  kill "$listener_pid" 2>/dev/null
  wait "$listener_pid" 2>/dev/null
fi

e2e_finish
