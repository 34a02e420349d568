#!/usr/bin/env bash
# bench/compare.sh measures sluice against its peers, each on the database
# it supports, and writes BENCHMARKS.md with the tables, a chart and the
# issue-16 targets marked met or not met:
#
#   throughput  no-op jobs bulk-enqueued then worked, at each CONCURRENCY,
#               RUNS rounds in which every system runs once in turn (so that
#               drift of a shared machine hits all alike), medians reported:
#                 PostgreSQL: sluice, River (InsertMany and -insert fast),
#                             graphile-worker, pg-boss
#                 SQLite:     sluice, River-SQLite, Asynq on Redis (the
#                             cross-store reference), sluice on MariaDB
#                 MariaDB:    sluice, against Asynq and River on PostgreSQL
#   ceiling     the measured SQL ceiling (bench/ceiling.sh): the minimal claim
#               and completion SQL with no sluice code on each database, the
#               best over CEILING_BATCHES × CEILING_CLIENTS; the report states
#               sluice's best throughput work/s as a fraction of it
#   preload     sluice on a table already holding FINISHED_ROWS finished rows
#   scaling     1, 2 and 4 `sluice bench --work-only` processes (the workers
#               of `sluice work` with a no-op handler) sharing one preloaded
#               backlog on PostgreSQL and on MariaDB
#   sustained   SUSTAINED_JOBS through PostgreSQL and MariaDB at a steady
#               SUSTAINED_FRACTION of the measured maximum work/s, with the
#               jobs table's size (and PostgreSQL's dead tuples) sampled
#   hold        the held-back vacuum (issue 39): HOLD_RATE jobs/s offered to
#               HOLD_CONCURRENCY workers on PostgreSQL for HOLD_CLEAN seconds,
#               then a session idle in a transaction that holds an XID (so
#               that vacuum can remove no dead version the queue leaves) for
#               HOLD_HOLD seconds, then HOLD_RECOVERY seconds more; work/s and
#               latency per phase, and the table's dead tuples
#   latency     single enqueues at LATENCY_RATE/s into running workers
#   pickup      jobs from another client and from a plain INSERT
#
# A peer whose runtime is missing (PEERS unset, no node, no Redis, a failed
# build or npm ci) is skipped and listed as skipped, with why.
#
# It assumes the servers are up (as .ci/run starts them) and creates the
# PostgreSQL databases PG_DB and, with PEERS, riverpeer, graphilepeer and
# pgbosspeer, and the MariaDB database of MYSQL_URL, when missing. The peers drop and
# recreate their schemas, so each gets a database of its own; asynqpeer
# flushes the Redis database REDIS_DB.
#
# Environment (defaults in brackets):
#   PEERS [unset]          the peers' source tree (riverpeer, graphilepeer,
#                          pgbosspeer, asynqpeer), e.g. PEERS=../shared/bench;
#                          it is only read. Unset: every peer is skipped.
#   PEER_CACHE [$TMPDIR/sluice-peers]  where the Go peers are built and the
#                          Node peers copied and `npm ci`-ed (kept between runs)
#   SECTIONS ["throughput ceiling preload scaling sustained hold latency pickup"]
#   JOBS [100000]          jobs per throughput run
#   RUNS [3]               rounds per configuration (medians of RUNS)
#   CONCURRENCY ["100 1000"]
#   CEILING_BATCHES ["100 500 1000"], CEILING_CLIENTS ["1 2 4 8"], CEILING_DURATION [15s]
#                          per setting, CEILING_ROWS [0: sized from the duration]
#   FINISHED_ROWS [1000000], PRELOAD_JOBS [$JOBS]: the preload case
#   SCALE_PROCS ["1 2 4"], SCALE_JOBS [$JOBS], SCALE_CONCURRENCY [100] per process
#   SUSTAINED_JOBS [5000000], SUSTAINED_FRACTION [0.7], SUSTAINED_CONCURRENCY [100],
#   SUSTAINED_INTERVAL [1m] (the "minute" of the first/last-minute figures),
#   SUSTAINED_SAMPLE [10] seconds between table-size samples
#   SUSTAINED_PG_BASE [PG_BASE, or when its autovacuum is off a private
#                          cluster]: where PostgreSQL's sustained run goes.
#                          A server without autovacuum cannot keep a queue
#                          table bounded; the private cluster has the shared
#                          server's buffers, WAL size and durability, with
#                          autovacuum at PostgreSQL's defaults, on its own port
#                          and data directory, stopped at the end.
#   HOLD_RATE [800], HOLD_CONCURRENCY [32], HOLD_CLEAN [120], HOLD_HOLD [600],
#   HOLD_RECOVERY [120] (seconds), HOLD_INTERVAL [10s]; PostgreSQL as for the
#                          sustained run (SUSTAINED_PG_BASE)
#   LATENCY_JOBS [5000], LATENCY_RATE [500]
#   PICKUP_JOBS [100], PICKUP_GAP [2s]
#   PG_BASE [postgres://postgres@127.0.0.1:5432], PG_DB [sluice_bench] (sluice's database there),
#   MYSQL_URL [mysql://root@127.0.0.1:3306/sluice_bench]
#   REDIS [127.0.0.1:6379], REDIS_DB [15]
#   OUT [BENCHMARKS.md]; OUT=- prints the report instead
#   SLUICE_BIN [unset: built from this tree]  the sluice binary to measure
#   STRICT [0]             1: exit 1 after writing the report if any run
#                          failed (the smoke run in bench/comparetest)
#   CHART [OUT with .svg for .md; $TMPDIR/sluice-compare.svg with OUT=-]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

SECTIONS=${SECTIONS:-"throughput ceiling preload scaling sustained hold latency pickup"}
JOBS=${JOBS:-100000}
RUNS=${RUNS:-3}
CONCURRENCY=${CONCURRENCY:-"100 1000"}
CEILING_BATCHES=${CEILING_BATCHES:-"100 500 1000"}
CEILING_CLIENTS=${CEILING_CLIENTS:-"1 2 4 8"}
CEILING_DURATION=${CEILING_DURATION:-15s}
CEILING_ROWS=${CEILING_ROWS:-0}
FINISHED_ROWS=${FINISHED_ROWS:-1000000}
PRELOAD_JOBS=${PRELOAD_JOBS:-$JOBS}
SCALE_PROCS=${SCALE_PROCS:-"1 2 4"}
SCALE_JOBS=${SCALE_JOBS:-$JOBS}
SCALE_CONCURRENCY=${SCALE_CONCURRENCY:-100}
SUSTAINED_JOBS=${SUSTAINED_JOBS:-5000000}
SUSTAINED_FRACTION=${SUSTAINED_FRACTION:-0.7}
SUSTAINED_CONCURRENCY=${SUSTAINED_CONCURRENCY:-100}
SUSTAINED_INTERVAL=${SUSTAINED_INTERVAL:-1m}
SUSTAINED_SAMPLE=${SUSTAINED_SAMPLE:-10}
HOLD_RATE=${HOLD_RATE:-800}
HOLD_CONCURRENCY=${HOLD_CONCURRENCY:-32}
HOLD_CLEAN=${HOLD_CLEAN:-120}
HOLD_HOLD=${HOLD_HOLD:-600}
HOLD_RECOVERY=${HOLD_RECOVERY:-120}
HOLD_INTERVAL=${HOLD_INTERVAL:-10s}
LATENCY_JOBS=${LATENCY_JOBS:-5000}
LATENCY_RATE=${LATENCY_RATE:-500}
PICKUP_JOBS=${PICKUP_JOBS:-100}
PICKUP_GAP=${PICKUP_GAP:-2s}
PG_BASE=${PG_BASE:-postgres://postgres@127.0.0.1:5432}
PG_DB=${PG_DB:-sluice_bench}
PG_URL=$PG_BASE/$PG_DB
MYSQL_URL=${MYSQL_URL:-mysql://root@127.0.0.1:3306/sluice_bench}
REDIS=${REDIS:-127.0.0.1:6379}
REDIS_DB=${REDIS_DB:-15}
PEERS=${PEERS:-}
PEER_CACHE=${PEER_CACHE:-${TMPDIR:-/var/tmp}/sluice-peers}
OUT=${OUT:-BENCHMARKS.md}
if [ "$OUT" = - ]; then
  CHART=${CHART:-${TMPDIR:-/tmp}/sluice-compare.svg}
else
  [[ $OUT = /* ]] || OUT=$ROOT/$OUT
  CHART=${CHART:-${OUT%.md}.svg}
fi
[[ $CHART = /* ]] || CHART=$ROOT/$CHART

log() { printf '== [%ds] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'compare.sh: %s\n' "$*" >&2; exit 1; }
has() { [[ " $SECTIONS " == *" $1 "* ]]; }

for tool in go psql mysql python3; do
  command -v "$tool" >/dev/null || die "$tool is required"
done
for s in $SECTIONS; do
  [[ " throughput ceiling preload scaling sustained hold latency pickup " == *" $s "* ]] || die "SECTIONS: unknown section $s"
done

# Work files live on disk (not a tmpfs), so SQLite pays for real writes.
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sluice-compare.XXXXXX")
chmod 755 "$WORK" # a private PostgreSQL runs as postgres and keeps its data under it
BG_PIDS=()
PG_PRIVATE=""
# as_postgres runs a PostgreSQL server tool as postgres: initdb and the
# server refuse to run as root.
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
cleanup() {
  for pid in "${BG_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ -n "$PG_PRIVATE" ]; then
    as_postgres "$PG_PRIVATE/pg_ctl" -D "$WORK/pg/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 130" INT TERM
RESULTS=$WORK/results.tsv # KIND CONCURRENCY JSON|FAILED, one line per run
SKIPPED=$WORK/skipped.tsv # SYSTEM REASON
SAMPLES=$WORK/samples.tsv # DB SECONDS SIZE_MB DEAD_TUPLES LIVE_ROWS
: >"$RESULTS"
: >"$SKIPPED"
: >"$SAMPLES"

if [ -n "${SLUICE_BIN:-}" ]; then
  cp "$SLUICE_BIN" "$WORK/sluice"
else
  log "building sluice"
  go build -o "$WORK/sluice" ./cmd/sluice
fi
# The commit the binary was built from: a long run may see later commits land.
M_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo "+local changes")

log "creating the bench databases if missing"
pg_has_db() { psql "$PG_BASE/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$1'" | grep -q 1; }
peer_dbs=""
[ -n "$PEERS" ] && peer_dbs="riverpeer graphilepeer pgbosspeer" # without PEERS every peer is skipped
for db in $PG_DB $peer_dbs; do
  pg_has_db "$db" || psql -q "$PG_BASE/postgres" -c "CREATE DATABASE $db"
done
# mysql://USER[:PASS]@HOST[:PORT]/DB
[[ $MYSQL_URL =~ ^mysql://([^:@/]+)(:([^@/]*))?@([^:/]+)(:([0-9]+))?/([A-Za-z0-9_]+) ]] ||
  die "MYSQL_URL must look like mysql://USER[:PASS]@HOST[:PORT]/DB"
MYSQL_ARGS=(-u"${BASH_REMATCH[1]}" -h"${BASH_REMATCH[4]}" -P"${BASH_REMATCH[6]:-3306}")
[ -n "${BASH_REMATCH[3]}" ] && MYSQL_ARGS+=(-p"${BASH_REMATCH[3]}")
MYSQL_DB=${BASH_REMATCH[7]}
mysql "${MYSQL_ARGS[@]}" -e "CREATE DATABASE IF NOT EXISTS $MYSQL_DB CHARACTER SET utf8mb4"

# The peers. PEER[name] is its binary or Node script; SKIP[name] says why
# it cannot run. Nothing is written under PEERS: the Go peers are built
# into PEER_CACHE, the Node peers copied there and installed with npm ci.
declare -A PEER SKIP
skip() { SKIP[$1]=$2; printf '%s\t%s\n' "$1" "$2" >>"$SKIPPED"; log "skipping $1: $2"; }
redis_up() { (exec 3<>"/dev/tcp/${REDIS%:*}/${REDIS##*:}") 2>/dev/null; }
build_go_peer() {
  local name=$1
  if go -C "$PEERS/$name" build -o "$PEER_CACHE/$name" . 2>"$WORK/build-$name.log"; then
    PEER[$name]=$PEER_CACHE/$name
  else
    skip "$name" "go build failed: $(tail -n 2 "$WORK/build-$name.log" | tr '\n' ' ')"
  fi
}
install_node_peer() {
  local name=$1 dir=$PEER_CACHE/$1 sum
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    skip "$name" "node and npm are not installed"
    return
  fi
  mkdir -p "$dir"
  cp "$PEERS/$name/package.json" "$PEERS/$name/package-lock.json" "$PEERS/$name"/*.mjs "$dir/"
  sum=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$sum" ]; then
    log "npm ci for $name in $dir"
    if ! (cd "$dir" && npm ci --no-audit --no-fund) >"$WORK/npm-$name.log" 2>&1; then
      skip "$name" "npm ci failed: $(tail -n 2 "$WORK/npm-$name.log" | tr '\n' ' ')"
      return
    fi
    echo "$sum" >"$dir/.installed"
  fi
  PEER[$name]=$dir/bench.mjs
}
if [ -z "$PEERS" ]; then
  for name in riverpeer graphilepeer pgbosspeer asynqpeer; do skip "$name" "PEERS is not set"; done
else
  [ -d "$PEERS" ] || die "PEERS=$PEERS is not a directory"
  PEERS=$(cd "$PEERS" && pwd)
  mkdir -p "$PEER_CACHE"
  log "preparing the peers of $PEERS in $PEER_CACHE"
  build_go_peer riverpeer
  install_node_peer graphilepeer
  install_node_peer pgbosspeer
  if redis_up; then
    build_go_peer asynqpeer
  else
    skip asynqpeer "no Redis answers at $REDIS"
  fi
fi

# run KIND CONCURRENCY COMMAND...: one bench run; its JSON line is kept
# with its kind. A failed run is reported and left out of the medians.
step=0
run() {
  local kind=$1 conc=$2 out
  shift 2
  step=$((step + 1))
  log "[$step] $kind concurrency $conc"
  if out=$(timeout 1800 "$@" 2>"$WORK/stderr" | tail -n 1) && [ -n "$out" ]; then
    printf '%s\t%s\t%s\n' "$kind" "$conc" "$out" >>"$RESULTS"
    printf '   %s\n' "$out" >&2
  else
    printf '%s\t%s\tFAILED\n' "$kind" "$conc" >>"$RESULTS"
    log "$kind concurrency $conc FAILED: $(tail -n 3 "$WORK/stderr" | tr '\n' ' ')"
  fi
}
# peer NAME KIND CONCURRENCY ARGS...: run a peer unless it is skipped.
peer() {
  local name=$1 kind=$2 conc=$3
  shift 3
  [ -n "${SKIP[$name]:-}" ] && return
  if [[ ${PEER[$name]} == *.mjs ]]; then
    run "$kind" "$conc" node "${PEER[$name]}" "$@"
  else
    run "$kind" "$conc" "${PEER[$name]}" "$@"
  fi
}
SLUICE=("$WORK/sluice" bench --json --log-level warn)
sqlite_url() { rm -f "$WORK"/bench.db*; echo "sqlite:$WORK/bench.db"; }

if has throughput; then
  for c in $CONCURRENCY; do
    for i in $(seq "$RUNS"); do
      run pg-sluice "$c" "${SLUICE[@]}" --db "$PG_URL" --jobs "$JOBS" --concurrency "$c"
      peer riverpeer pg-river "$c" -db "$PG_BASE/riverpeer" -jobs "$JOBS" -concurrency "$c"
      peer riverpeer pg-river-fast "$c" -db "$PG_BASE/riverpeer" -jobs "$JOBS" -concurrency "$c" -insert fast
      peer graphilepeer pg-graphile "$c" --db "$PG_BASE/graphilepeer" --jobs "$JOBS" --concurrency "$c"
      peer pgbosspeer pg-pgboss "$c" --db "$PG_BASE/pgbosspeer" --jobs "$JOBS" --concurrency "$c"
    done
  done
  for c in $CONCURRENCY; do
    for i in $(seq "$RUNS"); do
      run sqlite-sluice "$c" "${SLUICE[@]}" --db "$(sqlite_url)" --jobs "$JOBS" --concurrency "$c"
      peer riverpeer sqlite-river "$c" -driver sqlite -db "$WORK/river.sqlite3" -jobs "$JOBS" -concurrency "$c"
      peer asynqpeer redis-asynq "$c" -redis "$REDIS" -redis-db "$REDIS_DB" -jobs "$JOBS" -concurrency "$c"
      run mysql-sluice "$c" "${SLUICE[@]}" --db "$MYSQL_URL" --jobs "$JOBS" --concurrency "$c"
    done
  done
  rm -f "$WORK"/river.sqlite3*
fi

# The SQL ceiling: bench/ceiling.sh on each database in turn, one RESULTS
# line per setting (KIND DB-ceiling, CONCURRENCY its clients); the report
# takes the best. Its SQLite file is in WORK, on disk.
if has ceiling; then
  log "building bench/ceiling"
  go build -o "$WORK/ceiling" ./bench/ceiling
  for db in pg mysql sqlite; do
    step=$((step + 1))
    log "[$step] $db-ceiling: batches $CEILING_BATCHES, clients $CEILING_CLIENTS, $CEILING_DURATION each"
    if DBS=$db PG_URL=$PG_URL MYSQL_URL=$MYSQL_URL SQLITE_DIR=$WORK CEILING_BIN=$WORK/ceiling BATCHES=$CEILING_BATCHES \
      CLIENTS=$CEILING_CLIENTS DURATION=$CEILING_DURATION ROWS=$CEILING_ROWS timeout 3600 bench/ceiling.sh \
      >"$WORK/ceiling.json" 2>"$WORK/stderr" &&
      python3 - "$db" "$WORK/ceiling.json" >>"$RESULTS" <<'PY'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
rs = [r for r in rs if not r.get("best")]
if not rs:
    sys.exit("no settings measured")
for r in rs:
    print(f"{sys.argv[1]}-ceiling\t{r['clients']}\t{json.dumps(r)}")
PY
    then
      grep '"best": *true' "$WORK/ceiling.json" | sed 's/^/   /' >&2 || true
    else
      printf '%s\t%s\tFAILED\n' "$db-ceiling" 0 >>"$RESULTS"
      log "$db-ceiling FAILED: $(tail -n 3 "$WORK/stderr" | tr '\n' ' ')"
    fi
  done
fi

if has preload && [ "$FINISHED_ROWS" -gt 0 ]; then
  c=${CONCURRENCY%% *}
  run pg-preload "$c" "${SLUICE[@]}" --db "$PG_URL" --jobs "$PRELOAD_JOBS" --concurrency "$c" --finished-rows "$FINISHED_ROWS"
  run mysql-preload "$c" "${SLUICE[@]}" --db "$MYSQL_URL" --jobs "$PRELOAD_JOBS" --concurrency "$c" --finished-rows "$FINISHED_ROWS"
  run sqlite-preload "$c" "${SLUICE[@]}" --db "$(sqlite_url)" --jobs "$PRELOAD_JOBS" --concurrency "$c" --finished-rows "$FINISHED_ROWS"
fi

# drop_prefix URL PREFIX: a one-job bench under PREFIX drops the tables
# that --keep, --enqueue-only and --work-only runs left there.
drop_prefix() { "${SLUICE[@]}" --db "$1" --prefix "$2" --jobs 1 --concurrency 1 >/dev/null 2>&1 || log "could not drop the $2 tables of $1"; }

# Scaling out: an --enqueue-only run leaves SCALE_JOBS jobs, then P
# --work-only processes start together and work them down; the aggregate
# is every process's jobs over the latest end less the earliest start.
if has scaling; then
  for i in $(seq "$RUNS"); do
    for db in pg mysql; do
      url=$PG_URL
      [ "$db" = mysql ] && url=$MYSQL_URL
      for p in $SCALE_PROCS; do
        step=$((step + 1))
        log "[$step] $db-scale $p processes"
        if ! "${SLUICE[@]}" --db "$url" --prefix sluice_scale_ --enqueue-only --jobs "$SCALE_JOBS" >"$WORK/enq.json" 2>"$WORK/stderr"; then
          printf '%s\t%s\tFAILED\n' "$db-scale" "$p" >>"$RESULTS"
          log "enqueue-only FAILED: $(tail -n 3 "$WORK/stderr" | tr '\n' ' ')"
          continue
        fi
        pids=()
        for k in $(seq "$p"); do
          timeout 1800 "${SLUICE[@]}" --db "$url" --prefix sluice_scale_ --work-only --concurrency "$SCALE_CONCURRENCY" \
            >"$WORK/scale-$k.json" 2>"$WORK/scale-$k.err" &
          pids+=($!)
        done
        ok=1
        for pid in "${pids[@]}"; do wait "$pid" || ok=0; done
        if [ $ok = 1 ] && out=$(python3 - "$WORK/enq.json" $(seq -f "$WORK/scale-%g.json" "$p") <<'PY'
import json, sys
enq = json.load(open(sys.argv[1]))
rs = [json.load(open(f)) for f in sys.argv[2:]]
jobs = sum(r["jobs"] for r in rs)
if jobs != enq["jobs"]:
    sys.exit(f"the processes worked {jobs} jobs of {enq['jobs']}")
secs = max(r["work_ended_unix"] for r in rs) - min(r["work_started_unix"] for r in rs)
print(json.dumps({"db": enq["db"], "mode": "scale", "processes": len(rs), "jobs": jobs, "concurrency": rs[0]["concurrency"],
                  "work_per_s": jobs / secs, "per_process_jobs": [r["jobs"] for r in rs],
                  "peak_rss_mb": max(r["peak_rss_mb"] for r in rs)}))
PY
        ); then
          printf '%s\t%s\t%s\n' "$db-scale" "$p" "$out" >>"$RESULTS"
          printf '   %s\n' "$out" >&2
        else
          printf '%s\t%s\tFAILED\n' "$db-scale" "$p" >>"$RESULTS"
          log "$db-scale $p FAILED: $(cat "$WORK"/scale-*.err | tail -n 3 | tr '\n' ' ')"
        fi
        rm -f "$WORK"/scale-*
      done
      drop_prefix "$url" sluice_scale_
    done
  done
fi

# sample DB SECONDS [KEY TABLE]: the sustained run's jobs table (or TABLE,
# recorded under KEY) on disk, its rows (MariaDB: InnoDB's estimate) and on
# PostgreSQL its dead tuples.
sample() {
  local row key=${3:-$1} table=${4:-sluice_sustained_jobs}
  if [ "$1" = pg ]; then
    row=$(psql "$SUSTAINED_PG_URL" -tA -F $'\t' -c "SELECT round(pg_total_relation_size(relid) / 1048576.0, 1), n_dead_tup, n_live_tup
      FROM pg_stat_user_tables WHERE relname = '$table'" 2>/dev/null || true)
  else
    # The tablespace file's size: data_length and index_length are
    # InnoDB's statistics, refreshed only now and then.
    row=$(mysql "${MYSQL_ARGS[@]}" -NB "$MYSQL_DB" -e "SELECT ROUND(s.file_size / 1048576, 1), '', t.table_rows
      FROM information_schema.innodb_sys_tablespaces s JOIN information_schema.tables t
        ON t.table_schema = DATABASE() AND t.table_name = 'sluice_sustained_jobs'
      WHERE s.name = CONCAT(DATABASE(), '/sluice_sustained_jobs')" 2>/dev/null || true)
  fi
  [ -n "$row" ] && printf '%s\t%s\t%s\n' "$key" "$2" "$row" >>"$SAMPLES"
  return 0
}

# start_private_pg: a PostgreSQL cluster of the shared server's version on a
# free port, with its settings but autovacuum at the defaults; prints its base URL.
start_private_pg() {
  local major bin port
  major=$(psql "$PG_BASE/postgres" -tAc "SELECT current_setting('server_version_num')::int / 10000")
  bin=/usr/lib/postgresql/$major/bin
  [ -x "$bin/initdb" ] || bin=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
  [ -x "$bin/initdb" ] || die "initdb is required for the sustained run's PostgreSQL (or set SUSTAINED_PG_BASE)"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$WORK/pg"
  [ "$(id -u)" != 0 ] || chown postgres:postgres "$WORK/pg"
  as_postgres "$bin/initdb" -D "$WORK/pg/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$WORK/pg-init.log" 2>&1 ||
    die "initdb failed: $(tail -5 "$WORK/pg-init.log")"
  PG_PRIVATE=$bin
  as_postgres "$bin/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/log" -w -t 120 start -o "-p $port -k $WORK/pg \
    -c listen_addresses=127.0.0.1 -c shared_buffers=$(psql "$PG_BASE/postgres" -tAc 'SHOW shared_buffers') \
    -c max_wal_size=$(psql "$PG_BASE/postgres" -tAc 'SHOW max_wal_size') -c fsync=on -c synchronous_commit=on" >/dev/null 2>&1 ||
    die "the sustained run's PostgreSQL did not start: $(tail -5 "$WORK/pg/log")"
  SUSTAINED_PG_BASE="postgres://postgres@127.0.0.1:$port"
}

# vacuum_pg sets SUSTAINED_PG_URL, the PostgreSQL of the runs whose figures
# depend on vacuum (sustained, hold): SUSTAINED_PG_BASE, or the shared
# server, or when its autovacuum is off a private cluster, started once.
M_SUSTAINED_PG=""
vacuum_pg() {
  if [ -z "${SUSTAINED_PG_BASE:-}" ]; then
    if [ "$(psql "$PG_BASE/postgres" -tAc 'SHOW autovacuum')" = off ]; then
      log "the shared PostgreSQL runs without autovacuum: starting a private cluster for the sustained and hold runs"
      start_private_pg
      psql -q "$SUSTAINED_PG_BASE/postgres" -c "CREATE DATABASE $PG_DB"
      M_SUSTAINED_PG="a private cluster started by the script (the shared server runs with autovacuum off), with the shared server's shared_buffers, max_wal_size and durability and PostgreSQL's default autovacuum settings"
    else
      SUSTAINED_PG_BASE=$PG_BASE
    fi
  fi
  SUSTAINED_PG_URL=$SUSTAINED_PG_BASE/$PG_DB
}

# Sustained load: the rate is SUSTAINED_FRACTION of the median work/s
# measured above at SUSTAINED_CONCURRENCY, or of a bulk run made for it.
if has sustained; then
  vacuum_pg
  for db in pg mysql; do
    url=$SUSTAINED_PG_URL
    [ "$db" = mysql ] && url=$MYSQL_URL
    max=$(python3 - "$RESULTS" "$db-sluice" "$SUSTAINED_CONCURRENCY" <<'PY'
import json, statistics, sys
vals = [json.loads(o)["work_per_s"] for k, c, o in (l.rstrip("\n").split("\t", 2) for l in open(sys.argv[1]))
        if k == sys.argv[2] and c == sys.argv[3] and o != "FAILED"]
print(statistics.median(vals) if vals else "")
PY
    )
    if [ -z "$max" ]; then
      run "$db-sluice" "$SUSTAINED_CONCURRENCY" "${SLUICE[@]}" --db "$url" --jobs "$JOBS" --concurrency "$SUSTAINED_CONCURRENCY"
      max=$(tail -n 1 "$RESULTS" | cut -f3 | python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["work_per_s"])' 2>/dev/null || true)
    fi
    if [ -z "$max" ]; then
      printf '%s\t%s\tFAILED\n' "$db-sustained" "$SUSTAINED_CONCURRENCY" >>"$RESULTS"
      log "$db-sustained FAILED: no maximum work/s to pace it by"
      continue
    fi
    rate=$(python3 -c "print(round($max * $SUSTAINED_FRACTION))")
    # Twice the paced duration, plus ten minutes, bounds the run.
    limit=$(python3 -c "print(int($SUSTAINED_JOBS / $rate * 2) + 600)")
    step=$((step + 1))
    log "[$step] $db-sustained: $SUSTAINED_JOBS jobs at $rate/s (max $max/s)"
    "${SLUICE[@]}" --db "$url" --prefix sluice_sustained_ --sustained --keep --jobs "$SUSTAINED_JOBS" --rate "$rate" \
      --concurrency "$SUSTAINED_CONCURRENCY" --interval "$SUSTAINED_INTERVAL" --timeout "${limit}s" >"$WORK/sustained.json" 2>"$WORK/stderr" &
    bench_pid=$!
    BG_PIDS+=("$bench_pid")
    start=$SECONDS
    while kill -0 "$bench_pid" 2>/dev/null; do
      sample "$db" $((SECONDS - start))
      for _ in $(seq "$SUSTAINED_SAMPLE"); do
        kill -0 "$bench_pid" 2>/dev/null || break
        sleep 1
      done
    done
    if wait "$bench_pid" && out=$(tail -n 1 "$WORK/sustained.json") && [ -n "$out" ]; then
      sample "$db" $((SECONDS - start)) # the end: the tables were kept
      printf '%s\t%s\t%s\n' "$db-sustained" "$SUSTAINED_CONCURRENCY" "$out" >>"$RESULTS"
      printf '   %s\n' "$out" >&2
    else
      printf '%s\t%s\tFAILED\n' "$db-sustained" "$SUSTAINED_CONCURRENCY" >>"$RESULTS"
      log "$db-sustained FAILED: $(tail -n 3 "$WORK/stderr" | tr '\n' ' ')"
    fi
    drop_prefix "$url" sluice_sustained_
  done
fi

# The held-back vacuum: the same phases and measures as the
# idle-in-transaction scenario of the public harness
# hardbyte/postgresql-job-queue-benchmarking (clean, an XID held idle in a
# transaction, recovery, at a steady offered rate). The phases start from
# the first job in the table, within a poll of the bench's own start; the
# report drops the first interval as warm-up.
if has hold; then
  vacuum_pg
  total=$((HOLD_CLEAN + HOLD_HOLD + HOLD_RECOVERY))
  jobs=$((HOLD_RATE * total))
  step=$((step + 1))
  log "[$step] pg-hold: $HOLD_RATE jobs/s to $HOLD_CONCURRENCY workers, ${HOLD_CLEAN}s clean, ${HOLD_HOLD}s held, ${HOLD_RECOVERY}s recovery"
  drop_prefix "$SUSTAINED_PG_URL" sluice_hold_
  "${SLUICE[@]}" --db "$SUSTAINED_PG_URL" --prefix sluice_hold_ --sustained --keep --jobs "$jobs" --rate "$HOLD_RATE" \
    --concurrency "$HOLD_CONCURRENCY" --interval "$HOLD_INTERVAL" --timeout "$((total * 3 + 600))s" >"$WORK/hold.json" 2>"$WORK/stderr" &
  bench_pid=$!
  BG_PIDS+=("$bench_pid")
  for _ in $(seq 600); do
    [ "$(psql "$SUSTAINED_PG_URL" -tAc "SELECT EXISTS (SELECT 1 FROM sluice_hold_jobs)" 2>/dev/null)" = t ] && break
    kill -0 "$bench_pid" 2>/dev/null || break
    sleep 0.1
  done
  t0=$(date +%s.%N)
  at() { awk -v t0="$t0" -v t="$(date +%s.%N)" 'BEGIN { printf "%.1f", t - t0 }'; } # seconds since the first job
  hold_sample() { sample pg "$(at | cut -d. -f1)" pg-hold sluice_hold_jobs; }
  hold_sample
  sleep_phase() { # sleep_phase SECONDS: sleeps, sampling the table every SUSTAINED_SAMPLE seconds
    local end=$((SECONDS + $1))
    while ((SECONDS < end)) && kill -0 "$bench_pid" 2>/dev/null; do
      sleep "$((end - SECONDS < SUSTAINED_SAMPLE ? end - SECONDS : SUSTAINED_SAMPLE))"
      hold_sample
    done
  }
  sleep_phase "$HOLD_CLEAN"
  # The holder: BEGIN and txid_current() give the session an XID, and it
  # then sits idle in the transaction until COMMIT.
  { printf 'BEGIN;\nSELECT txid_current();\n'; sleep "$HOLD_HOLD"; printf 'COMMIT;\n'; } | psql -q "$SUSTAINED_PG_URL" >/dev/null 2>&1 &
  holder=$!
  BG_PIDS+=("$holder")
  hold_from=$(at)
  sleep_phase "$HOLD_HOLD"
  wait "$holder" || log "the holding session ended with an error"
  hold_to=$(at)
  while kill -0 "$bench_pid" 2>/dev/null; do sleep_phase "$SUSTAINED_SAMPLE"; done
  if wait "$bench_pid" && out=$(tail -n 1 "$WORK/hold.json") && [ -n "$out" ]; then
    hold_sample
    out=$(python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r.update(hold_from_s=float(sys.argv[2]), hold_to_s=float(sys.argv[3])); print(json.dumps(r))' \
      "$out" "$hold_from" "$hold_to")
    printf '%s\t%s\t%s\n' pg-hold "$HOLD_CONCURRENCY" "$out" >>"$RESULTS"
  else
    printf '%s\t%s\tFAILED\n' pg-hold "$HOLD_CONCURRENCY" >>"$RESULTS"
    log "pg-hold FAILED: $(tail -n 3 "$WORK/stderr" | tr '\n' ' ')"
  fi
  drop_prefix "$SUSTAINED_PG_URL" sluice_hold_
fi

if has latency; then
  for db in pg mysql sqlite; do
    case $db in
      pg) url=$PG_URL ;;
      mysql) url=$MYSQL_URL ;;
      sqlite) url=$(sqlite_url) ;;
    esac
    run "$db-latency" 100 "${SLUICE[@]}" --db "$url" --latency --jobs "$LATENCY_JOBS" --rate "$LATENCY_RATE" --concurrency 100
  done
fi
if has pickup; then
  for db in pg mysql sqlite; do
    for src in client sql; do
      case $db in
        pg) url=$PG_URL ;;
        mysql) url=$MYSQL_URL ;;
        sqlite) url=$(sqlite_url) ;;
      esac
      run "$db-pickup-$src" 10 "${SLUICE[@]}" --db "$url" --latency --latency-source "$src" --jobs "$PICKUP_JOBS" --gap "$PICKUP_GAP" --concurrency 10
    done
  done
fi

log "writing the report"
M_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
M_NPROC=$(nproc)
M_MEM=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
M_CPU=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
M_OS=$(uname -sr)
M_GO=$(go version | awk '{ print $3 }')
M_NODE=$(node --version 2>/dev/null || echo none)
M_PG=$(psql "$PG_BASE/postgres" -tAc "SHOW server_version" | awk '{ print $1 }')
M_MYSQL=$(mysql "${MYSQL_ARGS[@]}" -NBe "SELECT VERSION()")
M_FLUSH=$(mysql "${MYSQL_ARGS[@]}" -NBe "SELECT @@innodb_flush_log_at_trx_commit")
M_REDIS_AOF=$(redis-cli -h "${REDIS%:*}" -p "${REDIS##*:}" config get appendonly 2>/dev/null | tail -n 1 || true)
CHART_DATA=$WORK/chart.json
export CEILING_DURATION CEILING_ROWS
export JOBS RUNS FINISHED_ROWS PRELOAD_JOBS LATENCY_JOBS LATENCY_RATE PICKUP_JOBS PICKUP_GAP RESULTS SKIPPED SAMPLES \
  SCALE_JOBS SCALE_CONCURRENCY SUSTAINED_JOBS SUSTAINED_FRACTION SUSTAINED_INTERVAL SUSTAINED_CONCURRENCY CHART_DATA \
  HOLD_RATE HOLD_CONCURRENCY HOLD_CLEAN HOLD_HOLD HOLD_RECOVERY HOLD_INTERVAL
export M_DATE M_NPROC M_MEM M_CPU M_OS M_GO M_NODE M_PG M_MYSQL M_FLUSH M_REDIS_AOF M_COMMIT M_SUSTAINED_PG
export CHART_LINK=${CHART##*/}
REPORT=$WORK/report.md
python3 -B "$ROOT/bench/compare_report.py" >"$REPORT"
go run ./bench/chart <"$CHART_DATA" >"$CHART" || die "the chart failed"
log "chart: $CHART"
# bench/batch.sh owns the section between its markers, and the analysis
# of where the time goes is written by hand between its own: keep them.
if [ "$OUT" != - ] && [ -f "$OUT" ]; then
  for part in analysis bench/batch.sh; do
    sed -n "\|<!-- $part:begin -->|,\|<!-- $part:end -->|p" "$OUT" >"$WORK/kept.md"
    if [ -s "$WORK/kept.md" ]; then
      { echo; cat "$WORK/kept.md"; } >>"$REPORT"
    fi
  done
fi
if [ "$OUT" = - ]; then
  cat "$REPORT"
else
  cp "$REPORT" "$OUT"
fi
log "done: $OUT in ${SECONDS}s"
if [ "${STRICT:-0}" = 1 ] && grep -q $'\tFAILED$' "$RESULTS"; then
  die "runs failed: $(awk -F'\t' '$3 == "FAILED" { printf "%s (concurrency %s) ", $1, $2 }' "$RESULTS")"
fi
