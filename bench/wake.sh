#!/usr/bin/env bash
# The "Entities in Go" wake benchmark (docs/benchmarks-wake.md explains it):
#
#   bench/wake.sh
#
# builds bin/entityd-bench, starts a throwaway PostgreSQL with fsync ON
# (internal/tools/withpg --fsync), then per repetition and mode creates a fresh database,
# starts `entityd-bench wake-server` on it (entityd + a recording no-op Go handler) and
# drives it with `entityd-bench wake-load` as a separate process:
#   latency     open loop, RATE sends/s (Poisson arrivals) over LAT_ENTITIES entities;
#               send → handler start p50/p99, exactly-once check
#   throughput  closed loop, CONC senders over TP_ENTITIES entities; messages/s through
#               send → no-op handler → acknowledgement, backlog, drain
# The CPU of the server, of PostgreSQL (postmaster + backends) and of the load generator
# is measured from /proc over each measurement window. Results: $OUT/rep<N>/*.json,
# $OUT/meta.txt and $OUT/summary.md (printed at the end).
#
# Environment (defaults): REPS=3  DURATION=20s  WARMUP=5s  RATE=500  ARRIVALS=poisson
#   LAT_ENTITIES=100  TP_ENTITIES=1000  CONC=64  MODES="latency throughput"
#   OUT=bench/results/<UTC date>-wake   (an existing directory gets a -<time> suffix)
#   WAIT_QUIET=<secs>  before each repetition wait up to that long for the machine to be
#                 quiet (under 15% CPU busy over 2 s); each mode also waits up to
#                 min(WAIT_QUIET, 60) s
#   REV=<commit>  build entityd-bench (and so the server it embeds) from that committed
#                 revision with git archive, not from the working tree
#   PROFILE=1     also save a CPU profile of the server over each window (pprof)
#   ANALYZE=0     do not ANALYZE the fresh database after spawning the entities (by default
#                 it is analyzed, as autovacuum would have done on a server running for a
#                 minute; without it, whether autovacuum happens to run during the short
#                 benchmark decides PostgreSQL's plans and the throughput)
#   SERVER_FLAGS  extra wake-server flags (e.g. "-commit-lanes 1")
# Everything runs on loopback of this machine and every loop is bounded in time/count.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

REPS="${REPS:-3}"
DURATION="${DURATION:-20s}"
WARMUP="${WARMUP:-5s}"
RATE="${RATE:-500}"
ARRIVALS="${ARRIVALS:-poisson}"
LAT_ENTITIES="${LAT_ENTITIES:-100}"
TP_ENTITIES="${TP_ENTITIES:-1000}"
CONC="${CONC:-64}"
MODES="${MODES:-latency throughput}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"


if [[ -z "${ENTITYD_WAKE_INNER:-}" ]]; then
  # Outer half: build, then run the inner half under withpg.
  if [[ -z "${OUT:-}" ]]; then
    OUT="bench/results/$(date -u +%Y-%m-%d)-wake"
    [[ -e "$OUT" ]] && OUT="$OUT-$(date -u +%H%M%S)"
  fi
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  work="$(mktemp -d "${TMPDIR:-/tmp}/entityd-wake.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  if [[ -n "${REV:-}" ]]; then
    log "building entityd-bench at $REV (git archive)"
    mkdir -p "$work/src"
    git archive "$REV" | tar -x -C "$work/src"
    (cd "$work/src" && go build -o "$work/entityd-bench" ./cmd/entityd-bench)
    DESC="$(git rev-parse --short "$REV") (committed revision, built with git archive)"
  else
    log "building entityd-bench from the working tree"
    go build -o "$work/entityd-bench" ./cmd/entityd-bench
    DESC="$(git describe --always --dirty 2>/dev/null || echo unknown) (working tree)"
  fi
  export ENTITYD_WAKE_INNER=1 ENTITYD_WAKE_WORK="$work" ENTITYD_WAKE_OUT="$OUT" ENTITYD_WAKE_DESC="$DESC"
  export WAIT_QUIET="${WAIT_QUIET:-}" PROFILE="${PROFILE:-}" SERVER_FLAGS="${SERVER_FLAGS:-}" ANALYZE="${ANALYZE:-1}"
  export REPS DURATION WARMUP RATE ARRIVALS LAT_ENTITIES TP_ENTITIES CONC MODES PGBIN
  run_inner_under_pg "$here/wake.sh"
fi

# Inner half: PG* and ENTITYD_TEST_DATABASE_URL come from withpg.
work="$ENTITYD_WAKE_WORK"
OUT="$ENTITYD_WAKE_OUT"
bench="$work/entityd-bench"
: "${PGPORT:?run bench/wake.sh, not this half directly}"

server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    server_pid=""
  fi
  return 0
}
trap cleanup EXIT

pm_pid="$(head -1 "$("$PGBIN/psql" -qAtX -d postgres -c 'show data_directory')/postmaster.pid")"
hz="$(getconf CLK_TCK)"

# --- machine facts
log "recording the machine"
{
  machine_facts "$work"
  echo "entityd-bench (embedded entityd): $ENTITYD_WAKE_DESC"
  echo "server flags: ${SERVER_FLAGS:-(defaults)}"
  echo "ANALYZE after spawning: $([[ $ANALYZE == 0 ]] && echo no || echo yes)"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "runs: REPS=$REPS DURATION=$DURATION WARMUP=$WARMUP MODES=$MODES RATE=$RATE ARRIVALS=$ARRIVALS LAT_ENTITIES=$LAT_ENTITIES TP_ENTITIES=$TP_ENTITIES CONC=$CONC"
  echo "cpu sharing: wake-server (entityd + handler), wake-load and PostgreSQL all run on these $(nproc) cores (no pinning)"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt" >&2

for rep in $(seq 1 "$REPS"); do
  d="$OUT/rep$rep"
  mkdir -p "$d"
  if [[ -n "${WAIT_QUIET:-}" ]]; then
    log "rep $rep/$REPS: waiting up to ${WAIT_QUIET}s for a quiet machine"
    t0=$(date +%s); pct=$(wait_quiet "$WAIT_QUIET")
    echo "waited $(( $(date +%s) - t0 ))s for a quiet machine; CPU busy then: ${pct}%" | tee "$d/quiet.txt" >&2
  fi
  { echo "loadavg: $(cat /proc/loadavg)"; top -b -n 1 -w 160 | head -20; } >"$d/machine-before.txt"
  for mode in $MODES; do
    db="wake_${mode}_r${rep}"
    log "rep $rep/$REPS: $mode (database $db)"
    "$PGBIN/psql" -qAtX -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
    dburl="postgres://${PGUSER:-postgres}@127.0.0.1:${PGPORT}/$db?sslmode=disable"
    rm -f "$work/addr.json"
    # shellcheck disable=SC2086
    DATABASE_URL="$dburl" "$bench" wake-server -addr-file "$work/addr.json" $SERVER_FLAGS >"$d/server-$mode.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 300); do
      [[ -s "$work/addr.json" ]] && break
      kill -0 "$server_pid" 2>/dev/null || { echo "wake-server exited during startup" >&2; cat "$d/server-$mode.log" >&2; exit 1; }
      sleep 0.1
    done
    [[ -s "$work/addr.json" ]] || { echo "wake-server did not start" >&2; exit 1; }
    api="$(sed -E 's/.*"api":"([^"]*)".*/\1/' "$work/addr.json")"
    ctl="$(sed -E 's/.*"ctl":"([^"]*)".*/\1/' "$work/addr.json")"
    if [[ -n "${WAIT_QUIET:-}" ]]; then
      echo "quiet: $(wait_quiet "$(( WAIT_QUIET < 60 ? WAIT_QUIET : 60 ))")% busy before start" | tee -a "$d/quiet.txt" >&2
    fi
    args=(-url "$api" -ctl "$ctl" -mode "$mode" -d "$DURATION" -warmup "$WARMUP" -pg-pid "$pm_pid"
          -database-url "$dburl" -label "rep$rep" -out "$d/wake-$mode.json")
    [[ $ANALYZE == 0 ]] && args+=(-analyze=false)
    if [[ $mode == latency ]]; then
      args+=(-entities "$LAT_ENTITIES" -rate "$RATE" -arrivals "$ARRIVALS")
    else
      args+=(-entities "$TP_ENTITIES" -c "$CONC")
    fi
    [[ -n "${PROFILE:-}" ]] && args+=(-pprof "$d/cpu-$mode.pprof")
    "$bench" wake-load "${args[@]}" | tee "$d/wake-$mode.txt"
    cleanup
  done
  { echo "loadavg: $(cat /proc/loadavg)"; top -b -n 1 -w 160 | head -20; } >"$d/machine-after.txt"
done

"$bench" wake-summary -dir "$OUT" >"$OUT/summary.md"
