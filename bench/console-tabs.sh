#!/usr/bin/env bash
# Ten console tabs in one browser (issue 28; docs/benchmarks.md "Issue 28: console tabs"):
#
#   bench/console-tabs.sh
#
# builds entityd (or uses ENTITYD_BIN, e.g. an older build for a before/after), starts a
# throwaway PostgreSQL and an entityd (--no-demo) on a random loopback port, and runs
# bench/console-tabs.mjs in Debian's Chromium: each tab's first render, a send → visible
# in every tab, and the connections 1, 6 and TABS tabs hold. The JSON result is printed
# and kept in $OUT/console-tabs.json.
#
# Environment (defaults): TABS=10 SENDS=10 ENTITYD_BIN=./bin/entityd
#   OUT=bench/results/<UTC date>-console-tabs
# Needs `make conformance-deps` (playwright-core), Chromium (/usr/bin/chromium) and ss.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

if [[ "${1:-}" == "--inner" ]]; then
  port=$(free_port)
  "${ENTITYD_BIN:-./bin/entityd}" --no-demo --addr "127.0.0.1:$port" --log-level warn &
  pid=$!
  trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
  wait_http "http://127.0.0.1:$port/_electric/ready" entityd "$pid"
  ENTITYD_URL="http://127.0.0.1:$port" node bench/console-tabs.mjs | tee "$OUT/console-tabs.json"
  exit 0
fi

export OUT="${OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-console-tabs}"
mkdir -p "$OUT"
if [[ -z "${ENTITYD_BIN:-}" ]]; then
  log "building"
  make --no-print-directory build >/dev/null
fi
log "console tabs benchmark (results in $OUT)"
go run ./internal/tools/withpg -- bash -c 'DATABASE_URL="$ENTITYD_TEST_DATABASE_URL" "$0" --inner' "$here/console-tabs.sh"
