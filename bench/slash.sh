#!/usr/bin/env bash
# The slash-command performance targets (issue 4) in one command (docs/benchmarks-slash.md):
#
#   bench/slash.sh
#
# builds entityd and the load tool, starts a throwaway PostgreSQL with fsync ON
# (internal/tools/withpg --fsync), and per repetition
#   1. starts a fresh entityd (--no-demo, a random loopback port, --debug-addr for pprof,
#      --sse-lifetime long enough that no subscriber is cut off during the run, and
#      `ulimit -n` raised to the hard limit: every SSE subscriber is a file descriptor of
#      the server), then runs `entityd-bench fanout`: N SSE subscribers to one entity's
#      slash-command collection, server memory per idle subscriber, R registrations and
#      their delivery latency to every subscriber;
#   2. starts another fresh entityd and runs `entityd-bench commands` twice: GET of a
#      200-command list revalidating with If-None-Match (304s), then without (full 200s);
# writes the raw JSON (and pprof profiles) under $OUT/rep<N>/ and prints a summary (also
# $OUT/summary.md). Each benchmark measures its own CPU split (server, PostgreSQL, the
# load tool, other) from /proc.
#
# Environment (defaults): REPS=3  SUBSCRIBERS=10000  REGISTRATIONS=20  INTERVAL=1s
#   STATIC=10 (static commands of the fan-out entity)  CONNECT_CONCURRENCY=64
#   COMMANDS=200  CLIENTS=64  DURATION=10s  WARMUP=2s
#   OUT=bench/results/<UTC date>-slash
#   WAIT_QUIET=<secs>  before each benchmark wait up to that long for the machine to be
#                 quiet (under 15% CPU busy over 2 s), as bench/run.sh does
#   REV=<commit>  build entityd from that committed revision (git archive) instead of
#                 the working tree
# bench/slash.sh --summary <dir> prints the summary of an earlier run again.
#   PROFILE=1     (default) save CPU/heap/goroutine profiles next to the results
#   ONLY=fanout|commands  run just one of the two
#   ENTITYD_BIN=<path>    measure this prebuilt server binary (experiments)
#   SERVER_ENV="GOGC=50 …"  extra environment for the server only (experiments)
# Everything runs on loopback of this machine and every loop is bounded.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

REPS="${REPS:-3}"
SUBSCRIBERS="${SUBSCRIBERS:-10000}"
REGISTRATIONS="${REGISTRATIONS:-20}"
INTERVAL="${INTERVAL:-1s}"
STATIC="${STATIC:-10}"
CONNECT_CONCURRENCY="${CONNECT_CONCURRENCY:-64}"
COMMANDS="${COMMANDS:-200}"
CLIENTS="${CLIENTS:-64}"
DURATION="${DURATION:-10s}"
WARMUP="${WARMUP:-2s}"
PROFILE="${PROFILE:-1}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

# summary <dir>: the markdown summary of a results directory (median and range over the
# repetitions), on stdout.
summary() {
  jq -rs '
    def med: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
    def rng: sort | "\(.[0]) – \(.[-1])";
    def r1: . * 10 | round / 10;
    def k: . / 1024 | r1;
    def cell(f): [.[] | f | select(. != null)] as $v | if ($v | length) == 0 then "–" else "\($v | med) (\($v | rng))" end;
    (map(select(.bench == "fanout"))) as $f
    | (map(select(.bench == "commands" and .revalidate))) as $e
    | (map(select(.bench == "commands" and (.revalidate | not)))) as $full
    | "## Slash commands: results (\($f | length) repetitions; median (min – max))\n",
      "### Fan-out: \($f[0].subscribers // "?") SSE subscribers to one entity'"'"'s command collection\n",
      "| metric | value | target |", "|---|---:|---|",
      "| subscribers ready (of \($f[0].subscribers // "?")) | \($f | cell(.connected)) | all |",
      "| connect: subscribers/s | \($f | cell(.connects_per_sec | round)) | |",
      "| delivery p50 (ms) | \($f | cell(.delivery.p50_ms | r1)) | |",
      "| delivery p90 (ms) | \($f | cell(.delivery.p90_ms | r1)) | |",
      "| delivery p99 (ms) | \($f | cell(.delivery.p99_ms | r1)) | ≤ 500 |",
      "| delivery max (ms) | \($f | cell(.delivery.max_ms | r1)) | |",
      "| delivery p99 over quiet registrations (other CPU < \($f[0].quiet_other_pct // "?")%) (ms) | \($f | cell(if (.quiet_registrations // 0) > 0 then (.delivery_quiet.p99_ms | r1) else null end)) | ≤ 500 |",
      "| … quiet registrations (of \($f[0].registrations // "?")) | \($f | cell(.quiet_registrations // null)) | |",
      "| worst registration p99 (ms) | \($f | cell([.per_registration[].p99_ms] | max | r1)) | |",
      "| missed (subscriber, registration) pairs | \($f | cell(.missed)) | 0 |",
      "| duplicates / txid mismatches / reconnects | \($f | cell(.duplicates + .txid_mismatches + .reconnects)) | 0 |",
      "| server RSS per idle subscriber (KB) | \($f | cell(.rss_bytes_per_subscriber | k)) | ≤ 32 |",
      "| server Go heap+stack per idle subscriber (KB) | \($f | cell(.go_bytes_per_subscriber | k)) | |",
      "| … heap / stack (KB) | \($f | cell(.heap_bytes_per_subscriber | k)) / \($f | cell(.stack_bytes_per_subscriber | k)) | |",
      "| server goroutines per subscriber | \($f | cell(.server_goroutines_per_subscriber * 100 | round / 100)) | |",
      "| kernel TCP memory per subscriber, both ends (KB) | \($f | cell(.kernel_tcp_bytes_per_subscriber | k)) | |",
      "| PUT round trip p50 (ms) | \($f | cell(.put.p50_ms | r1)) | |",
      "| CPU µs per delivered event: server / bench | \($f | cell(.cpu.registrations.server_cpu_s * 1e6 / (.connected * .registrations) | r1)) / \($f | cell(.cpu.registrations.bench_cpu_s * 1e6 / (.connected * .registrations) | r1)) | |",
      "",
      "CPU during the registrations (% of all cores: server / postgres / bench / other): \($f | map("\(.cpu.registrations.server_pct)/\(.cpu.registrations.postgres_pct)/\(.cpu.registrations.bench_pct)/\(.cpu.registrations.other_pct)") | join(", "))",
      "CPU while connecting: \($f | map("\(.cpu.connect.server_pct)/\(.cpu.connect.postgres_pct)/\(.cpu.connect.bench_pct)/\(.cpu.connect.other_pct)") | join(", ")); while idle: \($f | map("\(.cpu.idle.server_pct)/\(.cpu.idle.postgres_pct)/\(.cpu.idle.bench_pct)/\(.cpu.idle.other_pct)") | join(", "))",
      "",
      "### GET …/slash-commands, \($e[0].commands // "?") commands, \($e[0].concurrency // "?") clients\n",
      "| mode | requests/s | p50 (ms) | p99 (ms) | 304 share | errors | CPU µs/request server / postgres / bench | other CPU % | target |",
      "|---|---:|---:|---:|---:|---:|---|---:|---|",
      "| If-None-Match (304) | \($e | cell(.requests_per_sec | round)) | \($e | cell(.latency.p50_ms | r1)) | \($e | cell(.latency.p99_ms | r1)) | \($e | cell(.share_304 * 1000 | round / 10))% | \($e | cell(.errors)) | \($e | map("\(.server_us_per_request | round)/\(.postgres_us_per_request | round)/\(.bench_us_per_request | round)") | join(", ")) | \($e | cell(.cpu.other_pct)) | ≥ 5,000/s, 100% 304 |",
      "| full list (200, \($full[0].list_bytes // "?") B) | \($full | cell(.requests_per_sec | round)) | \($full | cell(.latency.p50_ms | r1)) | \($full | cell(.latency.p99_ms | r1)) | – | \($full | cell(.errors)) | \($full | map("\(.server_us_per_request | round)/\(.postgres_us_per_request | round)/\(.bench_us_per_request | round)") | join(", ")) | \($full | cell(.cpu.other_pct)) | reported |"
  ' $(ls "$1"/rep*/fanout.json "$1"/rep*/commands-*.json 2>/dev/null)
}

if [[ "${1:-}" == --summary ]]; then
  summary "${2:?usage: bench/slash.sh --summary <results dir>}"
  exit
fi


if [[ -z "${ENTITYD_SLASH_INNER:-}" ]]; then
  # Outer half: build, then run the inner half under withpg.
  OUT="${OUT:-bench/results/$(date -u +%Y-%m-%d)-slash}"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  work="$(mktemp -d "${TMPDIR:-/tmp}/entityd-slash.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  if [[ -n "${ENTITYD_BIN:-}" ]]; then
    cp "$ENTITYD_BIN" "$work/entityd"
    ENTITYD_DESC="prebuilt $ENTITYD_BIN"
  elif [[ -n "${REV:-}" ]]; then
    log "building entityd and entityd-bench at $REV (git archive)"
    mkdir -p "$work/src"
    git archive "$REV" | tar -x -C "$work/src"
    (cd "$work/src" && go build -o "$work/entityd" ./cmd/server)
    ENTITYD_DESC="$(git rev-parse --short "$REV") (committed revision, built with git archive)"
  else
    log "building entityd from the working tree"
    go build -o "$work/entityd" ./cmd/server
    ENTITYD_DESC="$(git describe --always --dirty 2>/dev/null || echo unknown) (working tree)"
  fi
  # The load tool always comes from this tree (it may be newer than REV).
  go build -o "$work/entityd-bench" ./cmd/entityd-bench
  export ENTITYD_SLASH_INNER=1 ENTITYD_SLASH_WORK="$work" ENTITYD_SLASH_OUT="$OUT" ENTITYD_DESC
  export WAIT_QUIET="${WAIT_QUIET:-}" REPS SUBSCRIBERS REGISTRATIONS INTERVAL STATIC CONNECT_CONCURRENCY \
    COMMANDS CLIENTS DURATION WARMUP PROFILE PGBIN
  export ONLY="${ONLY:-}" SERVER_ENV="${SERVER_ENV:-}"
  run_inner_under_pg "$here/slash.sh"
fi

# Inner half: PG* and ENTITYD_TEST_DATABASE_URL come from withpg.
work="$ENTITYD_SLASH_WORK"
OUT="$ENTITYD_SLASH_OUT"
bench="$work/entityd-bench"
: "${PGPORT:?run bench/slash.sh, not this half directly}"

# Every subscriber is a socket in the server and one in the load tool: raise the soft
# limit to the hard one (the Go runtime of both does so too, but say it explicitly).
ulimit -n "$(ulimit -Hn)"
if (( $(ulimit -n) < SUBSCRIBERS + 512 )); then
  echo "ulimit -n is $(ulimit -n) (hard $(ulimit -Hn)); $SUBSCRIBERS subscribers need more" >&2
  exit 1
fi


entityd_pid=""
stop_entityd() {
  if [[ -n "$entityd_pid" ]]; then
    kill "$entityd_pid" 2>/dev/null && wait "$entityd_pid" 2>/dev/null
    entityd_pid=""
  fi
  return 0
}
trap stop_entityd EXIT


db_n=0
start_entityd() { # start_entityd <log file>: a fresh server on a fresh database
  db_n=$((db_n + 1))
  local db="entityd_slash_$db_n"
  "$PGBIN/psql" -qAtX -d postgres -c "CREATE DATABASE $db" >/dev/null
  eport="$(free_port)"; dport="$(free_port)"
  # shellcheck disable=SC2086 # SERVER_ENV is a list of NAME=value words
  env $SERVER_ENV DATABASE_URL="postgres://${PGUSER:-postgres}@127.0.0.1:${PGPORT}/$db?sslmode=disable" \
    "$work/entityd" --addr "127.0.0.1:$eport" --debug-addr "127.0.0.1:$dport" --no-demo \
    --log-level warn --sse-lifetime 1h >"$1" 2>&1 &
  entityd_pid=$!
  E="http://127.0.0.1:$eport"
  D="http://127.0.0.1:$dport"
  wait_http "$E/_electric/health" entityd "$entityd_pid"
}

hz="$(getconf CLK_TCK)"
quiet() { # quiet <dir> <name>: wait (WAIT_QUIET) and note the machine's state
  local t0 pct
  if [[ -n "${WAIT_QUIET:-}" ]]; then
    t0=$(date +%s); pct=$(wait_quiet "$WAIT_QUIET")
    echo "$2: waited $(( $(date +%s) - t0 ))s for a quiet machine; CPU busy then: ${pct}%" | tee -a "$1/quiet.txt" >&2
  fi
  echo "$2: loadavg $(cat /proc/loadavg)" >>"$1/quiet.txt"
}

# --- machine facts
log "recording the machine"
pm_pid="$(head -1 "$("$PGBIN/psql" -qAtX -d postgres -c 'show data_directory')/postmaster.pid")"
{
  machine_facts
  echo "entityd: $ENTITYD_DESC${SERVER_ENV:+ (environment: $SERVER_ENV)}; flags --no-demo --log-level warn --sse-lifetime 1h --debug-addr (pprof), otherwise defaults"
  echo "ulimit -n: $(ulimit -n) (hard $(ulimit -Hn)); ephemeral ports $(tr '\t' '-' </proc/sys/net/ipv4/ip_local_port_range); somaxconn $(cat /proc/sys/net/core/somaxconn)"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "runs: REPS=$REPS SUBSCRIBERS=$SUBSCRIBERS REGISTRATIONS=$REGISTRATIONS INTERVAL=$INTERVAL STATIC=$STATIC CONNECT_CONCURRENCY=$CONNECT_CONCURRENCY COMMANDS=$COMMANDS CLIENTS=$CLIENTS DURATION=$DURATION WARMUP=$WARMUP"
  echo "cpu sharing: entityd, PostgreSQL and the load tool all run on these $(nproc) cores (no pinning)"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt" >&2

for rep in $(seq 1 "$REPS"); do
  d="$OUT/rep$rep"
  mkdir -p "$d"
  prof=()

  if [[ "${ONLY:-fanout}" == fanout ]]; then
    log "rep $rep/$REPS: fanout ($SUBSCRIBERS SSE subscribers, $REGISTRATIONS registrations)"
    start_entityd "$d/entityd-fanout.log"
    [[ "$PROFILE" == 1 ]] && prof=(-pprof-out "$d/fanout")
    quiet "$d" fanout
    "$bench" fanout -url "$E" -n "$SUBSCRIBERS" -registrations "$REGISTRATIONS" -interval "$INTERVAL" \
      -static "$STATIC" -connect-concurrency "$CONNECT_CONCURRENCY" \
      -server-pid "$entityd_pid" -pg-pid "$pm_pid" -debug-url "$D" "${prof[@]}" \
      -label entityd -out "$d/fanout.json"
    stop_entityd
  fi
  [[ "${ONLY:-commands}" == commands ]] || continue

  log "rep $rep/$REPS: commands ($COMMANDS commands, $CLIENTS clients, If-None-Match)"
  start_entityd "$d/entityd-commands.log"
  [[ "$PROFILE" == 1 ]] && prof=(-debug-url "$D" -pprof-out "$d/commands-etag")
  quiet "$d" commands-etag
  "$bench" commands -url "$E" -commands "$COMMANDS" -c "$CLIENTS" -d "$DURATION" -warmup "$WARMUP" \
    -server-pid "$entityd_pid" -pg-pid "$pm_pid" "${prof[@]}" -label entityd -out "$d/commands-etag.json"
  log "rep $rep/$REPS: commands (full list, no If-None-Match)"
  [[ "$PROFILE" == 1 ]] && prof=(-debug-url "$D" -pprof-out "$d/commands-full")
  quiet "$d" commands-full
  "$bench" commands -url "$E" -commands "$COMMANDS" -c "$CLIENTS" -d "$DURATION" -warmup "$WARMUP" -no-etag \
    -server-pid "$entityd_pid" -pg-pid "$pm_pid" "${prof[@]}" -label entityd -out "$d/commands-full.json"
  stop_entityd
done

summary "$OUT" >"$OUT/summary.md"
