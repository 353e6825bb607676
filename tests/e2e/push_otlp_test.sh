#!/usr/bin/env bash
# `goheap2pprof push --otlp` into a real OpenTelemetry Collector (v0.165.0,
# built from the Go module proxy by tests/otlpreceiver with otlpreceiver,
# otlphttpexporter and debugexporter; profiles behind its feature gate). The
# Collector receives our OTLP profiles over HTTP/protobuf (and gRPC) and forwards them
# with its own exporter to a sink built from its own pdata/pprofile
# (otlpreceiver serve), which decodes them and translates them back to
# pprof:
# - meaning: for a target at MemProfileRate 1 (collector off between its
#   allocation phases), the pprof the Collector's data gives back equals our
#   own capture of the same state (profdiff: samples, values, stacks with
#   inline frames, labels, the main mapping), once samples with the same
#   stack and labels are merged and zero ones dropped as push does for its
#   deltas; after another phase, the alloc deltas of the pushes sum to the
#   target's own alloc totals and the last inuse equals its own;
# - identity: every resource attribute (service.name, process.*, host.name,
#   a --label extra) and the scope (goheap2pprof, its version, four profiles,
#   pprof.scope.sample_type_order);
# - gRPC (--otlp-protocol grpc, the Collector's gRPC receiver): for a second
#   target, the profile equals our capture and the resource is its own, with
#   the service.name and service.instance.id it publishes (OTEL_CTX), on its
#   OTLP metrics' resource too (--otlp-metrics in the same push, and in a
#   push with --otlp-metrics alone, whose statistics read carries them);
# - version: a push that announces another protocol version is refused by
#   the Collector with 400; push says so once, naming the version, retries
#   nothing, and goes on pushing to its other backend (Pyroscope, on
#   tests/pushreceiver); over gRPC (INVALID_ARGUMENT) said once too.
# The k8s.* attributes come from the pod identity that containerd_test.sh
# checks; their names are checked by the unit tests (OtlpResource*).
#
# The Collector is built once and kept under the build directory
# (otlp-collector-v0.165.0-<hash of its source>/); without the module proxy the test is skipped.
#
#   bash tests/e2e/push_otlp_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command jq "needs jq"
e2e_require_command python3 "needs python3 (e2e_free_port)"
e2e_require_command setpriv "needs setpriv (util-linux) to run the target as another user"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (the target runs as user 65534, apart from this machine's other Go processes)"
  exit 77
fi
e2e_make_work push-otlp
trap 'e2e_stop_pids -9' EXIT

source "$(dirname "$0")/push_lib.sh"
# The Collector release is pinned there (otlp_collector_version) and in
# tests/otlpreceiver/go.mod.
push_require_collector
collector_version=$otlp_collector_version

mkdir -p "$work/bin"
(cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/bin/target" .) \
  >"$work/build.log" 2>&1 || { fail "build servetarget" "$work/build.log"; e2e_finish; }

# The sink: the Collector's otlphttp exporter sends what it received here.
mkdir -p "$work/rec"
e2e_start "$work/sink.out" "$work/sink.err" "$collector" serve -dir "$work/rec"
e2e_wait_for_line "$work/sink.out" "^LISTENING" "$target_pid" 10 || { fail "sink start" "$work/sink.err"; e2e_finish; }
sink=$(sed -n 's/^LISTENING //p' "$work/sink.out")

cport=$(e2e_free_port)
gport=$(e2e_free_port)
cat >"$work/collector.yaml" <<EOF
receivers:
  otlp:
    protocols:
      http: { endpoint: 127.0.0.1:$cport }
      grpc: { endpoint: 127.0.0.1:$gport }
exporters:
  otlphttp: { endpoint: "http://$sink", compression: none, retry_on_failure: { enabled: false } }
  debug: { verbosity: basic }
  debug/metrics: { verbosity: detailed }
service:
  telemetry: { metrics: { level: none } }
  pipelines:
    profiles: { receivers: [otlp], exporters: [otlphttp, debug] }
    metrics: { receivers: [otlp], exporters: [debug/metrics] }
EOF
e2e_start "$work/collector.out" "$work/collector.err" "$collector" collector \
  --config="file:$work/collector.yaml" --feature-gates=+service.profilesSupport
e2e_wait_for_line "$work/collector.err" "Everything is ready" "$target_pid" 30 ||
  { fail "the Collector did not start" "$work/collector.err"; e2e_finish; }

# The agent first: a process that starts after it has its first profile's
# alloc values pushed as they are (an older one's are its baseline).
chmod 755 "$work" "$work/bin"
e2e_start "$work/push.out" "$work/push.log" "$tool" push --otlp "http://127.0.0.1:$cport" \
  --interval 1s --discover-interval 1 --allow-uid 65534 --label env=e2e --metrics-listen "" -v
push_pid=$target_pid
e2e_wait_for_line "$work/push.log" "pushing every" "$push_pid" 10 || { fail "push start" "$work/push.log"; e2e_finish; }
e2e_start "$work/t.out" "$work/t.err" setpriv --reuid=65534 --regid=65534 --clear-groups \
  "$work/bin/target" -rate 1
tpid=$target_pid
e2e_wait_for_line "$work/t.out" "^READY" "$tpid" 20 || { fail "target start" "$work/t.err"; e2e_finish; }

received() { ls "$work/rec/$tpid".*.pb.gz 2>/dev/null | wc -l; }
more_than() { (($(received) > $1)); }

echo "== meaning"
if e2e_wait_until 30 more_than 0; then
  pass "the Collector received the target's profile and exported it ($(grep -c "\"pid\":$tpid," "$work/rec/resources.jsonl") request(s))"
else
  fail "nothing reached the sink through the Collector in 30 s" "$work/push.log"
  cat "$work/collector.err" | tail -n 20
  e2e_finish
fi
sleep 2  # the cycle stands still: nothing more is pushed
n1=$(received)
"$tool" "$tpid" -o "$work/ours1.pb.gz" 2>"$work/ours1.err"
"$collector" normalize "$work/ours1.pb.gz" "$work/ours1.n.pb.gz"
if "$profdiff" --ignore-comments "$work/ours1.n.pb.gz" "$work/rec/$tpid.$n1.pb.gz" >"$work/diff1.txt" 2>&1; then
  pass "state 1: the Collector's profile, back in pprof, equals our capture: $(grep '^samples:' "$work/diff1.txt")"
else
  fail "state 1: the Collector's profile differs from our capture" "$work/diff1.txt"
fi

kill -USR1 "$tpid"
if e2e_wait_until 30 more_than "$n1"; then
  sleep 2
  "$tool" "$tpid" -o "$work/ours2.pb.gz" 2>"$work/ours2.err"
  last=$work/rec/$tpid.$(received).pb.gz
  want_alloc=$("$collector" total alloc_space "$work/ours2.pb.gz")
  got_alloc=$("$collector" total alloc_space "$work/rec/$tpid".*.pb.gz)
  want_inuse=$("$collector" total inuse_space "$work/ours2.pb.gz")
  got_inuse=$("$collector" total inuse_space "$last")
  if [[ $want_alloc == "$got_alloc" && $want_inuse == "$got_inuse" ]]; then
    pass "state 2: alloc_space deltas of $(received) pushes sum to the target's $want_alloc; last inuse_space $got_inuse"
  else
    fail "state 2: alloc_space deltas sum to $got_alloc (want $want_alloc), inuse_space $got_inuse (want $want_inuse)"
  fi
else
  fail "no push after the target's second phase" "$work/push.log"
fi

echo "== identity"
line=$(grep "\"pid\":$tpid," "$work/rec/resources.jsonl" | tail -n 1)
echo "$line" >"$work/resource.json"
exe=$work/bin/target
if jq -e --argjson pid "$tpid" --arg exe "$exe" --arg host "$(uname -n)" \
  --arg gov "$("${go[@]}" env GOVERSION)" --arg bid "$("${go[@]}" tool buildid "$exe")" '
  .attributes == {"service.name": "target", "process.pid": $pid,
    "process.executable.name": "target", "process.executable.path": $exe,
    "process.executable.build_id.go": $bid, "process.runtime.name": "go",
    "process.runtime.version": $gov, "host.name": $host, "env": "e2e"}' \
  "$work/resource.json" >/dev/null; then
  pass "resource attributes: $(jq -c .attributes "$work/resource.json")"
else
  fail "resource attributes" "$work/resource.json"
fi
if jq -e '.scopes == [{"name": "goheap2pprof", "version": .scopes[0].version, "profiles": 4,
    "attributes": {"pprof.scope.sample_type_order": [0, 1, 2, 3]}}] and (.scopes[0].version | length > 0)' \
  "$work/resource.json" >/dev/null; then
  pass "one ScopeProfiles: $(jq -c .scopes "$work/resource.json")"
else
  fail "scope" "$work/resource.json"
fi
kill "$push_pid"

# gRPC: the same meaning and identity through the Collector's gRPC receiver,
# for a second target that starts after this push (alloc values as they are)
# and publishes an OTel process context (OTEP 4719): its own service.name
# and service.instance.id go on its resource.
echo "== gRPC"
e2e_start "$work/pushg.out" "$work/pushg.log" "$tool" push --otlp "http://127.0.0.1:$gport" \
  --otlp-protocol grpc --otlp-metrics "http://127.0.0.1:$gport" --interval 1s --discover-interval 1 \
  --allow-uid 65534 --label env=grpc --metrics-listen ""
pushg_pid=$target_pid
e2e_wait_for_line "$work/pushg.log" "pushing every" "$pushg_pid" 10 || { fail "push start" "$work/pushg.log"; e2e_finish; }
e2e_start "$work/t2.out" "$work/t2.err" setpriv --reuid=65534 --regid=65534 --clear-groups \
  "$work/bin/target" -rate 1 -otel-ctx "service.name=checkout,service.instance.id=inst-7"
tpid2=$target_pid
e2e_wait_for_line "$work/t2.out" "^READY" "$tpid2" 20 || { fail "target 2 start" "$work/t2.err"; e2e_finish; }
received2() { ls "$work/rec/$tpid2".*.pb.gz 2>/dev/null | wc -l; }
got_grpc() { (($(received2) > 0)); }
if e2e_wait_until 30 got_grpc; then
  sleep 2
  n2=$(received2)
  "$tool" "$tpid2" -o "$work/ours3.pb.gz" 2>"$work/ours3.err"
  "$collector" normalize "$work/ours3.pb.gz" "$work/ours3.n.pb.gz"
  grep "\"pid\":$tpid2," "$work/rec/resources.jsonl" | tail -n 1 >"$work/resource2.json"
  if "$profdiff" --ignore-comments "$work/ours3.n.pb.gz" "$work/rec/$tpid2.$n2.pb.gz" >"$work/diff3.txt" 2>&1 &&
    jq -e --argjson pid "$tpid2" '.attributes["process.pid"] == $pid and .attributes.env == "grpc"
      and .attributes["service.name"] == "checkout" and .attributes["service.instance.id"] == "inst-7"
      and (.scopes | length) == 1' \
      "$work/resource2.json" >/dev/null; then
    pass "over gRPC: the profile, back in pprof, equals our capture ($(grep '^samples:' "$work/diff3.txt")), its own names $(jq -c '.attributes | {"service.name", "service.instance.id", env}' "$work/resource2.json")"
  else
    fail "over gRPC: profile or resource differs" "$work/diff3.txt"
    cat "$work/resource2.json"
  fi
else
  fail "nothing reached the sink through the Collector's gRPC receiver in 30 s" "$work/pushg.log"
fi
# own_metrics_after <line>: whether the Collector logged, after that line
# of its log, ResourceMetrics of the target with the process's own names.
own_metrics_after() {
  tail -n +"$(($1 + 1))" "$work/collector.err" | grep -B 2 "process.pid: Int($tpid2)" >"$work/metrics.txt"
  grep -q "service.name: Str(checkout)" "$work/metrics.txt" &&
    grep -q "service.instance.id: Str(inst-7)" "$work/metrics.txt"
}
# Its runtime metrics (the same push) carry the names its profile capture read.
if e2e_wait_until 10 own_metrics_after 0; then
  pass "over gRPC: its OTLP metrics' resource has service.name checkout and service.instance.id inst-7"
else
  fail "over gRPC: no ResourceMetrics of pid $tpid2 with its own names" "$work/collector.err"
fi
kill "$pushg_pid"

# OTLP metrics alone (no profile backend, so no profile capture reads the
# context): the runtime-statistics read carries the process's own names.
echo "== OTLP metrics alone"
mark=$(wc -l <"$work/collector.err")
e2e_start "$work/pushm.out" "$work/pushm.log" "$tool" push --otlp-metrics "http://127.0.0.1:$cport" \
  --interval 1s --discover-interval 1 --allow-uid 65534 --pid "$tpid2" --metrics-listen ""
pushm_pid=$target_pid
if e2e_wait_until 15 own_metrics_after "$mark"; then
  pass "--otlp-metrics alone: the resource has the process's own service.name and service.instance.id"
else
  fail "--otlp-metrics alone: no ResourceMetrics of pid $tpid2 with its own names" "$work/pushm.log"
  tail -n +"$((mark + 1))" "$work/collector.err" | grep -B 2 -A 12 "process.pid: Int($tpid2)" | head -30
fi
kill "$pushm_pid"

echo "== a Collector that speaks another protocol version"
(cd "$src/tests/pushreceiver" && "${go[@]}" build -o "$work/bin/pushreceiver" .) \
  >"$work/build-receiver.log" 2>&1 || { fail "build tests/pushreceiver" "$work/build-receiver.log"; e2e_finish; }
mkdir -p "$work/prec"
e2e_start "$work/prec.out" "$work/prec.err" "$work/bin/pushreceiver" serve -dir "$work/prec"
e2e_wait_for_line "$work/prec.out" "^LISTENING" "$target_pid" 10 || { fail "pyroscope receiver" "$work/prec.err"; e2e_finish; }
praddr=$(sed -n 's/^LISTENING //p' "$work/prec.out")
GOHEAP2PPROF_TEST_OTLP_PROFILES_VERSION=2 e2e_start "$work/push2.out" "$work/push2.log" "$tool" push \
  --otlp "http://127.0.0.1:$cport" --pyroscope "http://$praddr" --profiles heap,goroutine \
  --interval 1s --discover-interval 1 --pid "$tpid" --metrics-listen "" --attempts 5
GOHEAP2PPROF_TEST_OTLP_PROFILES_VERSION=2 e2e_start "$work/push2g.out" "$work/push2g.log" "$tool" push \
  --otlp "http://127.0.0.1:$gport" --otlp-protocol grpc --profiles heap,goroutine --interval 1s \
  --discover-interval 1 --pid "$tpid" --metrics-listen "" --attempts 5
pyro_count() { "$work/bin/pushreceiver" count -dir "$work/prec" -pid "$tpid" -backend pyroscope; }
pyro_at_least() { (($(pyro_count) >= $1)); }
# refused_once <log> <what> <a line that must be absent> <what it is>
refused_once() {
  local said absent
  said=$(grep -c "does not speak our OTLP profiles protocol version 2" "$1")
  absent=$(grep -c "$3" "$1")
  if ((said == 1 && absent == 0)); then
    pass "version 2 refused$2"
    sed -n 's/^/    /; /does not speak/p' "$1" | cut -c 1-400
  else
    fail "version 2$2: said $said times, $absent $4" "$1"
  fi
}
if e2e_wait_until 30 pyro_at_least 4; then
  refused_once "$work/push2.log" ": said once, not retried, Pyroscope got $(pyro_count) pushes meanwhile" \
    "otlp: attempt" retries
  # Over gRPC libcurl may fail the refused call's stream before it passes the
  # status on (docs/opentelemetry.md, gRPC): a retry, then the same refusal.
  refused_once "$work/push2g.log" " over gRPC too: said once" "otlp: rejected" \
    "rejections not explained"
else
  fail "push did not go on to Pyroscope while the Collector refused it" "$work/push2.log"
fi
e2e_finish
