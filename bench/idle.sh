#!/usr/bin/env bash
# How much an idle machine adds to one append (docs/benchmarks-history.md, "Long-poll at idle"):
#
#   bench/idle.sh
#
# builds bin/entityd and bin/entityd-bench, starts a throwaway PostgreSQL with fsync ON,
# entityd on it and the in-memory Node reference, then per repetition runs
# `entityd-bench longpoll` against both with GAPS between the reader parking and the
# append (20 ms, as in bench/run.sh, and 2 ms), and times one-client one-row INSERT
# commits with pgbench at 50/s and 500/s (the same gaps). Prints a markdown table of
# medians (also $OUT/summary.md); raw tool output in $OUT/raw.txt.
#
# Environment (defaults): REPS=3  ROUNDS=300  GAPS="20ms 2ms"  RATES="50 500"
#   OUT=bench/results/<UTC date>-idle
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

REPS="${REPS:-3}"
ROUNDS="${ROUNDS:-300}"
GAPS="${GAPS:-20ms 2ms}"
RATES="${RATES:-50 500}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

if [[ -z "${ENTITYD_IDLE_INNER:-}" ]]; then
  OUT="${OUT:-bench/results/$(date -u +%Y-%m-%d)-idle}"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  log "building bin/entityd and bin/entityd-bench; npm ci in bench/reference"
  make --no-print-directory build
  go build -o bin/entityd-bench ./cmd/entityd-bench
  (cd bench/reference && npm ci --no-audit --no-fund --loglevel=error)
  export ENTITYD_IDLE_INNER=1 OUT REPS ROUNDS GAPS RATES PGBIN
  run_inner_under_pg "$here/idle.sh"
fi

: "${PGPORT:?run bench/idle.sh, not this half directly}"
entityd_pid="" ref_pid=""
cleanup() {
  [[ -n "$entityd_pid" ]] && kill "$entityd_pid" 2>/dev/null && wait "$entityd_pid" 2>/dev/null
  [[ -n "$ref_pid" ]] && kill "$ref_pid" 2>/dev/null && wait "$ref_pid" 2>/dev/null
  return 0
}
trap cleanup EXIT

"$PGBIN/psql" -qAtX -d postgres -c "CREATE DATABASE entityd_idle" >/dev/null
eport="$(free_port)"
DATABASE_URL="postgres://${PGUSER:-postgres}@127.0.0.1:${PGPORT}/entityd_idle?sslmode=disable" \
  bin/entityd --addr "127.0.0.1:$eport" --no-demo --log-level warn >"$OUT/entityd.log" 2>&1 &
entityd_pid=$!
wait_http "http://127.0.0.1:$eport/_electric/health" entityd "$entityd_pid"
rport="$(free_port)"
node bench/reference/serve.mjs --port "$rport" >"$OUT/reference.log" 2>&1 &
ref_pid=$!
for _ in $(seq 1 100); do grep -q listening "$OUT/reference.log" && break; sleep 0.1; done

"$PGBIN/psql" -qAtX -d postgres -c "CREATE TABLE idle_commit (id bigserial PRIMARY KEY, v text)" >/dev/null
sql="$(mktemp)"
echo "INSERT INTO idle_commit (v) VALUES ('0123456789 0123456789 0123456789');" >"$sql"

raw="$OUT/raw.txt"
: >"$raw"
# results: one line per measurement: <what> <gap> <p50 ms>
res="$(mktemp)"
for rep in $(seq 1 "$REPS"); do
  log "repetition $rep of $REPS"
  for gap in $GAPS; do
    for server in entityd reference; do
      port=$eport; [[ $server == reference ]] && port=$rport
      out="$(bin/entityd-bench longpoll -url "http://127.0.0.1:$port" -n "$ROUNDS" -wait "$gap" -json)"
      echo "rep=$rep gap=$gap server=$server $out" >>"$raw"
      node -e 'const r=JSON.parse(process.argv[1]); console.log(`${process.argv[2]}-rtt ${process.argv[3]} ${r.rtt.p50_ms}`); console.log(`${process.argv[2]}-append ${process.argv[3]} ${r.append.p50_ms}`)' "$out" "$server" "$gap" >>"$res"
    done
  done
  for rate in $RATES; do
    line="$("$PGBIN/pgbench" -n -M prepared -f "$sql" -R "$rate" -T 6 -c 1 postgres 2>&1 | grep 'latency average')"
    echo "rep=$rep pgbench rate=$rate $line" >>"$raw"
    echo "pgbench-commit ${rate}/s $(awk '{print $4}' <<<"$line")" >>"$res"
  done
done
rm -f "$sql"

{
  echo "$(date -u +%Y-%m-%dT%H:%MZ); entityd $(git describe --always --dirty 2>/dev/null || echo unknown); $(nproc) vCPU $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo); $("$PGBIN/postgres" --version), fsync on; node $(node --version); $ROUNDS long-poll rounds per measurement"
  echo
  echo "| p50 in ms (median of $REPS) |$(for g in $GAPS; do printf ' %s gap |' "$g"; done)"
  echo "|---|$(for _ in $GAPS; do printf -- '---:|'; done)"
  for what in entityd-append reference-append entityd-rtt reference-rtt; do
    printf '| %s |' "$what"
    for gap in $GAPS; do
      printf ' %s |' "$(awk -v w="$what" -v g="$gap" '$1==w && $2==g {print $3}' "$res" | sort -g | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}')"
    done
    echo
  done
  echo
  echo "| pgbench one-row commit, 1 client (latency average, ms; median of $REPS) | value |"
  echo "|---|---:|"
  for rate in $RATES; do
    echo "| at ${rate}/s | $(awk -v r="${rate}/s" '$1=="pgbench-commit" && $2==r {print $3}' "$res" | sort -g | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}') |"
  done
} >"$OUT/summary.md"
rm -f "$res"
