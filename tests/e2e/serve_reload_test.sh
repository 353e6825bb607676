#!/usr/bin/env bash
# `goheap2pprof serve` reloads its token and TLS files on SIGHUP, and
# checks client certificates' names (issue 38, the reviewer's gaps):
#  - the token file rotated and SIGHUP sent: the old token gets 401, the
#    new one 200, and a keep-alive connection opened before stays open;
#  - the certificate rotated and SIGHUP sent: new handshakes get the new
#    certificate, a TLS connection opened before keeps working; a reload
#    that fails (a broken certificate file) keeps the certificate loaded
#    before and is logged;
#  - --tls-client-allowed-name: a client certificate of the trusted CA that
#    carries an allowed name (subjectAltName DNS, or subject CN) is
#    accepted, one without is refused in the handshake.
# Certificates are made here with the openssl command.
#
#   bash tests/e2e/serve_reload_test.sh <goheap2pprof> <profdiff>
set -u
source "$(dirname "$0")/lib.sh"
e2e_init "$@"
e2e_require_command curl "needs curl"
e2e_require_command openssl "needs the openssl command"
e2e_require_command python3 "needs python3 for a keep-alive client"
e2e_make_work serve-reload
trap 'e2e_stop_pids -9' EXIT

source "$(dirname "$0")/serve_lib.sh"
server_ext="subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth"
if ! { make_ca ca && make_cert server-a ca "$server_ext" && make_cert server-b ca "$server_ext" &&
  make_cert scraper ca "subjectAltName=DNS:scraper.example
extendedKeyUsage=clientAuth" &&
  make_cert collector ca "extendedKeyUsage=clientAuth" &&
  make_cert stranger ca "subjectAltName=DNS:stranger.example
extendedKeyUsage=clientAuth"; }; then
  fail "make test certificates" "$work/openssl.log"
  e2e_finish
fi

# start <name> <serve options...>: sets addr, port and spid.
start() {
  local name=$1
  shift
  e2e_start "$work/$name.out" "$work/$name.log" "$tool" serve --listen 127.0.0.1:0 "$@"
  spid=$target_pid
  if ! e2e_wait_for_line "$work/$name.log" "listening on" "$spid" 10; then
    fail "serve $name did not start" "$work/$name.log"
    e2e_finish
  fi
  addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$work/$name.log" | head -n 1)
  port=${addr##*:}
}

# hup <name> <log pattern>: SIGHUP, then waits for the reload's log line.
hup() {
  local n
  n=$(grep -c "SIGHUP" "$work/$1.log")
  kill -HUP "$spid"
  for _ in $(seq 1 50); do
    (($(grep -c "SIGHUP" "$work/$1.log") > n)) && break
    sleep 0.1
  done
  grep "SIGHUP" "$work/$1.log" | tail -n 1 | grep -q "$2"
}

# keep_alive <scheme> <token> <new token>: a client that asks /metrics with
# token, prints FIRST <status>, waits for $work/go, then asks again on the
# same connection with the new token and prints SECOND <status> <same|new>.
keep_alive() {
  python3 - "$@" "$port" "$work/ca.pem" "$work/go" <<'EOF'
import http.client, os, ssl, sys, time
scheme, old, new, port, ca, go = sys.argv[1:7]
if scheme == "https":
    c = http.client.HTTPSConnection("127.0.0.1", int(port), context=ssl.create_default_context(cafile=ca))
else:
    c = http.client.HTTPConnection("127.0.0.1", int(port))
def ask(token):
    c.request("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    r.read()
    return r.status
print("FIRST", ask(old), flush=True)
sock = c.sock
while not os.path.exists(go):
    time.sleep(0.1)
status = ask(new)
print("SECOND", status, "same" if c.sock is sock else "new", flush=True)
EOF
}

echo "== the token file, reloaded on SIGHUP"
printf 'old-token-0123456789\n' >"$work/token"
start token --token-file "$work/token"
rm -f "$work/go"
e2e_start "$work/keep.out" "$work/keep.err" keep_alive http old-token-0123456789 new-token-0123456789
keep_pid=$target_pid
e2e_wait_for_line "$work/keep.out" "^FIRST" "$keep_pid" 10 || fail "keep-alive client" "$work/keep.err"
printf 'new-token-0123456789\n' >"$work/token"
hup token "reloaded" && pass "SIGHUP: the reload is logged" || fail "SIGHUP: no reload logged" "$work/token.log"
old=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer old-token-0123456789" "http://$addr/metrics")
new=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer new-token-0123456789" "http://$addr/metrics")
[[ $old == 401 && $new == 200 ]] && pass "after the reload: the old token $old, the new one $new" ||
  fail "after the reload: old token $old (want 401), new token $new (want 200)"
touch "$work/go"
wait "$keep_pid"
if grep -q "FIRST 200" "$work/keep.out" && grep -q "SECOND 200 same" "$work/keep.out"; then
  pass "a keep-alive connection opened before the reload stays open: $(tr '\n' ' ' <"$work/keep.out")"
else
  fail "the keep-alive connection: $(tr '\n' ' ' <"$work/keep.out")" "$work/keep.err"
fi
kill "$spid"

echo "== the certificate, reloaded on SIGHUP"
cp "$work/server-a.pem" "$work/cert.pem"
cp "$work/server-a.key" "$work/cert.key"
printf 'new-token-0123456789\n' >"$work/token"
start tls --tls-cert-file "$work/cert.pem" --tls-key-file "$work/cert.key" --token-file "$work/token"
subject() {
  openssl s_client -connect "127.0.0.1:$port" </dev/null 2>/dev/null | openssl x509 -noout -subject 2>/dev/null
}
before=$(subject)
rm -f "$work/go"
e2e_start "$work/tkeep.out" "$work/tkeep.err" keep_alive https new-token-0123456789 new-token-0123456789
keep_pid=$target_pid
e2e_wait_for_line "$work/tkeep.out" "^FIRST" "$keep_pid" 10 || fail "TLS keep-alive client" "$work/tkeep.err"
cp "$work/server-b.pem" "$work/cert.pem"
cp "$work/server-b.key" "$work/cert.key"
hup tls "reloaded" || fail "SIGHUP: no reload logged" "$work/tls.log"
after=$(subject)
if [[ $before == *server-a* && $after == *server-b* ]]; then
  pass "new handshakes get the new certificate ($before -> $after)"
else
  fail "certificate before and after the reload: '$before', '$after'"
fi
touch "$work/go"
wait "$keep_pid"
grep -q "SECOND 200 same" "$work/tkeep.out" &&
  pass "a TLS connection opened before the reload stays open: $(tr '\n' ' ' <"$work/tkeep.out")" ||
  fail "the TLS keep-alive connection: $(tr '\n' ' ' <"$work/tkeep.out")" "$work/tkeep.err"
echo "not a certificate" >"$work/cert.pem"
if hup tls "reload failed"; then
  pass "a broken certificate file: $(grep 'SIGHUP' "$work/tls.log" | tail -n 1 | cut -c1-160)"
else
  fail "a broken certificate file: no failure logged" "$work/tls.log"
fi
still=$(subject)
got=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/ca.pem" \
  -H "Authorization: Bearer new-token-0123456789" "https://127.0.0.1:$port/metrics")
[[ $still == *server-b* && $got == 200 ]] && pass "after the failed reload: still server-b, /metrics $got" ||
  fail "after the failed reload: '$still', /metrics $got"
kill "$spid"

echo "== mutual TLS: an allow-list of client names"
start mtls --tls-cert-file "$work/server-a.pem" --tls-key-file "$work/server-a.key" \
  --tls-client-ca-file "$work/ca.pem" --tls-client-allowed-name scraper.example \
  --tls-client-allowed-name collector
for case in "scraper 200 subjectAltName DNS:scraper.example" "collector 200 subject CN=collector" \
  "stranger 000 DNS:stranger.example, not allowed"; do
  set -- $case
  who=$1 want=$2
  shift 2
  got=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/ca.pem" --cert "$work/$who.pem" \
    --key "$work/$who.key" "https://127.0.0.1:$port/metrics")
  [[ $got == "$want" ]] && pass "client certificate with $*: $got" || fail "client certificate with $*: $got, want $want"
done
e2e_finish
