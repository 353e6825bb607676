#!/usr/bin/env bash
# `goheap2pprof serve` scraped by a real Parca server (v0.28.0), in memory on
# loopback with debuginfod off: Parca discovers the Go processes through
# http_sd_configs at serve's /targets, scrapes /debug/pprof/allocs?pid=N
# (memory only), and the stored profile is queried back through Parca's
# HTTP API with serve's labels.
#
# Parca is not in any package registry: scripts/install-deps.sh --test builds it
# into /usr/local/bin once per machine (about 10 minutes on 2 cores; go install
# is refused by the module proxy). By hand, then point GOHEAP2PPROF_PARCA at it
# or leave it at <build>/parca/parca:
#   mkdir p && cd p && go mod init parcatest &&
#   go get github.com/parca-dev/parca/cmd/parca@v0.28.0 &&
#   go build -o parca github.com/parca-dev/parca/cmd/parca
#
#   bash tests/e2e/serve_parca_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_parca
e2e_make_work serve-parca
trap 'e2e_stop_pids -9' EXIT

(cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/target" .) \
  >"$work/build.log" 2>&1 || { fail "build servetarget" "$work/build.log"; e2e_finish; }
e2e_start "$work/t.out" "$work/t.err" "$work/target" -http=false
tpid=$target_pid
e2e_wait_for_line "$work/t.out" "^READY" "$tpid" 20 || { fail "target start" "$work/t.err"; e2e_finish; }
e2e_start "$work/serve.out" "$work/serve.log" "$tool" serve --listen 127.0.0.1:0 -v --discover-interval 1
spid=$target_pid
e2e_wait_for_line "$work/serve.log" "listening on" "$spid" 10 || { fail "serve start" "$work/serve.log"; e2e_finish; }
addr=$(sed -n 's/.*listening on //p' "$work/serve.log")

scrape=$(
  cat <<YAML
scrape_configs:
  - job_name: go-heap
    scrape_interval: 2s
    http_sd_configs:
      - url: http://$addr/targets
        refresh_interval: 1s
    profiling_config:
      pprof_config:
        memory:
          enabled: true
          path: /debug/pprof/allocs
        block: { enabled: false }
        goroutine: { enabled: false }
        mutex: { enabled: false }
        process_cpu: { enabled: false }
YAML
)
e2e_start_parca "$scrape"
found=""
for _ in $(seq 1 300); do
  if curl -s "$papi/profiles/labels/pid/values" >"$work/pids.json" 2>/dev/null &&
    [[ -s $work/pids.json ]] && jq -e --arg p "$tpid" '.labelValues | index($p)' "$work/pids.json" >/dev/null 2>&1; then
    found=1
    break
  fi
  kill -0 "$parca_pid" 2>/dev/null || break
  sleep 0.2
done
if [[ -n $found ]]; then
  pass "Parca stored a profile labelled pid=$tpid (discovered through /targets)"
else
  fail "Parca has no profile for pid $tpid" "$work/parca.log"
  e2e_finish
fi
curl -s "$papi/profiles/types" >"$work/types.json"
if [[ -s $work/types.json ]] && jq -e '[.types[] | select(.name == "memory" and .sampleType == "alloc_space")] | length > 0' "$work/types.json" >/dev/null; then
  pass "Parca lists memory alloc_space among its profile types"
else
  fail "Parca profile types" "$work/types.json"
fi
# The stored profile, queried back: a series for the pid with serve's labels
# and a non-zero value.
curl -s -G "$papi/profiles/query_range" \
  --data-urlencode "query=memory:alloc_space:bytes:space:bytes{pid=\"$tpid\"}" \
  --data-urlencode "start=$(date -u -d '-10 min' +%Y-%m-%dT%H:%M:%SZ)" \
  --data-urlencode "end=$(date -u -d '+1 min' +%Y-%m-%dT%H:%M:%SZ)" \
  --data-urlencode "step=1s" >"$work/range.json"
if [[ -s $work/range.json ]] && jq -e --arg p "$tpid" '
    .series | length > 0 and
    (.[0].labelset.labels | any(.name == "pid" and .value == $p)) and
    (.[0].labelset.labels | any(.name == "service_name" and .value == "target")) and
    (.[0].samples | any((.value | tonumber) > 0))' "$work/range.json" >/dev/null; then
  pass "Parca query_range returns the pid's alloc_space series with serve's labels and a value > 0"
else
  fail "Parca query_range" "$work/range.json"
fi
grep -q "\"GET /debug/pprof/allocs?pid=$tpid\" 200" "$work/serve.log" &&
  pass "serve answered Parca's scrape of /debug/pprof/allocs?pid=$tpid" ||
  fail "no scrape of pid $tpid in serve's log" "$work/serve.log"
e2e_finish
