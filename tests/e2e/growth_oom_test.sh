#!/usr/bin/env bash
# `watch --report` through a real OOM kill (issue 25): testdata/growthtarget
# leaks 16 MiB/s (main.leakAlloc, kept forever) beside its churning batch,
# cache and sawtooth, in a cgroup v1 memory cgroup limited to 200 MB, until
# the kernel kills it. watch captures it every 500 ms with --report, and the
# report it writes beside the profiles when the kill ends the target must:
#   - name main.leakAlloc first, as STEADY GROWTH, at its true rate within
#     10% (the cgroup's own time base, not sampling, limits it: rate 1);
#   - say where the memory outside the profile went: /gc/heap/live:bytes,
#     RSS and the cgroup's usage all grew, and the profile explains each
#     share (0.5 to 1.5: the profile and the runtime's count describe the
#     same heap at instants up to a step apart; RSS and the cgroup also
#     hold the runtime's own overhead);
#   - forecast the cgroup's limit (200 MB) at the present slope, and the
#     kill confirm it: the kill's time, as watch.jsonl records the end,
#     lies within one capture interval (500 ms) of the forecast.
# Skipped without root or without the cgroup v1 memory controller.
#
#   bash tests/e2e/growth_oom_test.sh <path-to-goheap2pprof> <path-to-profdiff>
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool"
e2e_require_command jq "needs jq (scripts/install-deps.sh installs it)"
e2e_require_command perl "perl is not installed"
e2e_require_go
e2e_make_work growth_oom

v1=/sys/fs/cgroup/memory
if [[ $(id -u) != 0 ]]; then
  skip "watch --report OOM: needs root to create a memory cgroup"
  e2e_finish
elif [[ ! -w $v1/cgroup.procs || ! -f $v1/memory.limit_in_bytes ]]; then
  skip "watch --report OOM: no cgroup v1 memory controller mounted at $v1"
  e2e_finish
fi

target=$work/bin/growthtarget
e2e_go_build growthtarget "$target"
leak_rate=$((16 << 20))          # bytes per second
true_rate=$((leak_rate * 3600))  # bytes per hour
every_ms=500

cg=$v1/$(e2e_cgroup_name v1)
cleanup() {
  e2e_stop_pids -9
  # The cgroup is empty once its processes are gone; give the kernel a moment.
  for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg" 2>/dev/null && break; sleep 0.2; done
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir "$cg"
echo 200M >"$cg/memory.limit_in_bytes"
# Without swap accounting the target could swap instead of being killed.
echo 0 >"$cg/memory.swappiness" 2>/dev/null
[[ -f $cg/memory.memsw.limit_in_bytes ]] && echo 200M >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null

# The target joins the cgroup under a perl parent that does not reap it, so
# that watch reads its exit status (as watch_test.sh's grower).
dir=$work/watch
mkdir -p "$dir"
e2e_start "$work/target.out" "$work/target.err" perl -e '
  my $procs = shift @ARGV;
  my $pid = fork();
  if ($pid == 0) {
    open(my $f, ">>", $procs) or die "cannot join $procs: $!";
    print $f "$$\n";
    close($f) or die "cannot join $procs: $!";
    exec(@ARGV) or die "exec: $!";
  }
  $SIG{TERM} = sub { kill("KILL", $pid); waitpid($pid, 0); exit 0 };
  sleep 600;' "$cg/cgroup.procs" "$target" -rate 1 -leak-rate "$leak_rate"
gpid=""
for _ in $(seq 100); do
  gpid=$(awk '/^READY/ {print $2}' "$work/target.out" 2>/dev/null)
  [[ -n $gpid ]] && break
  sleep 0.1
done
if [[ -z $gpid ]]; then
  fail "watch --report OOM: the target did not start" "$work/target.err"
  e2e_finish
fi

"$tool" watch "$gpid" -o "$dir" --every "${every_ms}ms" --poll 100ms --report \
  >"$dir/watch.out" 2>"$dir/watch.err" &
e2e_wait_exit $! 60
jsonl=$dir/watch.jsonl
end=$(jq -c 'select(.event == "exit")' "$jsonl" 2>/dev/null)
if ((rc == 0)) && [[ $(jq -r .oom_kill_rose <<<"$end") == true && $(jq -r .signal <<<"$end") == 9 ]]; then
  pass "the target was OOM-killed and watch exited 0: $(jq -r .text <<<"$end")"
else
  fail "watch exit $rc; end record: $end" "$dir/watch.err"
fi

report=$dir/growthtarget-$gpid-growth.json
if [[ ! -f $report || ! -f ${report%.json}.txt ]]; then
  fail "no growth report beside the profiles" "$dir/watch.err"
  e2e_finish
fi
echo "    $(basename "${report%.json}.txt"):"
sed 's/^/      /' "${report%.json}.txt" | head -n 24

leak=$(jq -c '.sites[0]' "$report")
if [[ $(jq -r '.stack[0]' <<<"$leak") == "main.leakAlloc "* && $(jq -r .class <<<"$leak") == "STEADY GROWTH" ]] &&
  jq -e -n "($(jq .slope_bytes_per_hour <<<"$leak") - $true_rate | fabs) <= $true_rate * 0.10" >/dev/null; then
  pass "the report names main.leakAlloc first, STEADY GROWTH at $(jq .slope_bytes_per_hour <<<"$leak") B/h over $(jq .snapshots "$report") profiles"
else
  fail "first site: $leak"
fi

# The header's totals: each outside quantity grew, and the profile explains
# a plausible share of it.
for what in heap_live rss cgroup; do
  t=$(jq -c ".totals.$what" "$report")
  if jq -e '.change > 0 and .profile_explains >= 0.5 and .profile_explains <= 1.5' <<<"$t" >/dev/null; then
    pass "$what grew by $(jq .change <<<"$t") B; the profile explains $(jq .profile_explains <<<"$t") of it"
  else
    fail "$what: $t"
  fi
done

# The forecast of the limit against the kill. The end record's time is when
# watch saw the end (within --poll 100ms of it).
limit_at=$(jq -r '.totals.cgroup.limit_at_nanos' "$report")
limit=$(jq -r '.totals.cgroup.limit' "$report")
end_time=$(jq -r .time <<<"$end")
end_ns=$(date -u -d "$end_time" +%s%N 2>/dev/null)
if [[ $limit == 209715200 && $limit_at =~ ^[0-9]+$ && -n $end_ns ]]; then
  error_ms=$(((end_ns - limit_at) / 1000000))
  if ((error_ms >= -every_ms && error_ms <= every_ms)); then
    pass "the limit forecast ($(jq -r '.totals.cgroup.hours_to_limit * 3600' "$report") s ahead) is confirmed by the kill within ${every_ms} ms: ${error_ms} ms"
  else
    fail "the kill came ${error_ms} ms after the forecast (more than ${every_ms} ms off)"
  fi
else
  fail "no forecast: limit $limit, limit_at_nanos $limit_at, end time $end_time"
fi

e2e_finish
