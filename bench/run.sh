#!/usr/bin/env bash
# The whole benchmark comparison in one command (docs/benchmarks.md explains it):
#
#   bench/run.sh
#
# builds bin/entityd and the load tool, starts a throwaway PostgreSQL with fsync ON
# (internal/tools/withpg --fsync), starts entityd on it and the in-memory Node reference
# Durable Streams server (bench/reference, npm ci), then per repetition runs
#   send at 1/16/64 clients, pgbench at 1/16/64 clients on the same cluster,
#   append, longpoll and catchup against entityd and against the reference,
# stops everything and prints a markdown summary (also in $OUT/summary.md).
#
# Environment (defaults): REPS=3  DURATION=10s  WARMUP=2s  CLIENTS="1 16 64"
#   PGBENCH_SECS=10  LP_ROUNDS=500  CATCHUP_MESSAGES=100000  LONG_POLL_TIMEOUT_MS=20000
#   OUT=bench/results/<UTC timestamp>
#   WAIT_QUIET=<secs>  before each repetition wait up to that long for the machine to be
#                 quiet (under 15% CPU busy over 2 s while the benchmark is idle); on a
#                 shared machine this keeps other work out of the numbers (each benchmark
#                 also waits up to min(WAIT_QUIET, 60) s)
#   REV=<commit>  build entityd from that committed revision (git archive) instead of
#                 the working tree (useful when the tree holds unfinished work)
# Everything runs on loopback of this machine and every loop is bounded in time/count.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

REPS="${REPS:-3}"
DURATION="${DURATION:-10s}"
WARMUP="${WARMUP:-2s}"
CLIENTS="${CLIENTS:-1 16 64}"
PGBENCH_SECS="${PGBENCH_SECS:-10}"
LP_ROUNDS="${LP_ROUNDS:-500}"
CATCHUP_MESSAGES="${CATCHUP_MESSAGES:-100000}"
LONG_POLL_TIMEOUT_MS="${LONG_POLL_TIMEOUT_MS:-20000}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"


if [[ -z "${ENTITYD_BENCH_INNER:-}" ]]; then
  # Outer half: build, install the reference, then run the inner half under withpg.
  OUT="${OUT:-bench/results/$(date -u +%Y%m%d-%H%M%S)}"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  work="$(mktemp -d "${TMPDIR:-/tmp}/entityd-bench.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  go build -o bin/entityd-bench ./cmd/entityd-bench
  if [[ -n "${REV:-}" ]]; then
    # Measure a committed revision, whatever the working tree holds.
    log "building entityd at $REV (git archive) and bin/entityd-bench"
    mkdir -p "$work/src"
    git archive "$REV" | tar -x -C "$work/src"
    (cd "$work/src" && go build -o "$work/entityd" ./cmd/server)
    ENTITYD_DESC="$(git rev-parse --short "$REV") (committed revision, built with git archive)"
  else
    log "building bin/entityd and bin/entityd-bench"
    make --no-print-directory build
    cp bin/entityd "$work/"
    ENTITYD_DESC="$(git describe --always --dirty 2>/dev/null || echo unknown) (working tree)"
  fi
  # Private copies: a rebuild of bin/ during the run must not change what is measured.
  cp bin/entityd-bench "$work/"
  log "installing the Node reference server (npm ci in bench/reference)"
  (cd bench/reference && npm ci --no-audit --no-fund --loglevel=error)
  export ENTITYD_BENCH_INNER=1 ENTITYD_BENCH_WORK="$work" ENTITYD_BENCH_OUT="$OUT" ENTITYD_DESC
  export WAIT_QUIET="${WAIT_QUIET:-}" REPS DURATION WARMUP CLIENTS PGBENCH_SECS LP_ROUNDS CATCHUP_MESSAGES LONG_POLL_TIMEOUT_MS PGBIN
  run_inner_under_pg "$here/run.sh"
fi

# Inner half: PG* and ENTITYD_TEST_DATABASE_URL come from withpg.
work="$ENTITYD_BENCH_WORK"
OUT="$ENTITYD_BENCH_OUT"
bench="$work/entityd-bench"
: "${PGPORT:?run bench/run.sh, not this half directly}"


entityd_pid=""
ref_pid=""
cleanup() {
  [[ -n "$entityd_pid" ]] && kill "$entityd_pid" 2>/dev/null && wait "$entityd_pid" 2>/dev/null
  [[ -n "$ref_pid" ]] && kill "$ref_pid" 2>/dev/null && wait "$ref_pid" 2>/dev/null
  return 0
}
trap cleanup EXIT


# --- machine facts
log "recording the machine"
{
  machine_facts "$work"
  echo "node: $(node --version)"
  echo "entityd: $ENTITYD_DESC"
  echo "reference: @durable-streams/server $(node -p "require('$root/bench/reference/node_modules/@durable-streams/server/package.json').version"), in memory"
  echo "long-poll timeout: ${LONG_POLL_TIMEOUT_MS} ms on both servers"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "runs: REPS=$REPS DURATION=$DURATION WARMUP=$WARMUP CLIENTS=$CLIENTS PGBENCH_SECS=$PGBENCH_SECS LP_ROUNDS=$LP_ROUNDS CATCHUP_MESSAGES=$CATCHUP_MESSAGES"
  echo "cpu sharing: entityd, PostgreSQL, the Node reference and the load generator all run on these $(nproc) cores (no pinning)"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt" >&2

# --- servers
log "starting entityd"
"$PGBIN/psql" -qAtX -d postgres -c "CREATE DATABASE entityd_bench" >/dev/null
eport="$(free_port)"
DATABASE_URL="postgres://${PGUSER:-postgres}@127.0.0.1:${PGPORT}/entityd_bench?sslmode=disable" \
  "$work/entityd" --addr "127.0.0.1:$eport" --no-demo --log-level warn \
  --long-poll-timeout "${LONG_POLL_TIMEOUT_MS}ms" >"$OUT/entityd.log" 2>&1 &
entityd_pid=$!
E="http://127.0.0.1:$eport"
wait_http "$E/_electric/health" entityd "$entityd_pid"

log "starting the Node reference server"
rport="$(free_port)"
node "$root/bench/reference/serve.mjs" --port "$rport" --long-poll-ms "$LONG_POLL_TIMEOUT_MS" >"$OUT/reference.log" 2>&1 &
ref_pid=$!
R="http://127.0.0.1:$rport"
for _ in $(seq 1 100); do grep -q listening "$OUT/reference.log" && break; kill -0 "$ref_pid" || exit 1; sleep 0.1; done
grep -q listening "$OUT/reference.log" || { echo "reference server did not start" >&2; exit 1; }

# --- CPU accounting: who used the cores during each benchmark. The machine may be
# shared (other builds, tests); "other" is every tick not spent by entityd, the
# reference, this cluster's PostgreSQL processes or this script's children (the load
# generator, pgbench), so a disturbed run shows up in the results.
pm_pid="$(head -1 "$("$PGBIN/psql" -qAtX -d postgres -c 'show data_directory')/postmaster.pid")"
hz="$(getconf CLK_TCK)"
ticks() { awk '{print $14+$15+$16+$17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
pg_ticks() { local s p; s=$(ticks "$pm_pid"); for p in $(pgrep -P "$pm_pid"); do s=$((s + $(ticks "$p"))); done; echo "$s"; }
measure() { # measure <json file> <command...>: run the command, write its CPU split
  local out="$1"; shift
  if [[ -n "${WAIT_QUIET:-}" ]]; then
    echo "quiet: $(wait_quiet "$(( WAIT_QUIET < 60 ? WAIT_QUIET : 60 ))")% busy before start" >&2
  fi
  local b0 e0 r0 p0 s0 w0 b1 e1 r1 p1 s1 w1
  b0=$(busy_ticks); e0=$(ticks "$entityd_pid"); r0=$(ticks "$ref_pid"); p0=$(pg_ticks); s0=$(ticks $$); w0=$(date +%s.%N)
  "$@"
  b1=$(busy_ticks); e1=$(ticks "$entityd_pid"); r1=$(ticks "$ref_pid"); p1=$(pg_ticks); s1=$(ticks $$); w1=$(date +%s.%N)
  awk -v b=$((b1-b0)) -v e=$((e1-e0)) -v r=$((r1-r0)) -v p=$((p1-p0)) -v s=$((s1-s0)) -v w0="$w0" -v w1="$w1" \
      -v n="$(nproc)" -v hz="$hz" 'BEGIN { c = (w1-w0)*n*hz / 100;
      printf "{\"wall_s\":%.2f,\"cores\":%d,\"busy_pct\":%.1f,\"entityd_pct\":%.1f,\"reference_pct\":%.1f,\"postgres_pct\":%.1f,\"loadgen_pct\":%.1f,\"other_pct\":%.1f}\n",
        w1-w0, n, b/c, e/c, r/c, p/c, s/c, (b-e-r-p-s)/c }' >"$out"
  echo "cpu: $(cat "$out")" >&2
}


# --- repetitions
for rep in $(seq 1 "$REPS"); do
  d="$OUT/rep$rep"
  mkdir -p "$d"
  if [[ -n "${WAIT_QUIET:-}" ]]; then
    log "rep $rep/$REPS: waiting up to ${WAIT_QUIET}s for a quiet machine"
    t0=$(date +%s); pct=$(wait_quiet "$WAIT_QUIET")
    echo "waited $(( $(date +%s) - t0 ))s for a quiet machine; CPU busy then: ${pct}%" | tee "$d/quiet.txt" >&2
  fi
  { echo "loadavg: $(cat /proc/loadavg)"; top -b -n 1 -w 160 | head -20; } >"$d/machine-before.txt"
  for c in $CLIENTS; do
    log "rep $rep/$REPS: send c=$c"
    measure "$d/cpu-send-c$c.json" "$bench" send -url "$E" -c "$c" -d "$DURATION" -warmup "$WARMUP" -label entityd -out "$d/send-c$c.json"
  done
  log "rep $rep/$REPS: pgbench"
  measure "$d/cpu-pgbench.json" env PGBENCH_DB=entityd_pgbench "$here/pgbench.sh" -c "$CLIENTS" -T "$PGBENCH_SECS" -j 2 -o "$d"
  for target in entityd reference; do
    url="$E"; [[ $target == reference ]] && url="$R"
    log "rep $rep/$REPS: append → $target"
    measure "$d/cpu-append-$target.json" "$bench" append -url "$url" -d "$DURATION" -warmup "$WARMUP" -label "$target" -out "$d/append-$target.json"
  done
  for target in entityd reference; do
    url="$E"; [[ $target == reference ]] && url="$R"
    log "rep $rep/$REPS: longpoll → $target"
    measure "$d/cpu-longpoll-$target.json" "$bench" longpoll -url "$url" -n "$LP_ROUNDS" -label "$target" -out "$d/longpoll-$target.json"
  done
  for target in entityd reference; do
    url="$E"; [[ $target == reference ]] && url="$R"
    log "rep $rep/$REPS: catchup → $target"
    measure "$d/cpu-catchup-$target.json" "$bench" catchup -url "$url" -messages "$CATCHUP_MESSAGES" -label "$target" -out "$d/catchup-$target.json"
  done
  { echo "loadavg: $(cat /proc/loadavg)"; top -b -n 1 -w 160 | head -20; } >"$d/machine-after.txt"
done

log "stopping the servers"
cleanup
entityd_pid=""; ref_pid=""
"$bench" summary -dir "$OUT" -clients "$(echo "$CLIENTS" | tr ' ' ',')" >"$OUT/summary.md"
