# Shared pieces of the end-to-end tests of `goheap2pprof serve`
# (tests/e2e/serve*_test.sh). Not a test: sourced after lib.sh and
# e2e_init, e2e_make_work; uses tool and work.
#
#   start_serve <name> [VAR=value...] -- [serve options...]
#   status <url> [curl options...]
#   expect_status <what> <want> <body-substring> <url> [curl options...]
#   make_ca <name>; make_cert <name> <ca> <extensions>
#   same_as_own <what> <ours-url> <own-url>

# start_serve <name> [VAR=value...] -- [serve options...]: starts a server
# on a kernel-chosen loopback port; sets addr (host:port) and serve_pid.
start_serve() {
  local name=$1 envs=()
  shift
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift
  e2e_start "$work/$name.out" "$work/$name.log" env "${envs[@]}" "$tool" serve \
    --listen 127.0.0.1:0 -v --discover-interval 1 "$@"
  serve_pid=$target_pid
  if ! e2e_wait_for_line "$work/$name.log" "listening on" "$serve_pid" 10; then
    fail "serve $name did not start" "$work/$name.log"
    exit 1
  fi
  addr=$(sed -n 's/.*listening on //p' "$work/$name.log" | head -n 1)
}

# make_ca <name>; make_cert <name> <ca> <extensions>: test certificates
# made with the openssl command, $work/<name>.pem and .key, subject
# CN=<name> (a CA's: "goheap2pprof test <name>"); openssl's messages go to
# $work/openssl.log.
make_ca() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=goheap2pprof test $1" \
    -keyout "$work/$1.key" -out "$work/$1.pem" 2>>"$work/openssl.log"
}
make_cert() {
  printf '%s\n' "$3" >"$work/$1.ext"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$work/$1.key" -out "$work/$1.csr" \
    2>>"$work/openssl.log" &&
    openssl x509 -req -in "$work/$1.csr" -CA "$work/$2.pem" -CAkey "$work/$2.key" -CAcreateserial \
      -days 2 -extfile "$work/$1.ext" -out "$work/$1.pem" 2>>"$work/openssl.log"
}

# status <url> [curl options...]: prints the HTTP status; body in $work/body.
status() {
  local url=$1
  shift
  curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' "$@" "$url"
}

# expect_status <what> <want> <body-substring> <url> [curl options...]
expect_status() {
  local what=$1 want=$2 text=$3 url=$4 got
  shift 4
  got=$(status "$url" "$@")
  if [[ $got == "$want" ]] && grep -qF -- "$text" "$work/body"; then
    pass "$what: $want"
  else
    echo "    got $got: $(head -c 300 "$work/body")"
    fail "$what: want $want with \"$text\""
  fi
}

# same_as_own <what> <ours-url> <own-url>: ours first, then the target's
# own, compared with profdiff; retried twice, because the target's own HTTP
# handling may sample an allocation into a new (all-zero) bucket between
# the two requests.
same_as_own() {
  local what=$1 ours=$2 own=$3 attempt
  for attempt in 1 2 3; do
    curl -s -o "$work/ours.pb.gz" "$ours" && curl -s -o "$work/own.pb.gz" "$own" &&
      "$profdiff" "$work/own.pb.gz" "$work/ours.pb.gz" >"$work/diff.txt" 2>&1 && {
      pass "$what (attempt $attempt)"
      return
    }
  done
  fail "$what" "$work/diff.txt"
}
