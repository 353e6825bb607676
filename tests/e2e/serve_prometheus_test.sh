#!/usr/bin/env bash
# `goheap2pprof serve` with a real Prometheus (Debian's prometheus package):
# one job discovers the Go processes through http_sd_configs at /targets and
# its /api/v1/targets must show each with serve's labels (the multi-target
# pattern: every target's address is serve's, __param_pid selects the
# process); a second job scrapes serve's /metrics, which must be healthy.
#
#   bash tests/e2e/serve_prometheus_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command prometheus "needs prometheus (Debian package prometheus)"
e2e_require_command curl "needs curl"
e2e_make_work serve-prometheus
trap 'e2e_stop_pids -9' EXIT

# json_ok <file> <jq args...>: jq -e on a file that must not be empty (jq -e
# succeeds on empty input).
json_ok() {
  local file=$1
  shift
  [[ -s $file ]] && jq -e "$@" "$file" >/dev/null 2>&1
}

(cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/target" .) \
  >"$work/build.log" 2>&1 || { fail "build servetarget" "$work/build.log"; e2e_finish; }
e2e_start "$work/t.out" "$work/t.err" "$work/target" -http=false
tpid=$target_pid
e2e_wait_for_line "$work/t.out" "^READY" "$tpid" 20 || { fail "target start" "$work/t.err"; e2e_finish; }
e2e_start "$work/serve.out" "$work/serve.log" "$tool" serve --listen 127.0.0.1:0 --discover-interval 1
spid=$target_pid
e2e_wait_for_line "$work/serve.log" "listening on" "$spid" 10 || { fail "serve start" "$work/serve.log"; e2e_finish; }
addr=$(sed -n 's/.*listening on //p' "$work/serve.log")

# A free port for Prometheus, which must be told one.
pport=$(e2e_free_port)
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: go-heap
    metrics_path: /debug/pprof/heap
    http_sd_configs:
      - url: http://$addr/targets
        refresh_interval: 1s
  - job_name: serve
    static_configs:
      - targets: ["$addr"]
YAML
e2e_start "$work/prom.out" "$work/prom.log" prometheus --config.file="$work/prometheus.yml" \
  --storage.tsdb.path="$work/tsdb" --web.listen-address="127.0.0.1:$pport"
prom=$target_pid
api="http://127.0.0.1:$pport/api/v1"
ok=""
for _ in $(seq 1 150); do
  curl -s "$api/targets" >"$work/targets.json" 2>/dev/null
  if json_ok "$work/targets.json" --arg p "$tpid" '.data.activeTargets[] | select(.labels.pid == $p)' &&
    json_ok "$work/targets.json" '.data.activeTargets[] | select(.labels.job == "serve" and .health == "up")'; then
    ok=1
    break
  fi
  kill -0 "$prom" 2>/dev/null || break
  sleep 0.2
done
if [[ -z $ok ]]; then
  fail "prometheus did not list the target and scrape serve" "$work/prom.log"
  e2e_finish
fi
jq --arg p "$tpid" '.data.activeTargets[] | select(.labels.pid == $p) | {labels, discoveredLabels, scrapeUrl}' "$work/targets.json" >"$work/target.json"
sed 's/^/    /' "$work/target.json" | head -40
if json_ok "$work/target.json" --arg p "$tpid" --arg a "$addr" '
    .labels.pid == $p and .labels.instance == $a and (.labels.go_version | startswith("go1.")) and
    .labels.service_name == "target" and (.labels.build_id | length > 0) and
    (.labels.start_time | length > 0) and (.labels.exe | endswith("/target")) and .labels.comm == "target" and
    .discoveredLabels.__param_pid == $p and
    (.scrapeUrl | endswith("/debug/pprof/heap?pid=" + $p))'; then
  pass "/api/v1/targets: the Go process with serve's labels and a scrape URL with ?pid=$tpid"
else
  fail "target labels"
fi
# Scrape /metrics and query it back: healthy, and the samples arrived.
for _ in $(seq 1 50); do
  v=$(curl -s "$api/query?query=goheap2pprof_discovery_scans_total" | jq -r '.data.result[0].value[1] // empty')
  [[ -n $v ]] && break
  sleep 0.2
done
health=$(jq -r '.data.activeTargets[] | select(.labels.job == "serve") | "\(.health) \(.lastError)"' "$work/targets.json")
if [[ -n $v && $health == "up " ]]; then
  pass "prometheus scrapes /metrics cleanly (health up, no error; discovery scans = $v)"
else
  fail "prometheus scrape of /metrics: health '$health', value '$v'"
fi
e2e_finish
