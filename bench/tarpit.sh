#!/usr/bin/env bash
# A/B of delivery fairness: does a webhook target that never answers delay another
# target's wakes? Two builds of entityd measured in one run on one throwaway PostgreSQL
# (fsync ON), each run on a fresh database, alternating A and B (ABBA order). Per run:
# entityd-bench tarpit registers a type whose webhook never answers and spawns TARPIT
# entities, sending to each (TARPIT wakes hang), and a type whose webhook answers at
# once; once the tarpit's open requests settle, it sends once to each of HEALTHY entities
# of the second type and measures send → webhook wake. Both builds run with their
# default settings. Prints a markdown table (median of REPS) and the ratio B/A.
#
#   BASE=<rev before> bench/tarpit.sh     # A = BASE (default HEAD), B = the working tree
#   BASE=<rev> HEAD_REV=<rev> bench/tarpit.sh
#
# Environment (defaults): REPS=1  TARPIT=150  HEALTHY=20  EVERY=100ms
#   OUT=bench/results/tarpit-<UTC timestamp> (not committed)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

REPS="${REPS:-1}"
TARPIT="${TARPIT:-150}"
HEALTHY="${HEALTHY:-20}"
EVERY="${EVERY:-100ms}"
BASE="${BASE:-HEAD}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

if [[ -z "${ENTITYD_BENCH_INNER:-}" ]]; then
  export REPS TARPIT HEALTHY EVERY
  ab_outer "$here/tarpit.sh" tarpit
fi

# Inner half: PG* come from withpg.
work="$ENTITYD_BENCH_WORK"
OUT="$ENTITYD_BENCH_OUT"
: "${PGPORT:?run bench/tarpit.sh, not this half directly}"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; true' EXIT

{
  machine_facts
  echo "A: $A_DESC"
  echo "B: $B_DESC"
  echo "runs: REPS=$REPS TARPIT=$TARPIT HEALTHY=$HEALTHY EVERY=$EVERY, order ABBA per pair of reps, default settings"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt" >&2

run_one() { # run_one <variant a|b> <rep>
  local v="$1" rep="$2" db="tarpit_${1}_${2}" port url
  "$PGBIN/psql" -qAtX -d postgres -c "CREATE DATABASE $db" >/dev/null
  port="$(free_port)"
  url="http://127.0.0.1:$port"
  DATABASE_URL="postgres://${PGUSER:-postgres}@127.0.0.1:${PGPORT}/$db?sslmode=disable" \
    "$work/entityd-$v" --addr "127.0.0.1:$port" --no-demo --log-level error --shutdown-timeout 2s \
    >"$OUT/entityd-$v-$rep.log" 2>&1 &
  pid=$!
  wait_http "$url/_electric/health" "entityd-$v" "$pid"
  log "rep $rep: $v, $TARPIT tarpit wakes hanging, $HEALTHY healthy sends"
  "$work/entityd-bench" tarpit -url "$url" -tarpit "$TARPIT" -healthy "$HEALTHY" -every "$EVERY" \
    -label "$v" -json -out "$OUT/tarpit-$v-$rep.json" >/dev/null
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); l=d['latency']; print(f\"  p50 {l['p50_ms']:.1f} ms, p99 {l['p99_ms']:.1f} ms, max {l['max_ms']:.1f} ms; tarpit open {d['tarpit_open_requests']}, at most {d['tarpit_max_open_requests']}; errors {d['errors']}\")" \
    "$OUT/tarpit-$v-$rep.json" >&2
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  "$PGBIN/psql" -qAtX -d postgres -c "DROP DATABASE $db" >/dev/null
}

for rep in $(seq 1 "$REPS"); do
  order="a b"; (( rep % 2 == 0 )) && order="b a"
  for v in $order; do run_one "$v" "$rep"; done
done

field() { # field <variant> <python expr over d>
  for f in "$OUT"/tarpit-"$1"-*.json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$f"; done
}
row() { # row <name> <expr>
  local a b ratio
  a="$(field a "$2" | median)"; b="$(field b "$2" | median)"
  ratio="$(awk -v a="$a" -v b="$b" 'BEGIN { if (a+0 == 0) print "n/a"; else printf "%.3f", b/a }')"
  echo "| $1 (median of $REPS) | $a | $b | $ratio |"
}
{
  echo "| metric | A ($A_DESC) | B ($B_DESC) | B / A |"
  echo "|---|---:|---:|---:|"
  row "healthy send → webhook p50 ms" "d['latency']['p50_ms']"
  row "healthy send → webhook p99 ms" "d['latency']['p99_ms']"
  row "healthy send → webhook max ms" "d['latency']['max_ms']"
  row "healthy wakes not delivered in time" "d['errors']"
  row "tarpit requests open, at most" "d['tarpit_max_open_requests']"
} >"$OUT/summary.md"
