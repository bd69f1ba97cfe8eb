#!/usr/bin/env bash
# Flat cost as data grows (docs/benchmarks.md; the analysis in docs/benchmarks-history.md, issue 14): the same measurements on an
# empty database and on one filled with ENTITIES entities (each: its spawn events and
# SENDS messages, about 9 events) plus a plain stream of BIG messages, 10 M stored events
# at the defaults, on a throwaway PostgreSQL with fsync ON:
#   - sends/s and latency at 64 clients (entityd-bench send, REPS runs each);
#   - start-up: process start to GET /_electric/ready = 200, on the filled database;
#   - catch-up from 1 %, 50 % and 99 % into the BIG stream: time per page (entityd-bench pages);
#   - resident memory after reading every filled entity once (entityd-bench touch).
#
#   bench/scale.sh
#
# Environment (defaults): ENTITIES=1000000  SENDS=4  BIG=1000000  REPS=3  DURATION=10s
#   OUT=bench/results/<UTC timestamp>-scale (not committed)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

ENTITIES="${ENTITIES:-1000000}"
SENDS="${SENDS:-4}"
BIG="${BIG:-1000000}"
REPS="${REPS:-3}"
DURATION="${DURATION:-10s}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

if [[ -z "${ENTITYD_SCALE_INNER:-}" ]]; then
  OUT="${OUT:-bench/results/$(date -u +%Y%m%d-%H%M%S)-scale}"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  log "building bin/entityd and bin/entityd-bench"
  make --no-print-directory build
  go build -o bin/entityd-bench ./cmd/entityd-bench
  export ENTITYD_SCALE_INNER=1 OUT ENTITIES SENDS BIG REPS DURATION PGBIN
  run_inner_under_pg "$here/scale.sh"
fi

: "${PGPORT:?run bench/scale.sh, not this half directly}"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; true' EXIT
"$PGBIN/psql" -qAtX -d postgres -c "CREATE DATABASE entityd_scale" >/dev/null
db="postgres://${PGUSER:-postgres}@127.0.0.1:${PGPORT}/entityd_scale?sslmode=disable"
port="$(free_port)"
url="http://127.0.0.1:$port"

start() { # start <log name>: entityd on the database; sets pid and prints the start-up time in ms
  local t0 t1
  t0=$(date +%s%N)
  DATABASE_URL="$db" bin/entityd --addr "127.0.0.1:$port" --no-demo --log-level warn >"$OUT/entityd-$1.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do
    if curl -sf -o /dev/null "$url/_electric/ready"; then break; fi
    kill -0 "$pid" 2>/dev/null || { echo "entityd exited" >&2; return 1; }
    sleep 0.01
  done
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 ))
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
sends() { # sends <label>
  for rep in $(seq 1 "$REPS"); do
    bin/entityd-bench send -url "$url" -c 64 -d "$DURATION" -type "s$1$rep" -json -out "$OUT/send-$1-$rep.json" >/dev/null
  done
}

log "empty database"
start empty >"$OUT/startup-empty.txt"
sends empty
log "filling: $ENTITIES entities, $SENDS sends each, a stream of $BIG messages"
bin/entityd-bench fill -url "$url" -database-url "$db" -entities "$ENTITIES" -sends "$SENDS" -big-stream "$BIG" \
  | tee "$OUT/fill.txt" | tail -1 >&2
stop
"$PGBIN/psql" -qAtX -d entityd_scale -c "CHECKPOINT" >/dev/null
log "filled database: restart"
start filled >"$OUT/startup-filled.txt"
sends filled
for at in 0.01 0.5 0.99; do
  bin/entityd-bench pages -url "$url" -path /fill-big -from "$at" -n 50 -json -out "$OUT/pages-$at.json" >/dev/null
done
bin/entityd-bench touch -url "$url" -entities "$ENTITIES" -server-pid "$pid" >"$OUT/touch.txt"
"$PGBIN/psql" -qAtX -d entityd_scale -c "SELECT pg_size_pretty(pg_database_size('entityd_scale'))" >"$OUT/dbsize.txt"

field() { for f in "$OUT"/send-"$1"-*.json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$f"; done | median; }
{
  echo "| measure | empty | filled | filled / empty |"
  echo "|---|---:|---:|---:|"
  for m in "sends/s:d['sends_per_sec']" "p50 ms:d['latency']['p50_ms']" "p99 ms:d['latency']['p99_ms']"; do
    name="${m%%:*}"; expr="${m#*:}"
    a="$(field empty "$expr")"; b="$(field filled "$expr")"
    echo "| $name (median of $REPS, 64 clients) | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", b/a}') |"
  done
  echo "| start-up to ready, ms | $(cat "$OUT/startup-empty.txt") | $(cat "$OUT/startup-filled.txt") | |"
  for at in 0.01 0.5 0.99; do
    python3 -c "import json; d=json.load(open('$OUT/pages-$at.json')); print('| catch-up pages from seq %d of %d (%.0f messages each), p50 / p99 ms | | %.2f / %.2f | |' % (d['from_seq'], d['tail_seq'], d['messages_per_page'], d['latency']['p50_ms'], d['latency']['p99_ms']))"
  done
  echo "| after reading all $ENTITIES entities: $(grep VmRSS "$OUT/touch.txt" | tr -s ' ') (peak $(grep VmHWM "$OUT/touch.txt" | awk '{print $2, $3}')) | | | |"
  echo "| database size | | $(cat "$OUT/dbsize.txt") | |"
  echo
  grep '^done' "$OUT/fill.txt"
} >"$OUT/summary.md"
