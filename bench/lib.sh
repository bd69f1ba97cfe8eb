# Helpers shared by bench/run.sh, bench/slash.sh and bench/wake.sh (sourced, not run).

log() { printf '\n=== %s  %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# free_port prints a loopback port nobody listens on.
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$(( 20000 + RANDOM % 12000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "no free port" >&2; return 1
}

# wait_http <url> <what> <pid>: until url answers 2xx, or pid exits (30 s at most).
wait_http() {
  for _ in $(seq 1 150); do
    if curl -sf -o /dev/null "$1"; then return 0; fi
    if ! kill -0 "$3" 2>/dev/null; then echo "$2 exited during startup" >&2; return 1; fi
    sleep 0.2
  done
  echo "$2 did not become ready at $1" >&2; return 1
}

# busy_ticks: CPU ticks spent by anything on the machine so far.
busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }

# wait_quiet <secs>: wait up to secs for the machine to be quiet (under 15 % busy over
# 2 s); prints the busy % seen last. Needs $hz (clock ticks per second).
wait_quiet() {
  local deadline=$(( $(date +%s) + $1 )) b0 b1 pct
  while :; do
    b0=$(busy_ticks); sleep 2; b1=$(busy_ticks)
    pct=$(( 100 * (b1 - b0) / (2 * hz * $(nproc)) ))
    if (( pct < 15 )) || (( $(date +%s) >= deadline )); then echo "$pct"; return; fi
  done
}

# run_inner_under_pg <script>: run the inner half of a benchmark script under a throwaway
# PostgreSQL with fsync ON, then print $OUT/summary.md if it succeeded; exits with the
# inner half's status (the outer halves of run.sh, slash.sh and wake.sh end here).
run_inner_under_pg() {
  local rc
  set +e
  go run ./internal/tools/withpg --fsync -- "$1"
  rc=$?
  set -e
  if [[ $rc -eq 0 ]]; then
    log "summary ($OUT/summary.md)"
    cat "$OUT/summary.md"
  fi
  exit $rc
}
