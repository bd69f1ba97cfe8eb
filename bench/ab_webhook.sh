#!/usr/bin/env bash
# A/B of handlers outside the server (webhook wakes): two builds of entityd measured in
# one run on one throwaway PostgreSQL (fsync ON), each run on a fresh database,
# alternating A and B (ABBA order). Per run: send → webhook latency at RATE sends/s over
# ENTITIES entities, then full cycles per second with each HANDLERS (electric: claim,
# write, done; effects: done with the writes; sdk: the Go SDK). Prints a markdown table
# (median of REPS) and the ratio B/A.
#
#   bench/ab_webhook.sh              # A = BASE (default HEAD), B = the working tree
#   BASE=<rev> HEAD_REV=<rev> bench/ab_webhook.sh
#
# Environment (defaults): REPS=3  DURATION=10s  WARMUP=2s  RATE=500  ENTITIES=100
#   HANDLERS="electric effects"  OUT=bench/results/abw-<UTC timestamp> (not committed)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

REPS="${REPS:-3}"
DURATION="${DURATION:-10s}"
WARMUP="${WARMUP:-2s}"
RATE="${RATE:-500}"
ENTITIES="${ENTITIES:-100}"
HANDLERS="${HANDLERS:-electric effects}"
BASE="${BASE:-HEAD}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

if [[ -z "${ENTITYD_BENCH_INNER:-}" ]]; then
  export REPS DURATION WARMUP RATE ENTITIES HANDLERS
  ab_outer "$here/ab_webhook.sh" abw
fi

# Inner half: PG* come from withpg.
work="$ENTITYD_BENCH_WORK"
OUT="$ENTITYD_BENCH_OUT"
: "${PGPORT:?run bench/ab_webhook.sh, not this half directly}"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; true' EXIT

{
  machine_facts
  echo "A: $A_DESC"
  echo "B: $B_DESC"
  echo "runs: REPS=$REPS DURATION=$DURATION WARMUP=$WARMUP RATE=$RATE ENTITIES=$ENTITIES HANDLERS=$HANDLERS, order ABBA per pair of reps"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt" >&2

run_one() { # run_one <variant a|b> <rep>
  local v="$1" rep="$2" db="abw_${1}_${2}" port url h
  "$PGBIN/psql" -qAtX -d postgres -c "CREATE DATABASE $db" >/dev/null
  port="$(free_port)"
  url="http://127.0.0.1:$port"
  DATABASE_URL="postgres://${PGUSER:-postgres}@127.0.0.1:${PGPORT}/$db?sslmode=disable" \
    "$work/entityd-$v" --addr "127.0.0.1:$port" --no-demo --log-level warn >"$OUT/entityd-$v-$rep.log" 2>&1 &
  pid=$!
  wait_http "$url/_electric/health" "entityd-$v" "$pid"
  log "rep $rep: $v latency at $RATE/s"
  "$work/entityd-bench" webhook -url "$url" -mode latency -rate "$RATE" -entities "$ENTITIES" -d "$DURATION" \
    -warmup "$WARMUP" -label "$v" -json -out "$OUT/latency-$v-$rep.json" >/dev/null
  for h in $HANDLERS; do
    log "rep $rep: $v throughput, handler $h"
    "$work/entityd-bench" webhook -url "$url" -mode throughput -handler "$h" -entities "$ENTITIES" -d "$DURATION" \
      -warmup "$WARMUP" -label "$v" -json -out "$OUT/cycles-$h-$v-$rep.json" >/dev/null
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  "$PGBIN/psql" -qAtX -d postgres -c "DROP DATABASE $db" >/dev/null
}

for rep in $(seq 1 "$REPS"); do
  order="a b"; (( rep % 2 == 0 )) && order="b a"
  for v in $order; do run_one "$v" "$rep"; done
done

field() { # field <file glob prefix> <variant> <python expr over d>
  for f in "$OUT"/"$1"-"$2"-*.json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($3)" "$f"; done
}
row() { # row <name> <file prefix> <expr>
  local a b ratio
  a="$(field "$2" a "$3" | median)"; b="$(field "$2" b "$3" | median)"
  ratio="$(awk -v a="$a" -v b="$b" 'BEGIN { if (a+0 == 0) print "n/a"; else printf "%.3f", b/a }')"
  echo "| $1 (median of $REPS) | $a | $b | $ratio |"
}
{
  echo "| metric | A ($A_DESC) | B ($B_DESC) | B / A |"
  echo "|---|---:|---:|---:|"
  row "send → webhook p50 ms at $RATE/s" latency "d['latency']['p50_ms']"
  row "send → webhook p99 ms at $RATE/s" latency "d['latency']['p99_ms']"
  row "skipped sends at $RATE/s" latency "d.get('skipped_sends', 0)"
  for h in $HANDLERS; do
    row "cycles/s, handler $h" "cycles-$h" "d['cycles_per_second']"
  done
} >"$OUT/summary.md"
