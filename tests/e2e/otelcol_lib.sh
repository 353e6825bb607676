# A real OpenTelemetry Collector for the suites that send OTLP, sourced
# after lib.sh: the `collector` command of tests/otlpreceiver (the OTLP
# receiver over HTTP and gRPC and the debug exporter; Collector modules
# v0.165.0, pinned by its go.mod and go.sum), the one build that
# push_lib.sh's push_require_collector keeps under the build tree (about 4
# minutes of downloads and compiling on 2 cores the first time), then reused.
#
#   e2e_require_otelcol            # sets otelcol_cmd, or skips (exit 77) saying why
#   e2e_start_otelcol metrics      # pipelines: metrics (or profiles: adds the gate; or traces)
#   ... otelcol_http, otelcol_grpc (host:port), otelcol_log (the debug exporter's output)

source "$(dirname "${BASH_SOURCE[0]}")/push_lib.sh"

# e2e_require_otelcol: sets otelcol_cmd, the command that runs the
# Collector (before its --config): GOHEAP2PPROF_OTELCOL, else push_lib.sh's
# Collector (built now if missing); skips when it cannot be had (no Go
# 1.26.8, no module proxy).
e2e_require_otelcol() {
  e2e_require_go
  e2e_require_command curl "needs curl"
  if [[ -n ${GOHEAP2PPROF_OTELCOL:-} ]]; then
    otelcol_cmd=("$GOHEAP2PPROF_OTELCOL")
    return 0
  fi
  push_require_collector
  otelcol_cmd=("$collector" collector)
}

# e2e_start_otelcol <pipeline> [name]: starts the Collector on two free
# loopback ports with one pipeline (metrics, profiles or traces) from the
# OTLP receiver to the debug exporter at detailed verbosity; its files are
# $work/<name>.* (name: otelcol); sets otelcol_http, otelcol_grpc,
# otelcol_pid and otelcol_log, and waits until it is ready.
e2e_start_otelcol() {
  local pipeline=$1 name=${2:-otelcol} gates=()
  [[ $pipeline == profiles ]] && gates=(--feature-gates=+service.profilesSupport)
  otelcol_http=127.0.0.1:$(e2e_free_port)
  otelcol_grpc=127.0.0.1:$(e2e_free_port)
  cat >"$work/$name.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http: { endpoint: "$otelcol_http" }
      grpc: { endpoint: "$otelcol_grpc" }
exporters:
  debug: { verbosity: detailed }
service:
  telemetry: { metrics: { level: none } }
  pipelines:
    $pipeline: { receivers: [otlp], exporters: [debug] }
YAML
  otelcol_log=$work/$name.log
  e2e_start "$work/$name.out" "$otelcol_log" "${otelcol_cmd[@]}" --config="file:$work/$name.yaml" "${gates[@]}"
  otelcol_pid=$target_pid
  e2e_wait_for_line "$otelcol_log" "Everything is ready" "$otelcol_pid" 30 ||
    { fail "the Collector did not start" "$otelcol_log"; e2e_finish; }
}
