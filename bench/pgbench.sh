#!/usr/bin/env bash
# pgbench baseline for the send benchmark: single-row INSERT transactions into a table
# shaped like an entity inbox (entity_id, seq, ~300 B composer_input jsonb, created_at,
# primary key (entity_id, seq)), on the cluster named by the PG* environment (what
# `go run ./internal/tools/withpg --fsync -- ...` exports), in its own database.
#
#   bench/pgbench.sh [-c "1 16 64"] [-T 10] [-j 2] [-o DIR] [-P 0]
#
# Prints pgbench's report per client count and, with -o DIR, writes
# DIR/pgbench-c<N>.json = {"bench":"pgbench","clients":N,"tps":…,"latency_avg_ms":…,
# "latency_stddev_ms":…}. Needs PGHOST/PGPORT/PGUSER; PGBIN overrides the binaries' dir.
set -euo pipefail

CLIENTS="1 16 64"
DURATION=10
JOBS=2
OUTDIR=""
PROGRESS=5
while getopts "c:T:j:o:P:" opt; do
  case "$opt" in
    c) CLIENTS="$OPTARG" ;;
    T) DURATION="$OPTARG" ;;
    j) JOBS="$OPTARG" ;;
    o) OUTDIR="$OPTARG" ;;
    P) PROGRESS="$OPTARG" ;;
    *) echo "usage: $0 [-c \"1 16 64\"] [-T secs] [-j threads] [-o outdir] [-P progress-secs]" >&2; exit 2 ;;
  esac
done

: "${PGHOST:?PGHOST is not set (run under: go run ./internal/tools/withpg --fsync -- ...)}"
: "${PGPORT:?PGPORT is not set}"
export PGUSER="${PGUSER:-postgres}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
DB="${PGBENCH_DB:-entityd_pgbench}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"

# The payload is the exact composer_input payload entityd-bench send posts.
if [[ -x "$root/bin/entityd-bench" ]]; then
  payload="$("$root/bin/entityd-bench" payload)"
else
  payload="$(cd "$root" && go run ./cmd/entityd-bench payload)"
fi
if [[ "$payload" == *"'"* ]]; then
  echo "pgbench.sh: payload contains a single quote" >&2; exit 1
fi

PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -qX -d postgres -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
"$PGBIN/psql" -qX -d "$DB" -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE TABLE bench_inbox (
  entity_id  bigint      NOT NULL,
  seq        bigint      NOT NULL,
  payload    jsonb       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (entity_id, seq)
);
CREATE SEQUENCE bench_inbox_seq;
SQL

script="$(mktemp "${TMPDIR:-/tmp}/pgbench-insert.XXXXXX.sql")"
trap 'rm -f "$script"' EXIT
cat >"$script" <<SQL
\\set eid random(1, 100)
INSERT INTO bench_inbox (entity_id, seq, payload) VALUES (:eid, nextval('bench_inbox_seq'), '$payload');
SQL

pbytes=$(printf %s "$payload" | wc -c)
echo "pgbench: one-row INSERT per transaction, payload ${pbytes} B, -M prepared -j $JOBS, ${DURATION}s per client count"
for c in $CLIENTS; do
  j=$(( JOBS < c ? JOBS : c ))
  args=(-n -M prepared -c "$c" -j "$j" -T "$DURATION" -f "$script" "$DB")
  if [[ "$PROGRESS" != 0 ]]; then args=(-P "$PROGRESS" "${args[@]}"); fi
  echo "== pgbench ${args[*]}"
  report="$("$PGBIN/pgbench" "${args[@]}" 2>&1)"
  echo "$report" | grep -E '^(number of clients|number of threads|number of transactions actually processed|number of failed|latency|tps|progress)' || true
  tps="$(echo "$report" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | head -1)"
  avg="$(echo "$report" | sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p')"
  sd="$(echo "$report" | sed -n 's/^latency stddev = \([0-9.]*\) ms.*/\1/p')"
  if [[ -z "$tps" ]]; then echo "$report" >&2; echo "pgbench.sh: no tps in pgbench output" >&2; exit 1; fi
  if [[ -n "$OUTDIR" ]]; then
    mkdir -p "$OUTDIR"
    printf '{"bench":"pgbench","clients":%d,"threads":%d,"duration_s":%s,"payload_bytes":%d,"tps":%s,"latency_avg_ms":%s,"latency_stddev_ms":%s}\n' \
      "$c" "$j" "$DURATION" "$pbytes" "$tps" "${avg:-0}" "${sd:-0}" >"$OUTDIR/pgbench-c$c.json"
  fi
done
