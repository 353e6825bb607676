# Shared pieces of the end-to-end tests of `goheap2pprof push`
# (tests/e2e/push*_test.sh). Not a test: sourced after lib.sh and
# e2e_init, e2e_make_work; uses src, go and work.
#
#   push_build_programs      builds testdata/servetarget and tests/pushreceiver
#                            into $work/bin; sets receiver
#   push_start_receiver      starts the receiver on a loopback port, storing
#                            into $work/rec; sets raddr (host:port)
#   push_otlp_collector      sets collector: the path of tests/otlpreceiver (a
#                            real OpenTelemetry Collector and a pdata sink)
#                            built for this source, kept under the build
#                            directory
#   push_require_collector   push_otlp_collector, and builds it there through
#                            the Go module proxy if missing (the one Collector
#                            build of the OTLP suites), or skips (exit 77)
#   push_start_euid_target <name>
#                            starts servetarget with effective uid 65534 and
#                            real uid 0, which sets its effective uid to 0 on
#                            SIGUSR2; sets tpid once it is READY

push_build_programs() {
  echo "== building the target and the receiver"
  mkdir -p "$work/bin"
  chmod 755 "$work/bin"
  e2e_go_build servetarget "$work/bin/servetarget"
  e2e_go_build tests/pushreceiver "$work/bin/pushreceiver"
  receiver=$work/bin/pushreceiver
}

push_start_receiver() {
  mkdir -p "$work/rec"
  e2e_start "$work/rec.out" "$work/rec.err" "$receiver" serve -dir "$work/rec"
  if ! e2e_wait_for_line "$work/rec.out" "^LISTENING" "$target_pid" 10; then
    fail "the receiver did not start" "$work/rec.err"
    e2e_finish
  fi
  raddr=$(sed -n 's/^LISTENING //p' "$work/rec.out")
}

push_start_euid_target() {
  e2e_start "$work/$1.out" "$work/$1.err" setpriv --euid=65534 "$work/bin/servetarget" \
    -http=false -euid-on-usr2 0
  tpid=$target_pid
  if ! e2e_wait_for_line "$work/$1.out" "^READY" "$tpid" 20; then
    fail "$1 did not start" "$work/$1.err"
    e2e_finish
  fi
}

# The Collector release tests/otlpreceiver/go.mod pins.
otlp_collector_version=v0.165.0

push_otlp_collector() {
  # Kept per version of the helper's source too, so that a change to it rebuilds.
  local key
  key=$(cat "$src/tests/otlpreceiver/"{main.go,go.mod,go.sum} | sha256sum | cut -c 1-12)
  collector=$bin/otlp-collector-$otlp_collector_version-$key/otlpreceiver
}

push_require_collector() {
  push_otlp_collector
  [[ -x $collector ]] && return 0
  echo "== building the OpenTelemetry Collector $otlp_collector_version (once, kept in $(dirname "$collector"))"
  mkdir -p "$(dirname "$collector")"
  local log=$(dirname "$collector")/build.log
  if ! (cd "$src/tests/otlpreceiver" && nice timeout 1500 "${go[@]}" build -p 1 -o "$collector.tmp" .) \
    >"$log" 2>&1; then
    tail -n 5 "$log"
    echo "SKIP: the OpenTelemetry Collector $otlp_collector_version could not be built from the Go module proxy (log above)"
    exit 77
  fi
  mv "$collector.tmp" "$collector"
}
