#!/usr/bin/env bash
# A/B of the send path: two builds of entityd measured in one run on one throwaway
# PostgreSQL (fsync ON), alternating A and B (ABBA order) so that drift of the machine
# falls on both. Prints a markdown table of sends/s and latency per variant (median of
# REPS) and the ratio B/A.
#
#   bench/ab_send.sh                 # A = BASE (default 82ab27c), B = the working tree
#   BASE=<rev> HEAD_REV=<rev> bench/ab_send.sh
#   BASE=HEAD B_AUTH=jwt bench/ab_send.sh   # one build, A in dev mode, B in jwt mode
#                                    # (a fresh Ed25519 key; the load tool sends a token)
#   BASE=<rev> A_AUTH=jwt B_AUTH=jwt bench/ab_send.sh   # two builds, both in jwt mode
#
# Environment (defaults): REPS=5  DURATION=10s  WARMUP=2s  CLIENTS="64"
#   OUT=bench/results/ab-<UTC timestamp> (raw JSON per run; not committed)
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
BASE="${BASE:-82ab27c}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

if [[ -z "${ENTITYD_BENCH_INNER:-}" ]]; then
  export REPS DURATION WARMUP CLIENTS A_AUTH="${A_AUTH:-dev}" B_AUTH="${B_AUTH:-dev}"
  ab_outer "$here/ab_send.sh" ab
fi

# Inner half: PG* come from withpg.
work="$ENTITYD_BENCH_WORK"
OUT="$ENTITYD_BENCH_OUT"
: "${PGPORT:?run bench/ab_send.sh, not this half directly}"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; true' EXIT

{
  machine_facts
  echo "A: $A_DESC"
  echo "B: $B_DESC"
  echo "runs: REPS=$REPS DURATION=$DURATION WARMUP=$WARMUP CLIENTS=$CLIENTS, order ABBA per pair of reps"
  echo "auth: A $A_AUTH, B $B_AUTH"
} >"$OUT/meta.txt"

# jwt variants: the load tool's principal registers the type and spawns the entities,
# so it sends as their creator.
ab_auth_prepare
cat "$OUT/meta.txt" >&2

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
  "$work/entityd-bench" send -url "http://127.0.0.1:$port" -c "$c" -d "$DURATION" -warmup "$WARMUP" \
    -label "$v" -json -out "$OUT/send-$v-$rep-c$c.json" $(ab_bench_auth "$v") >/dev/null
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  "$PGBIN/psql" -qAtX -d postgres -c "DROP DATABASE $db" >/dev/null
}

for rep in $(seq 1 "$REPS"); do
  order="a b"; (( rep % 2 == 0 )) && order="b a"
  for c in $CLIENTS; do
    for v in $order; do run_one "$v" "$rep" "$c"; done
  done
done

ab_rate_summary send clients sends/s sends_per_sec >"$OUT/summary.md"
