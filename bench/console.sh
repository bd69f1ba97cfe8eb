#!/usr/bin/env bash
# The console's performance targets (issue 13) in one command (docs/benchmarks.md):
#
#   bench/console.sh
#
# builds entityd, starts a throwaway PostgreSQL and an entityd (--no-demo) on a random
# loopback port, and runs bench/console.mjs in Debian's Chromium: first render of an
# entity view with EVENTS stream events and COMMANDS slash commands (REPS page loads),
# the suggestion update per keystroke, and the bundle's gzipped size. The JSON result is
# printed and kept in $OUT/console.json.
#
# Environment (defaults): EVENTS=1000 COMMANDS=500 REPS=10 KEYS=200
#   OUT=bench/results/<UTC date>-console
# Needs `make conformance-deps` (playwright-core) and Chromium (/usr/bin/chromium).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

if [[ "${1:-}" == "--inner" ]]; then
  port=$(free_port)
  ./bin/entityd --no-demo --addr "127.0.0.1:$port" --log-level warn &
  pid=$!
  trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
  wait_http "http://127.0.0.1:$port/_electric/ready" entityd "$pid"
  ENTITYD_URL="http://127.0.0.1:$port" node bench/console.mjs | tee "$OUT/console.json"
  exit 0
fi

export OUT="${OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-console}"
mkdir -p "$OUT"
log "building"
make --no-print-directory build >/dev/null
log "console benchmark (results in $OUT)"
go run ./internal/tools/withpg -- bash -c 'DATABASE_URL="$ENTITYD_TEST_DATABASE_URL" "$0" --inner' "$here/console.sh"
