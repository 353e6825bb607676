# Sourced by the bench scripts: what they share.

# bench_stop <pid>...: kills each process given (empty arguments are
# skipped, so a pid variable not yet set can be passed) and reaps it.
bench_stop() {
  local pid
  for pid in "$@"; do
    [[ -n $pid ]] || continue
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
}
