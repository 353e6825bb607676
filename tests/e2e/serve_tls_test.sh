#!/usr/bin/env bash
# `goheap2pprof serve` over TLS, as node_exporter offers it (issue 22):
# --tls-cert-file/--tls-key-file with a token, --tls-client-ca-file for
# mutual TLS (a client without a certificate of that CA is refused), the
# TLS handshake under the head deadline, the rule that off loopback plain
# HTTP with a token is refused, with or without --insecure-listen, and a real
# Prometheus that discovers the processes through /targets (http_sd with
# tls_config) and scrapes /metrics over mutual TLS. Certificates are made
# here with the openssl command: a CA, a server certificate for 127.0.0.1
# and localhost, a client certificate, and a second CA that serve does not
# trust.
#
#   bash tests/e2e/serve_tls_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_go
e2e_require_command curl "needs curl"
e2e_require_command openssl "needs the openssl command"
e2e_require_command python3 "needs python3 for a silent client"
e2e_make_work serve-tls
trap 'e2e_stop_pids -9' EXIT

source "$(dirname "$0")/serve_lib.sh"
if ! { make_ca ca && make_ca otherca &&
  make_cert server ca "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth" &&
  make_cert client ca "extendedKeyUsage=clientAuth" &&
  make_cert stranger otherca "extendedKeyUsage=clientAuth"; }; then
  fail "make test certificates" "$work/openssl.log"
  e2e_finish
fi

(cd "$src/testdata/servetarget" && CGO_ENABLED=0 "${go[@]}" build -o "$work/target" .) \
  >"$work/build.log" 2>&1 || { fail "build servetarget" "$work/build.log"; e2e_finish; }
e2e_start "$work/t.out" "$work/t.err" "$work/target" -http=false
tpid=$target_pid
e2e_wait_for_line "$work/t.out" "^READY" "$tpid" 20 || { fail "target start" "$work/t.err"; e2e_finish; }

# serve_tls <name> <options...>: sets addr and spid.
serve_tls() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.log" "$tool" serve --listen 127.0.0.1:0 --discover-interval 1 \
    --tls-cert-file "$work/server.pem" --tls-key-file "$work/server.key" "$@"
  spid=$target_pid
  if ! e2e_wait_for_line "$work/$name.log" "listening on" "$spid" 10; then
    fail "serve $name did not start" "$work/$name.log"
    e2e_finish
  fi
  addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/$name.log" | head -n 1)
}

echo "== TLS with a token"
printf 'secret-token-0123456789\n' >"$work/token"
serve_tls token --token-file "$work/token" --header-timeout 2
tok=(-H "Authorization: Bearer secret-token-0123456789")
port=${addr##*:}
for _ in $(seq 1 50); do
  got=$(curl -s -o "$work/body" -w '%{http_code}' --cacert "$work/ca.pem" "${tok[@]}" "https://127.0.0.1:$port/targets")
  grep -q "\"$tpid\"" "$work/body" && break
  sleep 0.2
done
if [[ $got == 200 ]] && grep -q "\"$tpid\"" "$work/body"; then
  pass "curl https://127.0.0.1 with the CA and the token: /targets 200"
else
  fail "curl https with the token: $got" "$work/token.log"
fi
got=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/ca.pem" "${tok[@]}" "https://localhost:$port/debug/pprof/heap?pid=$tpid")
[[ $got == 200 ]] && pass "https://localhost: a heap profile, 200" || fail "https://localhost heap: $got"
got=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/ca.pem" "https://127.0.0.1:$port/metrics")
[[ $got == 401 ]] && pass "TLS without the token: 401" || fail "TLS without the token: $got"
if curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$port/metrics"; then
  fail "plain HTTP to the TLS listener got an answer"
else
  pass "plain HTTP to the TLS listener gets no HTTP answer"
fi
if curl -s -o /dev/null --max-time 5 --cacert "$work/otherca.pem" "https://127.0.0.1:$port/metrics"; then
  fail "a client trusting another CA accepted the server"
else
  pass "a client that does not trust the server's CA refuses it"
fi
start=$SECONDS
python3 - "$port" <<'PY' >"$work/silent.txt" 2>&1
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(15)
t = time.monotonic()
try:
    print("closed" if s.recv(100) == b"" else "data", round(time.monotonic() - t, 1))
except OSError as e:
    print("error", e)
PY
if grep -q "^closed" "$work/silent.txt" && ((SECONDS - start < 10)); then
  pass "a client that never starts the TLS handshake is closed at --header-timeout 2 ($(cat "$work/silent.txt"))"
else
  fail "silent TLS client: $(cat "$work/silent.txt")"
fi
kill "$spid"

echo "== mutual TLS"
serve_tls mtls --tls-client-ca-file "$work/ca.pem"
port=${addr##*:}
got=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/ca.pem" --cert "$work/client.pem" \
  --key "$work/client.key" "https://127.0.0.1:$port/metrics")
[[ $got == 200 ]] && pass "a client certificate of the CA: 200" || fail "client certificate: $got" "$work/mtls.log"
if curl -s -o /dev/null --max-time 5 --cacert "$work/ca.pem" "https://127.0.0.1:$port/metrics"; then
  fail "a client without a certificate was served"
else
  pass "a client without a certificate is refused"
fi
if curl -s -o /dev/null --max-time 5 --cacert "$work/ca.pem" --cert "$work/stranger.pem" \
  --key "$work/stranger.key" "https://127.0.0.1:$port/metrics"; then
  fail "a certificate of another CA was accepted"
else
  pass "a client certificate of another CA is refused"
fi

echo "== Prometheus over mutual TLS"
if command -v prometheus >/dev/null; then
  pport=$(e2e_free_port)
  cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: go-heap
    metrics_path: /debug/pprof/heap
    scheme: https
    tls_config: &tls
      ca_file: $work/ca.pem
      cert_file: $work/client.pem
      key_file: $work/client.key
    http_sd_configs:
      - url: https://127.0.0.1:$port/targets
        refresh_interval: 1s
        tls_config: *tls
  - job_name: serve
    scheme: https
    tls_config: *tls
    static_configs:
      - targets: ["127.0.0.1:$port"]
YAML
  e2e_start "$work/prom.out" "$work/prom.log" prometheus --config.file="$work/prometheus.yml" \
    --storage.tsdb.path="$work/tsdb" --web.listen-address="127.0.0.1:$pport"
  prom=$target_pid
  ok=""
  for _ in $(seq 1 150); do
    curl -s "http://127.0.0.1:$pport/api/v1/targets" >"$work/targets.json" 2>/dev/null
    if [[ -s $work/targets.json ]] &&
      jq -e --arg p "$tpid" '.data.activeTargets[] | select(.labels.pid == $p)' "$work/targets.json" >/dev/null 2>&1 &&
      jq -e '.data.activeTargets[] | select(.labels.job == "serve" and .health == "up")' "$work/targets.json" >/dev/null 2>&1; then
      ok=1
      break
    fi
    kill -0 "$prom" 2>/dev/null || break
    sleep 0.2
  done
  if [[ -n $ok ]]; then
    pass "Prometheus discovered pid $tpid through https /targets and scrapes /metrics up, over mutual TLS"
  else
    jq '.data.activeTargets[] | {labels: .labels.job, health, lastError}' "$work/targets.json" 2>/dev/null | head -20
    fail "Prometheus over mutual TLS" "$work/prom.log"
  fi
  kill "$prom"
else
  skip "Prometheus over TLS: prometheus is not installed (Debian package prometheus)"
fi
kill "$spid"

echo "== off loopback: who may listen how"
# expect_refused <what> <message> <options...>: serve must exit 2 (usage;
# $want_rc if set) at start.
expect_refused() {
  local what=$1 text=$2
  shift 2
  timeout 10 "$tool" serve "$@" >"$work/refused.log" 2>&1
  local rc=$?
  if [[ $rc == "${want_rc:-2}" ]] && grep -q -- "$text" "$work/refused.log"; then
    pass "$what: refused (exit $rc)"
  else
    fail "$what: exit $rc" "$work/refused.log"
  fi
}
expect_refused "0.0.0.0 without authentication" "without authentication" --listen 0.0.0.0:0
expect_refused "0.0.0.0 with a token over plain HTTP" "clear text" --listen 0.0.0.0:0 --token-file "$work/token"
# --insecure-listen opts out of authentication; it cannot make a clear-text token safe (issue
# 38, finding 6: the chart rendered exactly this).
expect_refused "0.0.0.0 with --insecure-listen and a token over plain HTTP" "clear text" --listen 0.0.0.0:0 \
  --insecure-listen --token-file "$work/token"
expect_refused "0.0.0.0 with TLS and no token or client CA" "without authentication" --listen 0.0.0.0:0 \
  --tls-cert-file "$work/server.pem" --tls-key-file "$work/server.key"
expect_refused "--tls-cert-file without --tls-key-file" "go together" --tls-cert-file "$work/server.pem"
want_rc=9 expect_refused "a missing certificate file (an I/O error)" "--tls-cert-file" --listen 127.0.0.1:0 \
  --tls-cert-file "$work/none.pem" --tls-key-file "$work/server.key"
e2e_finish
