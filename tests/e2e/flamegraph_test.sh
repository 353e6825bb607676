#!/usr/bin/env bash
# --format flamegraph and serve's /pid/N/flamegraph, checked against the
# target's own profile and rendered in headless Chromium (driven over the
# DevTools protocol by flamegraph_browser.py):
#
# (1) The oracle target (rate 1, quiescent after READY): the page of its
#     inuse_space and inuse_objects has the total and every drawn frame's
#     value of the target's own heap profile, laid out widest first, end to
#     end (flamegraph_oracle.py); two captures give the same bytes; an
#     unknown --sample-index and --top are usage errors (exit 2).
# (2) The demo service's page (alloc_space) in Chromium: it loads with no console
#     message, exception, CSP report or dialog; the frames under the root,
#     and under a frame clicked to zoom, are as wide as their values say
#     within a pixel; a typed search highlights exactly the matching frames
#     and shows the widest matches' total; #zoom=...&search=... restores both.
# (3) serve: the index links /pid/N/flamegraph?sample_index=inuse_space; the
#     page comes as text/html with the page's Content-Security-Policy as a
#     header; a bad sample_index is 400 and an absent pid 404; the served
#     page passes (2) in Chromium too.
# (4) Hostile names (`</script><script>alert(1)</script>`, `"]]>&amp;<!--`,
#     ...) in a hand-made profile (unit test FlameGraphTest.
#     HostileNamesCannotLeaveTheirContext writes its page): Chromium runs
#     only the page's two scripts, opens no dialog, logs nothing, and shows
#     every name verbatim as text.
#
#   bash tests/e2e/flamegraph_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# Needs Go 1.26.8, python3, curl and chromium (scripts/install-deps.sh
# --test installs it); exit 77 when they are missing.
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
e2e_require_command python3 "needs python3 to drive Chromium"
e2e_require_command curl "needs curl"
e2e_require_command chromium "needs chromium for headless rendering (scripts/install-deps.sh installs it)"
e2e_require_go
source "$src/tests/e2e/serve_lib.sh"

e2e_make_work flamegraph
trap e2e_stop_pids EXIT
trap 'exit 1' INT TERM
here=$src/tests/e2e
browser() { timeout 120 python3 "$here/flamegraph_browser.py" chromium "$@"; }

# browser_case <what> <log> <args...>: runs the browser driver, PASS/FAIL on its exit.
browser_case() {
  local what=$1 log=$2
  shift 2
  if browser "$@" >"$log" 2>&1; then
    sed 's/^/    /' "$log"
    pass "$what"
  else
    fail "$what" "$log"
  fi
}

# (1) The oracle target.
e2e_build_oracle
dir=$work/oracle
mkdir -p "$dir"
e2e_start "$dir/target.out" "$dir/target.err" "$binary" -rate 1 -out "$dir/oracle.pb.gz"
oracle_pid=$target_pid
if ! e2e_wait_for_line "$dir/target.out" '^READY ' "$oracle_pid" 120; then
  fail "(1) the oracle target did not print READY" "$dir/target.err"
  e2e_finish
fi
"$profdiff" --aggregate-inuse "$dir/oracle.pb.gz" >"$dir/oracle.agg"
for idx in inuse_space:bytes inuse_objects:objects; do
  page=$dir/${idx%%:*}.html
  if ! "$tool" "$oracle_pid" --format flamegraph --sample-index "${idx%%:*}" -o "$page" \
    2>"$page.log"; then
    fail "(1) --format flamegraph --sample-index ${idx%%:*}" "$page.log"
    continue
  fi
  if python3 "$here/flamegraph_oracle.py" "$page" "$dir/oracle.agg" "${idx##*:}" >"$page.check"; then
    sed 's/^/    /' "$page.check"
    pass "(1) ${idx%%:*}: the page means what the target's own profile says"
  else
    fail "(1) ${idx%%:*}: the page against the target's own profile" "$page.check"
  fi
done
"$tool" "$oracle_pid" --format flamegraph -o "$dir/again.html" 2>/dev/null
if cmp -s "$dir/inuse_space.html" "$dir/again.html"; then
  pass "(1) two captures of the quiescent target give the same page, byte for byte"
else
  fail "(1) two captures of the quiescent target gave different pages"
fi
for bad in "--sample-index cpu" "--top 5"; do
  # shellcheck disable=SC2086 # the words are the options
  "$tool" "$oracle_pid" --format flamegraph $bad -o "$dir/bad.html" >"$dir/bad.log" 2>&1
  rc=$?
  if [[ $rc == 2 && ! -e $dir/bad.html ]]; then
    pass "(1) --format flamegraph $bad: usage error, no file"
  else
    fail "(1) --format flamegraph $bad: exit $rc (want 2)" "$dir/bad.log"
  fi
done
e2e_stop_pids

# (2) The demo service, in Chromium.
e2e_go_build demo "$work/bin/demo-service"
e2e_start "$work/demo.out" "$work/demo.err" "$work/bin/demo-service"
demo_pid=$target_pid
if ! e2e_wait_for_line "$work/demo.out" '^READY ' "$demo_pid" 60; then
  fail "(2) the demo service did not print READY" "$work/demo.err"
  e2e_finish
fi
# alloc_space: the zoom needs a frame narrower than the root with frames below it. The demo's
# inuse_space has two leaf sites and, under remember, fmt.Sprintf's strings, about one 512 KiB
# sample's worth, so in some runs no such frame (a CI run at -j2 drew none); its garbage, the
# string builder's buffers under renderPage, is most of alloc_space in every run.
if "$tool" "$demo_pid" --format flamegraph --sample-index alloc_space -o "$work/demo.html" \
  2>"$work/demo-cli.log"; then
  browser_case "(2) the demo's page in Chromium: loads clean, widths, zoom, search, fragment" \
    "$work/browser-file.log" check "file://$work/demo.html" --search 'main\.(renderPage|remember)'
else
  fail "(2) --format flamegraph of the demo" "$work/demo-cli.log"
fi

# (3) serve.
start_serve serve
url=http://$addr
for _ in $(seq 100); do
  curl -s "$url/" | grep -q "/pid/$demo_pid/flamegraph" && break
  sleep 0.1
done
if curl -s "$url/" | grep -qF "<a href=\"/pid/$demo_pid/flamegraph?sample_index=inuse_space\">flame graph</a>"; then
  pass "(3) the index links the demo's flame graph"
else
  fail "(3) the index does not link /pid/$demo_pid/flamegraph?sample_index=inuse_space"
fi
got=$(status "$url/pid/$demo_pid/flamegraph?sample_index=inuse_space")
csp=$(tr -d '\r' <"$work/headers" | sed -n 's/^[Cc]ontent-[Ss]ecurity-[Pp]olicy: //p')
meta=$(grep -o 'http-equiv="Content-Security-Policy" content="[^"]*"' "$work/body" | sed 's/.*content="//; s/"$//; s/&#39;/'"'"'/g')
if [[ $got == 200 ]] && grep -qi '^content-type: text/html; charset=utf-8' "$work/headers" &&
  [[ -n $meta && $csp == "$meta; frame-ancestors 'none'" ]] && grep -q 'id="types"' "$work/body"; then
  pass "(3) /pid/N/flamegraph: 200 text/html, the page's policy as a header, sample type links"
else
  echo "    status $got; header policy: $csp; meta policy: $meta"
  fail "(3) /pid/N/flamegraph answer"
fi
expect_status "(3) bad sample_index" 400 "invalid sample_index" \
  "$url/pid/$demo_pid/flamegraph?sample_index=cpu"
expect_status "(3) absent pid" 404 "no such process" "$url/pid/999999999/flamegraph"
browser_case "(3) the served page in Chromium: loads clean, widths, zoom, search, fragment" \
  "$work/browser-serve.log" check "$url/pid/$demo_pid/flamegraph?sample_index=alloc_space" \
  --search 'fmt\.'

# (4) Hostile names, from the unit test's hand-made profile.
unit=$bin/tests/unit_tests
if [[ ! -x $unit ]]; then
  skip "(4) hostile names: no $unit (build the unit_tests target)"
elif ! GOHEAP2PPROF_FLAMEGRAPH_HOSTILE_PAGE=$work/hostile.html "$unit" \
  --gtest_filter=FlameGraphTest.HostileNamesCannotLeaveTheirContext >"$work/hostile.log" 2>&1 ||
  [[ ! -s $work/hostile.html ]]; then
  fail "(4) the unit test did not write the hostile page" "$work/hostile.log"
else
  browser_case "(4) hostile names in Chromium: only the page's scripts run, names shown as text" \
    "$work/browser-hostile.log" hostile "file://$work/hostile.html" \
    '</script><script>alert(1)</script>' '"]]>&amp;<!--' '<img src=x onerror=alert(2)>' \
    "'\"><svg onload=alert(3)>"
fi
e2e_finish
