# Helpers shared by bench/run.sh, bench/slash.sh and bench/wake.sh (sourced, not run).

log() { printf '\n=== %s  %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# free_port prints a loopback port nobody listens on.
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$(( 20000 + RANDOM % 12000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "no free port" >&2; return 1
}

# wait_http <url> <what> <pid>: until url answers 2xx, or pid exits (30 s at most).
wait_http() {
  for _ in $(seq 1 150); do
    if curl -sf -o /dev/null "$1"; then return 0; fi
    if ! kill -0 "$3" 2>/dev/null; then echo "$2 exited during startup" >&2; return 1; fi
    sleep 0.2
  done
  echo "$2 did not become ready at $1" >&2; return 1
}

# busy_ticks: CPU ticks spent by anything on the machine so far.
busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }

# wait_quiet <secs>: wait up to secs for the machine to be quiet (under 15 % busy over
# 2 s); prints the busy % seen last. Needs $hz (clock ticks per second).
wait_quiet() {
  local deadline=$(( $(date +%s) + $1 )) b0 b1 pct
  while :; do
    b0=$(busy_ticks); sleep 2; b1=$(busy_ticks)
    pct=$(( 100 * (b1 - b0) / (2 * hz * $(nproc)) ))
    if (( pct < 15 )) || (( $(date +%s) >= deadline )); then echo "$pct"; return; fi
  done
}

# run_inner_under_pg <script>: run the inner half of a benchmark script under a throwaway
# PostgreSQL with fsync ON, then print $OUT/summary.md if it succeeded; exits with the
# inner half's status (the outer halves of run.sh, slash.sh and wake.sh end here).
run_inner_under_pg() {
  local rc
  set +e
  go run ./internal/tools/withpg --fsync -- "$1"
  rc=$?
  set -e
  if [[ $rc -eq 0 ]]; then
    log "summary ($OUT/summary.md)"
    cat "$OUT/summary.md"
  fi
  exit $rc
}

# machine_facts [<scratch dir>]: the machine lines every meta.txt starts with (date, CPU,
# memory, kernel, OS, Go, PostgreSQL and its durability settings). Given a scratch dir,
# it also measures the disk with pg_test_fsync (raw output in $OUT/pg_test_fsync.txt).
# Needs PGBIN and OUT, and PG* of the running cluster.
machine_facts() {
  local fsync_line=""
  if [[ -n "${1:-}" && -x "$PGBIN/pg_test_fsync" ]]; then
    "$PGBIN/pg_test_fsync" -s 2 -f "$1/pg_test_fsync.out" >"$OUT/pg_test_fsync.txt" 2>&1 || true
    rm -f "$1/pg_test_fsync.out"
    fsync_line="$(awk '/one 8kB write/{f=1} f && $1=="fdatasync" && $2+0>0 {print $2" ops/s, "$4" µs per 8 kB write+fdatasync"; exit}' "$OUT/pg_test_fsync.txt")"
  fi
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cpu: $(nproc) vCPU, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
  echo "memory: $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel: $(uname -sr)"
  echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "go: $(go env GOVERSION)"
  echo "postgres: $("$PGBIN/postgres" --version)"
  echo "pg settings: $("$PGBIN/psql" -qAtX -d postgres -c "select string_agg(name||'='||current_setting(name), ', ' order by name) from pg_settings where name in ('fsync','synchronous_commit','full_page_writes','shared_buffers','wal_sync_method','max_connections')")"
  if [[ -n "${1:-}" ]]; then
    echo "pg_test_fsync: ${fsync_line:-n/a}"
  fi
}

# ab_outer <inner script> <results prefix>: the outer half of an A/B script. It builds A
# (revision $BASE) and B ($HEAD_REV, or the working tree) and the load tool into a scratch
# directory, then runs the script's inner half under a throwaway PostgreSQL with fsync ON
# (run_inner_under_pg; it does not return). The caller exports its own settings first.
ab_outer() {
  local script="$1" prefix="$2"
  OUT="${OUT:-bench/results/$prefix-$(date -u +%Y%m%d-%H%M%S)}"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  work="$(mktemp -d "${TMPDIR:-/tmp}/entityd-ab.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  ab_build() { # ab_build <rev or ""> <out>: a committed revision with git archive, or the tree
    if [[ -n "$1" ]]; then
      mkdir -p "$work/src-$1"
      git archive "$1" | tar -x -C "$work/src-$1"
      (cd "$work/src-$1" && go build -o "$2" ./cmd/server)
    else
      go build -o "$2" ./cmd/server
    fi
  }
  log "building A ($BASE) and B (${HEAD_REV:-working tree}) and the load tool"
  ab_build "$BASE" "$work/entityd-a"
  ab_build "${HEAD_REV:-}" "$work/entityd-b"
  go build -o "$work/entityd-bench" ./cmd/entityd-bench
  A_DESC="$(git rev-parse --short "$BASE")"
  B_DESC="${HEAD_REV:+$(git rev-parse --short "$HEAD_REV")}"
  B_DESC="${B_DESC:-$(git describe --always --dirty) (working tree)}"
  export ENTITYD_BENCH_INNER=1 ENTITYD_BENCH_WORK="$work" ENTITYD_BENCH_OUT="$OUT" A_DESC B_DESC PGBIN
  run_inner_under_pg "$script"
}

# median: the median of the numbers on stdin ("n/a" when none), two decimals.
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit} printf "%.2f", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# ab_rate_summary <file prefix> <column label> <rate name> <rate key>: the markdown table
# of an A/B run over $CLIENTS (median of $REPS per metric, B/A) and the per-run rates,
# from $OUT/<prefix>-<a|b>-*-c<clients>.json (ab_send.sh, ab_append.sh). Needs A_DESC, B_DESC.
ab_rate_summary() {
  local prefix="$1" label="$2" rate="$3" key="$4"
  field() { for f in "$OUT"/"$prefix"-"$1"-*-c"$2".json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($3)" "$f"; done; }
  echo "| $label | metric | A ($A_DESC) | B ($B_DESC) | B / A |"
  echo "|---:|---|---:|---:|---:|"
  for c in $CLIENTS; do
    for m in "$rate:d['$key']" "p50 ms:d['latency']['p50_ms']" "p99 ms:d['latency']['p99_ms']" "errors:d['errors']"; do
      local name="${m%%:*}" expr="${m#*:}" a b ratio
      a="$(field a "$c" "$expr" | median)"; b="$(field b "$c" "$expr" | median)"
      ratio="$(awk -v a="$a" -v b="$b" 'BEGIN { if (a+0 == 0) print "n/a"; else printf "%.3f", b/a }')"
      echo "| $c | $name (median of $REPS) | $a | $b | $ratio |"
    done
  done
  echo
  echo "per-run $rate — A: $(for c in $CLIENTS; do field a "$c" "d['$key']" | awk '{printf "%.0f ", $1}'; done)"
  echo "per-run $rate — B: $(for c in $CLIENTS; do field b "$c" "d['$key']" | awk '{printf "%.0f ", $1}'; done)"
}

# Auth per variant of an A/B run: A_AUTH and B_AUTH are dev (the default) or jwt. A jwt
# variant's server trusts a fresh Ed25519 key and the load tool sends a token of
# user:bench, who then creates and owns everything the run uses.
# ab_auth_prepare (once, in the inner half), then $(ab_server_auth a|b) on the server's
# command line and $(ab_bench_auth a|b) on the load tool's.
ab_auth_prepare() {
  AB_TOKEN=""
  if [[ "${A_AUTH:-dev}" == jwt || "${B_AUTH:-dev}" == jwt ]]; then
    AB_TOKEN="$("$work/entityd-bench" jwt -pub "$work/jwt.pem" -sub user:bench)"
  fi
}
ab_mode() { if [[ "$1" == a ]]; then echo "${A_AUTH:-dev}"; else echo "${B_AUTH:-dev}"; fi; }
ab_server_auth() { if [[ "$(ab_mode "$1")" == jwt ]]; then echo "--auth jwt --jwt-keys $work/jwt.pem"; fi; }
ab_bench_auth() { if [[ "$(ab_mode "$1")" == jwt ]]; then echo "-token $AB_TOKEN"; fi; }
