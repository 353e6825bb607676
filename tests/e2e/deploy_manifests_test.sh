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
#    read-only host mounts of /run/containerd, /run/crio, cri-o's bundles
#    (/run/containers/storage/overlay-containers) and /sys/fs/cgroup under --host-root;
#    NODE_NAME from the downward API; the memory limit equal to workers x (worker memory + 2
#    x largest capture) + 64 MiB (+ the push queue when pushing), computed from the
#    arguments the agent is given; a node-local Service for /targets and /metrics selecting
#    the DaemonSet's pods; no service account token;
#  - the listener (issue 38, finding 6): by default HTTPS with a bearer token from Secrets the
#    chart makes (a CA, a server certificate for the Service's names, a random token), probes
#    that run `goheap2pprof probe` with that token; named Secrets; plain HTTP only when
#    listener.insecure is set; mutual TLS with a client CA from a ConfigMap; and the renders
#    that must fail, naming why: a NetworkPolicy with an empty `from` (it admits every pod), a
#    token over plain HTTP, TLS without client authentication, a client CA without a
#    certificate for the probes;
#  - when this build has `goheap2pprof agent`, every option the manifests give it is one its
#    --help lists (else that case is skipped, saying so);
#  - the agent started with the default render's arguments and the Secrets it made: the
#    probes' command passes; it fails within its timeout while the agent is stopped (SIGSTOP),
#    though TCP connections still succeed (what a tcpSocket probe saw); a client verifying
#    the generated CA with the Service's name and sending the token gets 200, one without the
#    token 401.
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
  expect "default: a ServiceAccount, the listener's two Secrets, a Service and a DaemonSet" "$work/default.json" \
    '[.[].kind] | sort == ["DaemonSet", "Secret", "Secret", "Service", "ServiceAccount"]'
  expect "default: hostPID" "$work/default.json" "$pod.hostPID == true"
  expect "default: capabilities exactly SYS_PTRACE and DAC_READ_SEARCH, all others dropped" \
    "$work/default.json" "$ctr.securityContext.capabilities == {\"add\": [\"SYS_PTRACE\", \"DAC_READ_SEARCH\"], \"drop\": [\"ALL\"]}"
  expect "default: uid 0, not privileged, no privilege escalation, read-only root, RuntimeDefault seccomp" \
    "$work/default.json" "$ctr.securityContext as \$s | \$s.runAsUser == 0 and \$s.privileged == false and \$s.allowPrivilegeEscalation == false and \$s.readOnlyRootFilesystem == true and $pod.securityContext.seccompProfile.type == \"RuntimeDefault\""
  expect "default: /run/containerd, /run/crio, cri-o's bundles, /sys/fs/cgroup mounted read-only under --host-root=/host" \
    "$work/default.json" "($pod.volumes | map({key: .name, value: .hostPath.path}) | from_entries) as \$v |
      ($ctr.volumeMounts | map(select(.name | startswith(\"host-\")))) as \$m |
      ([\$m[] | \$v[.name]] | sort) == [\"/run/containerd\", \"/run/containers/storage/overlay-containers\", \"/run/crio\", \"/sys/fs/cgroup\"] and
      all(\$m[]; .readOnly == true and .mountPath == \"/host\" + \$v[.name]) and
      ($args | index(\"--host-root=/host\")) != null"
  expect "default: NODE_NAME and POD_IP from the downward API; --listen on the pod IP" "$work/default.json" \
    "($ctr.env | map({key: .name, value: .valueFrom.fieldRef.fieldPath}) | from_entries) == {\"NODE_NAME\": \"spec.nodeName\", \"POD_IP\": \"status.podIP\"} and ($args | index(\"--listen=\$(POD_IP):6061\")) != null"
  expect "default: memory limit = workers x (worker memory + 2 x max capture) + 64 MiB, from the agent's arguments" \
    "$work/default.json" "($ctr.resources.limits.memory) == (($memory_formula | tostring) + \"Mi\") and $memory_formula == 2368"
  expect "default: readiness and liveness probes run goheap2pprof probe: GET /metrics over HTTPS with the token" "$work/default.json" \
    "([$ctr.readinessProbe, $ctr.livenessProbe] | all(.exec.command == [\"/goheap2pprof\", \"probe\",
       \"https://\$(POD_IP):6061/metrics\", \"--insecure-skip-verify\", \"--token-file=/etc/goheap2pprof/token/token\"]
       and .tcpSocket == null and .httpGet == null)) and ($ctr.ports[0] | .name == \"http\" and .containerPort == 6061)"
  expect "default: a node-local Service on port http, selecting the DaemonSet's pods" "$work/default.json" \
    "(map(select(.kind == \"Service\"))[0]) as \$s | $ds as \$d | \$d.spec.template.metadata.labels as \$l |
      \$s.spec.internalTrafficPolicy == \"Local\" and \$s.spec.ports[0].targetPort == \"http\" and
      (\$s.spec.selector | to_entries | all(\$l[.key] == .value)) and
      (\$d.spec.selector.matchLabels | to_entries | all(\$l[.key] == .value))"
  expect "default: no service account token in the pod" "$work/default.json" \
    "$pod.automountServiceAccountToken == false and (map(select(.kind == \"ServiceAccount\"))[0].automountServiceAccountToken == false)"
  expect "default: authenticated: HTTPS and a bearer token from the chart's Secrets, no --insecure-listen" "$work/default.json" \
    "($args | index(\"--insecure-listen\")) == null and ($args | index(\"--tls-cert-file=/etc/goheap2pprof/tls/tls.crt\")) != null and
     ($args | index(\"--tls-key-file=/etc/goheap2pprof/tls/tls.key\")) != null and
     ($args | index(\"--token-file=/etc/goheap2pprof/token/token\")) != null and
     ([$pod.volumes[] | .secret.secretName // empty] | sort) == [\"goheap2pprof-tls\", \"goheap2pprof-token\"] and
     (map(select(.kind == \"Secret\")) | map(.metadata.name) | sort) == [\"goheap2pprof-tls\", \"goheap2pprof-token\"]"
  # The Secrets' contents: a token of 48 characters; a server certificate for the Service's
  # names that the CA beside it signed, with its key.
  jq -r 'select(.kind == "Secret" and .metadata.name == "goheap2pprof-token") | .data.token' \
    "$work/default.json" | base64 -d >"$work/token"
  mkdir -p "$work/tls"
  for key in tls.crt tls.key ca.crt; do
    jq -r --arg k "$key" 'select(.kind == "Secret" and .metadata.name == "goheap2pprof-tls") | .data[$k]' \
      "$work/default.json" | base64 -d >"$work/tls/$key"
  done
  if [[ $(wc -c <"$work/token") == 48 ]] &&
    openssl verify -CAfile "$work/tls/ca.crt" "$work/tls/tls.crt" >"$work/verify.out" 2>&1 &&
    openssl x509 -in "$work/tls/tls.crt" -noout -ext subjectAltName 2>&1 | tee -a "$work/verify.out" |
    grep -q 'DNS:goheap2pprof.goheap2pprof.svc\b' &&
    [[ $(openssl x509 -in "$work/tls/tls.crt" -noout -pubkey | sha256sum) == \
       $(openssl pkey -in "$work/tls/tls.key" -pubout | sha256sum) ]]; then
    pass "default: the generated token (48 characters) and a certificate for goheap2pprof.goheap2pprof.svc that the generated CA signed, with its key"
  else
    fail "default: the generated Secrets (token $(wc -c <"$work/token") bytes)" "$work/verify.out"
  fi
fi

# Renders with other listener values.
if render named-secrets --set listener.tlsSecret=agent-tls --set listener.tokenSecret=agent-token; then
  expect "named Secrets: TLS files and token file from them, no Secret made by the chart" "$work/named-secrets.json" \
    "($args | index(\"--insecure-listen\")) == null and ($args | index(\"--tls-cert-file=/etc/goheap2pprof/tls/tls.crt\")) != null and
     ($args | index(\"--token-file=/etc/goheap2pprof/token/token\")) != null and
     ([$pod.volumes[] | .secret.secretName // empty] | sort) == [\"agent-tls\", \"agent-token\"] and
     (map(select(.kind == \"Secret\")) | length) == 0"
fi
if render insecure --set listener.insecure=true; then
  expect "listener.insecure: --insecure-listen, no token, no Secret, the probes over plain HTTP" "$work/insecure.json" \
    "($args | index(\"--insecure-listen\")) != null and ($args | map(select(startswith(\"--token-file\") or startswith(\"--tls-\"))) | length) == 0 and
     (map(select(.kind == \"Secret\")) | length) == 0 and
     $ctr.readinessProbe.exec.command == [\"/goheap2pprof\", \"probe\", \"http://\$(POD_IP):6061/metrics\"]"
fi
if render mtls --set listener.clientCA.configMap=scrapers-ca --set listener.probeClientSecret=probe-client; then
  expect "listener.clientCA: --tls-client-ca-file from the ConfigMap, the token still, the probes with a client certificate" "$work/mtls.json" \
    "($args | index(\"--tls-client-ca-file=/etc/goheap2pprof/client-ca/ca.crt\")) != null and
     ($args | index(\"--token-file=/etc/goheap2pprof/token/token\")) != null and
     ([$pod.volumes[] | .configMap.name // empty]) == [\"scrapers-ca\"] and
     ([$pod.volumes[] | .secret.secretName // empty] | index(\"probe-client\")) != null and
     ($ctr.livenessProbe.exec.command | index(\"--cert-file=/etc/goheap2pprof/probe/tls.crt\")) != null"
fi

if render probe-path --set probes.path=/healthz; then
  expect "probes.path: --probe-path and httpGet probes over HTTPS on it (no exec, no token)" "$work/probe-path.json" \
    "($args | index(\"--probe-path=/healthz\")) != null and
     ([$ctr.readinessProbe, $ctr.livenessProbe] | all(.httpGet == {\"path\": \"/healthz\", \"port\": \"http\", \"scheme\": \"HTTPS\"} and .exec == null))"
fi
if render probe-path-mtls --set probes.path=/healthz --set listener.clientCA.secret=ca --set listener.probeClientSecret=probe-client; then
  expect "probes.path with a client CA: the kubelet has no client certificate, so goheap2pprof probe stays" "$work/probe-path-mtls.json" \
    "($args | map(select(startswith(\"--probe-path\"))) | length) == 0 and ($ctr.livenessProbe.exec.command | index(\"--cert-file=/etc/goheap2pprof/probe/tls.crt\")) != null"
fi

# refuse <case> <message> [helm args...]: the render must fail, saying <message>.
refuse() {
  local name=$1 text=$2 out=$work/refuse-${1//[^a-zA-Z0-9]/-}
  shift 2
  if ! "$helm" template goheap2pprof "$chart" --namespace goheap2pprof "$@" >"$out.yaml" 2>"$out.err" &&
    grep -q -- "$text" "$out.err"; then
    pass "$name: the render fails: $(grep -o -- "$text.*" "$out.err" | cut -c1-100)"
  else
    fail "$name: the render did not fail saying \"$text\"" "$out.err"
  fi
}
refuse "NetworkPolicy with an empty from" "would admit every pod" --set networkPolicy.enabled=true
refuse "a token over plain HTTP" "clear text" --set listener.insecure=true --set listener.tokenSecret=agent-token
refuse "TLS without any client authentication" "authenticates no one" --set listener.token=false
refuse "a client CA without a certificate for the probes" "probeClientSecret" --set listener.clientCA.secret=ca
refuse "a client CA over plain HTTP" "need TLS" --set listener.insecure=true --set listener.clientCA.configMap=ca


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
  expect "daemonset.yaml: HTTPS with a token from Secrets the user makes (no key or token in the file)" "$work/plain.json" \
    "(map(select(.kind == \"Secret\")) | length) == 0 and ($args | index(\"--insecure-listen\")) == null and
     ($args | index(\"--token-file=/etc/goheap2pprof/token/token\")) != null and
     ([$pod.volumes[] | .secret.secretName // empty] | sort) == [\"goheap2pprof-tls\", \"goheap2pprof-token\"]"
else
  fail "strict decode of deploy/kubernetes/daemonset.yaml" "$work/plain.check"
fi

# What tests/e2e/cri_from_daemonset.jq gives the containerd suite: the CRI security context
# and mounts a kubelet would ask for, from the manifest.
want_cri='{"security_context":{"run_as_user":{"value":0},"readonly_rootfs":true,"no_new_privs":true,"privileged":false,"capabilities":{"add_capabilities":["SYS_PTRACE","DAC_READ_SEARCH"],"drop_capabilities":["ALL"]},"seccomp":{"profile_type":0},"namespace_options":{"pid":2}},"mounts":[{"container_path":"/host/run/containerd","host_path":"/run/containerd","readonly":true,"propagation":1},{"container_path":"/host/run/crio","host_path":"/run/crio","readonly":true,"propagation":1},{"container_path":"/host/run/containers/storage/overlay-containers","host_path":"/run/containers/storage/overlay-containers","readonly":true,"propagation":1},{"container_path":"/host/sys/fs/cgroup","host_path":"/sys/fs/cgroup","readonly":true,"propagation":1}],"secrets":[{"container_path":"/etc/goheap2pprof/tls","secret":"goheap2pprof-tls"},{"container_path":"/etc/goheap2pprof/token","secret":"goheap2pprof-token"}]}'
if [[ -f $work/plain.json ]] &&
  got_cri=$(jq -c -s -f "$src/tests/e2e/cri_from_daemonset.jq" "$work/plain.json" | jq -c 'del(.args, .probe)') &&
  [[ $got_cri == "$want_cri" ]]; then
  pass "cri_from_daemonset.jq: uid 0, read-only root, no_new_privs, SYS_PTRACE+DAC_READ_SEARCH, RuntimeDefault seccomp, host pid namespace, four read-only host mounts, the listener's two Secrets"
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
  renders=(default named-secrets insecure mtls push options probe-path-mtls)
  # --probe-path comes with the listener of issue 38; a build without it is not asked.
  grep -q -- '--probe-path' "$work/agent-help.txt" && renders+=(probe-path)
  for name in "${renders[@]}"; do
    f=$work/$name.json
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

# ---- the probes: the agent, started with the default render's arguments and the Secrets it
# made, passes the probes' command; stopped (SIGSTOP), it fails it within the probe's timeout,
# though the kernel still accepts TCP connections (all a tcpSocket probe checked). --listen on
# loopback port 0 (there is no pod IP here; POD_IP=127.0.0.1 for the probe), --host-root=/
# (this machine's own files), the Secrets' files from $work.
if [[ -f $work/default.json && -s $work/token ]]; then
  run_args=()
  while read -r a; do
    case ${a%%=*} in
      --listen) a=--listen=127.0.0.1:0 ;;
      --host-root) a=--host-root=/ ;;
      --tls-cert-file | --tls-key-file) a=${a%%=*}=$work/tls/${a##*/} ;;
      --token-file) a=--token-file=$work/token ;;
    esac
    run_args+=("$a")
  done < <(jq -r 'select(.kind == "DaemonSet") | .spec.template.spec.containers[0].args[1:][]' "$work/default.json")
  "$tool" agent "${run_args[@]}" >"$work/listener.log" 2>&1 &
  listener_pid=$!
  trap 'kill -CONT "$listener_pid" 2>/dev/null; kill "$listener_pid" 2>/dev/null' EXIT
  addr=""
  for _ in $(seq 1 100); do
    addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/listener.log" | head -n 1)
    [[ -n $addr ]] || ! kill -0 "$listener_pid" 2>/dev/null && break
    sleep 0.1
  done
  port=${addr##*:}
  # The probe's command as the kubelet runs it in the container: the image's /goheap2pprof is
  # this build, the Secrets' files are ours, the pod's IP is loopback.
  probe=()
  while read -r a; do
    case $a in
      /goheap2pprof) a=$tool ;;
      --token-file=*) a=--token-file=$work/token ;;
    esac
    probe+=("${a/:6061\//:$port/}")
  done < <(jq -r 'select(.kind == "DaemonSet") | .spec.template.spec.containers[0].livenessProbe.exec.command[]' "$work/default.json")
  timeout_s=$(jq -r 'select(.kind == "DaemonSet") | .spec.template.spec.containers[0].livenessProbe.timeoutSeconds' "$work/default.json")
  if [[ -n $addr ]] && POD_IP=127.0.0.1 "${probe[@]}" >"$work/probe.out" 2>&1; then
    pass "the probes' command (${probe[*]:1}) passes against the agent started with the default render's arguments"
  else
    cat "$work/listener.log" >>"$work/probe.out"
    fail "the probes' command failed against the agent (address '$addr')" "$work/probe.out"
  fi
  # As Prometheus with server_name: TLS verified for the Service's name, the Host header the
  # target's address (a loopback listener answers 421 to another one).
  svc=goheap2pprof.goheap2pprof.svc
  code=$(curl -s -o "$work/metrics.txt" -w '%{http_code}' --max-time 10 --cacert "$work/tls/ca.crt" \
    --resolve "$svc:$port:127.0.0.1" -H "Host: $addr" -H "Authorization: Bearer $(cat "$work/token")" \
    "https://$svc:$port/metrics")
  code_anon=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$work/tls/ca.crt" \
    --resolve "$svc:$port:127.0.0.1" -H "Host: $addr" "https://$svc:$port/metrics")
  if [[ $code == 200 && $code_anon == 401 ]] && grep -q '^# TYPE ' "$work/metrics.txt"; then
    pass "a scraper verifying the generated CA as $svc with the token gets /metrics (200); without the token 401"
  else
    fail "https://$svc:$port/metrics with the CA: $code with the token, $code_anon without (want 200, 401)" "$work/listener.log"
  fi
  # Stopped: the kernel still completes TCP handshakes (the listen backlog), the probe fails.
  kill -STOP "$listener_pid"
  started=$(date +%s%N)
  if POD_IP=127.0.0.1 timeout 60 "${probe[@]}" --timeout "${timeout_s}s" >"$work/probe-stopped.out" 2>&1; then
    probe_rc=0
  else
    probe_rc=$?
  fi
  elapsed_ms=$((($(date +%s%N) - started) / 1000000))
  tcp=no
  if timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then tcp=yes; fi
  kill -CONT "$listener_pid"
  if ((probe_rc != 0 && elapsed_ms <= (timeout_s + 1) * 1000)) && [[ $tcp == yes ]]; then
    pass "a stopped agent fails the probe (exit $probe_rc after $elapsed_ms ms, timeout ${timeout_s}s), though a TCP connection still succeeds"
  else
    fail "a stopped agent: probe exit $probe_rc after $elapsed_ms ms; TCP connect succeeded: $tcp" "$work/probe-stopped.out"
  fi
  # Resumed, it passes again before the kubelet would restart it (failureThreshold probes).
  threshold=$(jq -r 'select(.kind == "DaemonSet") | .spec.template.spec.containers[0].livenessProbe.failureThreshold' "$work/default.json")
  for ((try = 1; try <= threshold; try++)); do
    POD_IP=127.0.0.1 "${probe[@]}" >>"$work/probe-again.out" 2>&1 && break
  done
  if ((try <= threshold)); then
    pass "resumed, the agent passes the probe again (attempt $try of $threshold)"
  else
    fail "resumed, the agent fails the probe $threshold times" "$work/probe-again.out"
  fi
  kill "$listener_pid" 2>/dev/null
  wait "$listener_pid" 2>/dev/null
fi

e2e_finish
