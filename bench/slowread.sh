#!/usr/bin/env bash
# A/B of what slow and greedy clients cost the server's memory (entityd-bench slowread):
# 150 readers of one 8 MiB message that read 1 KiB/s, then 96 concurrent 8 MiB appends
# (3 each), each phase against a fresh server on its own database of one throwaway
# PostgreSQL (fsync ON), A then B. Prints the server's idle and peak VmRSS and the
# latency of GET /_electric/health during each phase.
#
#   BASE=<rev> bench/slowread.sh                  # A = BASE, B = the working tree
#   BASE=<rev> HEAD_REV=<rev> bench/slowread.sh
#
# Environment (defaults): READERS=150 READ_RATE=1024 PRINCIPALS=each DURATION=30s
#   APPENDERS=96 ROUNDS=3 SIZE=8388608 OUT=bench/results/slowread-<UTC timestamp> (raw
#   JSON and server logs; not committed)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

READERS="${READERS:-150}"
READ_RATE="${READ_RATE:-1024}"
PRINCIPALS="${PRINCIPALS:-each}"
DURATION="${DURATION:-30s}"
APPENDERS="${APPENDERS:-96}"
ROUNDS="${ROUNDS:-3}"
SIZE="${SIZE:-8388608}"
BASE="${BASE:?set BASE to the revision to compare against}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

if [[ -z "${ENTITYD_BENCH_INNER:-}" ]]; then
  export READERS READ_RATE PRINCIPALS DURATION APPENDERS ROUNDS SIZE
  ab_outer "$here/slowread.sh" slowread
fi

# Inner half: PG* come from withpg.
work="$ENTITYD_BENCH_WORK"
OUT="$ENTITYD_BENCH_OUT"
: "${PGPORT:?run bench/slowread.sh, not this half directly}"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; true' EXIT

{
  machine_facts
  echo "A: $A_DESC"
  echo "B: $B_DESC"
  echo "runs: READERS=$READERS READ_RATE=$READ_RATE PRINCIPALS=$PRINCIPALS DURATION=$DURATION APPENDERS=$APPENDERS ROUNDS=$ROUNDS SIZE=$SIZE"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt" >&2

run_one() { # run_one <variant a|b> <phase readers|appends>
  local v="$1" phase="$2" db="slowread_${1}_${2}" port flags
  "$PGBIN/psql" -qAtX -d postgres -c "CREATE DATABASE $db" >/dev/null
  port="$(free_port)"
  # the readers and appenders are principals of their own: where streams have owners,
  # the bench's streams go under a public prefix (a build without owners ignores it)
  ENTITYD_PUBLIC_STREAM_PREFIXES=/public \
  DATABASE_URL="postgres://${PGUSER:-postgres}@127.0.0.1:${PGPORT}/$db?sslmode=disable" \
    "$work/entityd-$v" --addr "127.0.0.1:$port" --no-demo --log-level warn \
    >"$OUT/entityd-$v-$phase.log" 2>&1 &
  pid=$!
  wait_http "http://127.0.0.1:$port/_electric/health" "entityd-$v" "$pid"
  if [[ "$phase" == readers ]]; then
    flags=(-readers "$READERS" -read-rate "$READ_RATE" -d "$DURATION" -appenders 0)
  else
    flags=(-readers 0 -appenders "$APPENDERS" -rounds "$ROUNDS")
  fi
  log "$v: $phase"
  "$work/entityd-bench" slowread -url "http://127.0.0.1:$port" -server-pid "$pid" -size "$SIZE" \
    -principals "$PRINCIPALS" "${flags[@]}" -label "$v" -out "$OUT/slowread-$v-$phase.json" | tee "$OUT/slowread-$v-$phase.txt" >&2
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  "$PGBIN/psql" -qAtX -d postgres -c "DROP DATABASE $db" >/dev/null
}

for v in a b; do
  for phase in readers appends; do run_one "$v" "$phase"; done
done

python3 - "$OUT" "$A_DESC" "$B_DESC" >"$OUT/summary.md" <<'PY'
import json, sys
out, a_desc, b_desc = sys.argv[1:4]
def load(v, phase):
    return json.load(open(f"{out}/slowread-{v}-{phase}.json"))
mb = lambda n: f"{n/1e6:,.0f} MB"
print(f"| phase | metric | A ({a_desc}) | B ({b_desc}) |")
print("|---|---|---:|---:|")
for phase, key in (("readers", "readers"), ("appends", "appends")):
    a, b = load("a", phase)[key], load("b", phase)[key]
    rows = [("RSS idle", lambda p: mb(p["mem"]["idle_rss_bytes"])),
            ("RSS peak", lambda p: mb(p["mem"]["peak_rss_bytes"])),
            ("RSS peak above idle", lambda p: mb(p["mem"]["peak_above_idle_bytes"])),
            ("health p50 / p99 / max", lambda p: f'{p["health"]["p50_ms"]:.1f} / {p["health"]["p99_ms"]:.1f} / {p["health"]["max_ms"]:.0f} ms ({p["health_errors"]} errors)'),
            ("answers", lambda p: ", ".join(f"{k}: {v}" for k, v in sorted(p["status"].items())))]
    if phase == "readers":
        rows.append(("readers in a 200 at the end", lambda p: str(p["holding_200_at_end"])))
    for name, f in rows:
        print(f"| {phase} | {name} | {f(a)} | {f(b)} |")
PY
