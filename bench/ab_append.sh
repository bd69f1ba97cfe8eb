#!/usr/bin/env bash
# A/B of the append path (plain Durable Streams POSTs, no entities): two builds of
# entityd measured in one run on one throwaway PostgreSQL (fsync ON), alternating A and
# B (ABBA order) so that drift of the machine falls on both. Prints a markdown table of
# appends/s and latency per variant (median of REPS) and the ratio B/A.
#
#   BASE=<rev> bench/ab_append.sh                  # A = BASE, B = the working tree
#   BASE=<rev> HEAD_REV=<rev> bench/ab_append.sh
#   BASE=<rev> A_AUTH=jwt B_AUTH=jwt bench/ab_append.sh   # both in jwt mode (the load
#                                    # tool's principal creates and owns the streams)
#
# Environment (defaults): REPS=5  DURATION=10s  WARMUP=2s  CLIENTS="64" (writers, one
#   stream each)  OUT=bench/results/ab-append-<UTC timestamp> (raw JSON; not committed)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

REPS="${REPS:-5}"
DURATION="${DURATION:-10s}"
WARMUP="${WARMUP:-2s}"
CLIENTS="${CLIENTS:-64}"
BASE="${BASE:?set BASE to the revision to compare against}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

if [[ -z "${ENTITYD_BENCH_INNER:-}" ]]; then
  export REPS DURATION WARMUP CLIENTS A_AUTH="${A_AUTH:-dev}" B_AUTH="${B_AUTH:-dev}"
  ab_outer "$here/ab_append.sh" ab-append
fi

# Inner half: PG* come from withpg.
work="$ENTITYD_BENCH_WORK"
OUT="$ENTITYD_BENCH_OUT"
: "${PGPORT:?run bench/ab_append.sh, not this half directly}"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; true' EXIT

{
  machine_facts
  echo "A: $A_DESC"
  echo "B: $B_DESC"
  echo "runs: REPS=$REPS DURATION=$DURATION WARMUP=$WARMUP CLIENTS=$CLIENTS (writers = streams), order ABBA per pair of reps"
  echo "auth: A $A_AUTH, B $B_AUTH"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt" >&2
ab_auth_prepare

run_one() { # run_one <variant a|b> <rep> <clients>
  local v="$1" rep="$2" c="$3" db="ab_${1}_${2}_${3}" port
  "$PGBIN/psql" -qAtX -d postgres -c "CREATE DATABASE $db" >/dev/null
  port="$(free_port)"
  DATABASE_URL="postgres://${PGUSER:-postgres}@127.0.0.1:${PGPORT}/$db?sslmode=disable" \
    "$work/entityd-$v" --addr "127.0.0.1:$port" --no-demo --log-level warn $(ab_server_auth "$v") \
    >"$OUT/entityd-$v-$rep-$c.log" 2>&1 &
  pid=$!
  wait_http "http://127.0.0.1:$port/_electric/health" "entityd-$v" "$pid"
  log "rep $rep: $v c=$c"
  "$work/entityd-bench" append -url "http://127.0.0.1:$port" -writers "$c" -streams "$c" -d "$DURATION" \
    -warmup "$WARMUP" -label "$v" -json -out "$OUT/append-$v-$rep-c$c.json" $(ab_bench_auth "$v") >/dev/null
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  "$PGBIN/psql" -qAtX -d postgres -c "DROP DATABASE $db" >/dev/null
}

for rep in $(seq 1 "$REPS"); do
  order="a b"; (( rep % 2 == 0 )) && order="b a"
  for c in $CLIENTS; do
    for v in $order; do run_one "$v" "$rep" "$c"; done
  done
done

ab_rate_summary append writers appends/s appends_per_sec >"$OUT/summary.md"
