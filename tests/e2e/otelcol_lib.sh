# A real OpenTelemetry Collector for the suites that send OTLP, sourced
# after lib.sh: tests/otelcol (the OTLP receiver over HTTP and gRPC and the
# debug exporter; Collector modules v0.165.0, pinned by its go.mod and
# go.sum) built through the Go module proxy once per build tree, as
# <build>/otelcol/otelcol (about 4 minutes of downloads and compiling on 2
# cores the first time, a 54 MB binary), then reused.
#
#   e2e_require_otelcol            # sets otelcol_cmd, or skips (exit 77) saying why
#   e2e_start_otelcol metrics      # pipelines: metrics (or profiles: adds the gate; or traces)
#   ... otelcol_http, otelcol_grpc (host:port), otelcol_log (the debug exporter's output)

# e2e_require_otelcol: sets otelcol_cmd, the command that runs the
# Collector (before its --config): GOHEAP2PPROF_OTELCOL, else
# <build>/otelcol/otelcol (built now if missing or older than
# tests/otelcol); skips when it cannot be had (no Go 1.26.8, no module proxy).
e2e_require_otelcol() {
  e2e_require_go
  e2e_require_command curl "needs curl"
  otelcol=${GOHEAP2PPROF_OTELCOL:-$bin/otelcol/otelcol}
  otelcol_cmd=("$otelcol")
  [[ -n ${GOHEAP2PPROF_OTELCOL:-} ]] && return 0
  if [[ -x $otelcol && $otelcol -nt $src/tests/otelcol/go.sum && $otelcol -nt $src/tests/otelcol/main.go ]]; then
    return 0
  fi
  mkdir -p "$(dirname "$otelcol")"
  echo "building the OpenTelemetry Collector (tests/otelcol) into $otelcol"
  if ! (cd "$src/tests/otelcol" && timeout 1500 "${go[@]}" build -p 1 -o "$otelcol.new" .) \
    >"$(dirname "$otelcol")/build.log" 2>&1; then
    echo "SKIP: cannot build the OpenTelemetry Collector through the Go module proxy ($(dirname "$otelcol")/build.log: $(tail -n 1 "$(dirname "$otelcol")/build.log"))"
    exit 77
  fi
  mv "$otelcol.new" "$otelcol"
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
