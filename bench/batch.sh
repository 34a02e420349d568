#!/usr/bin/env bash
# bench/batch.sh runs pt-archiver and `sluice batch run` alternately on
# identical fresh MariaDB tables, runs sluice alone on the same workloads
# on PostgreSQL (pt-archiver is MySQL-only), checks every run's result,
# and writes the medians into the batch section of BENCHMARKS.md (between
# the bench/batch.sh markers; the rest of the file is left as it is).
#
# The table is orders(id, tenant_id, created_at, status, body) with an
# index on (created_at, id); the rows older than the cutoff are purged, or
# archived (moved) to orders_archive in the same database, or to a second
# server of the same engine (a MariaDB instance, a PostgreSQL cluster)
# that this script starts on its own port and data directory. Both
# engines get the same rows, so they move the same number. Every run
# starts from a fresh copy of one template table, and after every run the
# remaining rows' count and checksum, and the archive's, must equal what
# the template says they should be; a run that fails the check is
# reported and left out of the medians.
#
# Both tools commit once per chunk. pt-archiver 3.2.1 (Debian's
# percona-toolkit) runs with --limit CHUNK --commit-each --bulk-delete
# --no-safe-auto-increment (otherwise it never deletes the row holding
# MAX(id)), plus --purge --primary-key-only for the purge and
# --bulk-insert for the archives. sluice runs a keyset batch on the
# primary key with an IN list ({id}) or a key range ({min:id}/{max:id}),
# at fixed chunk sizes and with adaptive sizing.
#
# It assumes the shared MariaDB and PostgreSQL are up and creates the
# database DB on them (and on the second servers). Non-interactive; exits
# non-zero only when it cannot run at all.
#
# Environment (defaults in brackets):
#   ROWS [2000000]    rows in the orders table (400,000 finish in 1-4 s on an idle
#                     2-core machine, where start-up costs blur the ratios)
#   PURGE [ROWS*239954/400000] rows older than the cutoff
#   DATA [scattered]  scattered: the old rows are spread over the ids (a
#                     fixed permutation); ordered: they are the lowest ids
#   RUNS [3]          runs per case; medians are reported
#   CHUNK [1000]      rows per chunk for both tools
#   SIZES ["5000 10000 20000"] further fixed sizes sluice runs, to compare adaptive sizing with
#   TARGET [500ms], MAXCHUNK [30000]: adaptive sizing's target chunk time and largest size
#   ENGINES ["mariadb postgres"] mariadb: pt-archiver and sluice side by side;
#                     postgres: sluice alone, the same cases without pt-archiver
#   WORKLOADS ["purge archive remote"]
#   FORMS ["in range"] sluice's statement forms at CHUNK; ADAPTIVE [1]: also adaptive sizing (range)
#   SLUICE_BIN [built from this tree] the sluice binary to run
#   STRICT [0]        1: exit 1 if any run failed or left wrong rows (the smoke test sets it)
#   MYSQL_HOST [127.0.0.1], MYSQL_PORT [3306] the shared MariaDB (user root, no password)
#   PG_HOST [127.0.0.1], PG_PORT [5432] the shared PostgreSQL (user postgres, trust)
#   DB [sluice_batchbench] the database used on every server (created if missing;
#                     only its orders tables are dropped, never the database)
#   DEST_PORT [free port] the second MariaDB's port; PG_DEST_PORT [free port] the second PostgreSQL's
#   PG_BIN [/usr/lib/postgresql/N/bin for the shared server's major version N, else
#                     the directory of initdb on PATH] initdb and pg_ctl for the second PostgreSQL
#   LABEL [""]        a note printed with the figures (e.g. "machine loaded by other jobs")
#   OUT [BENCHMARKS.md]; OUT=- prints the section instead
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

ROWS=${ROWS:-2000000}
PURGE=${PURGE:-$((ROWS * 239954 / 400000))}
DATA=${DATA:-scattered}
RUNS=${RUNS:-3}
CHUNK=${CHUNK:-1000}
SIZES=${SIZES-"5000 10000 20000"}
TARGET=${TARGET:-500ms}
MAXCHUNK=${MAXCHUNK:-30000}
ENGINES=${ENGINES:-"mariadb postgres"}
WORKLOADS=${WORKLOADS:-"purge archive remote"}
FORMS=${FORMS:-"in range"}
ADAPTIVE=${ADAPTIVE:-1}
STRICT=${STRICT:-0}
MYSQL_HOST=${MYSQL_HOST:-127.0.0.1}
MYSQL_PORT=${MYSQL_PORT:-3306}
PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
LABEL=${LABEL:-}
OUT=${OUT:-BENCHMARKS.md}
DB=${DB:-sluice_batchbench}
CUTOFF="2025-06-01 00:00:00"
WHERE="created_at < '$CUTOFF'"

log() { printf '== [%ds] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'batch.sh: %s\n' "$*" >&2; exit 1; }
# engine NAME: NAME is one of ENGINES.
engine() { [[ " $ENGINES " == *" $1 "* ]]; }

for e in $ENGINES; do
  [[ $e == mariadb || $e == postgres ]] || die "ENGINES: unknown engine $e (want mariadb and/or postgres)"
done
need=(python3)
engine mariadb && need+=(mysql mysqladmin pt-archiver mariadbd mariadb-install-db)
engine postgres && need+=(psql)
for tool in "${need[@]}"; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    die "$tool is required (apt-get install -y percona-toolkit mariadb-server postgresql)"
done
[[ $DATA == scattered || $DATA == ordered ]] || die "DATA must be scattered or ordered"
((PURGE > 0 && PURGE < ROWS)) || die "PURGE must be between 1 and ROWS-1"

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sluice-batchbench.XXXXXX")
chmod 755 "$WORK" # the second servers run as mysql and postgres and keep their data under it
DEST_PID="" PG_DEST_UP=""
# as_postgres runs a PostgreSQL server tool as postgres: initdb and the
# server refuse to run as root.
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
cleanup() {
  if [ -n "$DEST_PID" ]; then
    kill "$DEST_PID" 2>/dev/null || true
    wait "$DEST_PID" 2>/dev/null || true
  fi
  if [ -n "$PG_DEST_UP" ]; then
    as_postgres "$PG_BIN/pg_ctl" -D "$WORK/pgdest/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 130" INT TERM # so that cleanup runs: the second servers are stopped
RESULTS=$WORK/results.tsv
: >"$RESULTS"

src() { mysql -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" -NB "$@"; }
dst() { mysql -uroot -h127.0.0.1 -P"$DEST_PORT" -NB "$@"; }
# pg and pgdst run psql on the shared PostgreSQL and the second one; each
# -c is its own transaction (VACUUM cannot run in one).
pg() { PGOPTIONS="-c client_min_messages=warning" psql -XAtq -v ON_ERROR_STOP=1 -F $'\t' -h "$PG_HOST" -p "$PG_PORT" -U postgres "$@"; }
pgdst() { PGOPTIONS="-c client_min_messages=warning" psql -XAtq -v ON_ERROR_STOP=1 -F $'\t' -h 127.0.0.1 -p "$PG_DEST_PORT" -U postgres "$@"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

if [ -n "${SLUICE_BIN:-}" ]; then
  cp "$SLUICE_BIN" "$WORK/sluice"
else
  log "building sluice"
  go build -o "$WORK/sluice" ./cmd/sluice
fi

if [ "$DATA" = scattered ]; then
  # (id * a prime) mod ROWS permutes 0..ROWS-1 (ROWS shares no factor
  # with the prime), so exactly PURGE ids are old, spread over the table.
  OLD="(seq * 2654435761) % $ROWS < $PURGE"
else
  OLD="seq <= $PURGE"
fi

if engine mariadb; then
  TABLE_DDL="(id BIGINT NOT NULL PRIMARY KEY, tenant_id INT NOT NULL, created_at DATETIME NOT NULL,
    status VARCHAR(16) NOT NULL, body VARCHAR(255) NOT NULL, KEY created_id (created_at, id)) ENGINE=InnoDB"
  log "MariaDB: filling the template: $ROWS rows, $PURGE older than the cutoff ($DATA)"
  src -e "CREATE DATABASE IF NOT EXISTS $DB CHARACTER SET utf8mb4"
  src "$DB" -e "DROP TABLE IF EXISTS orders_template;
    CREATE TABLE orders_template $TABLE_DDL;
    INSERT INTO orders_template
    SELECT seq, 1 + seq % 50,
      IF($OLD, '2024-01-01', '2025-07-01') + INTERVAL seq SECOND,
      ELT(1 + seq % 3, 'open', 'paid', 'shipped'),
      RPAD(CONCAT('order ', seq, ' '), 100 + seq % 100, 'x')
    FROM seq_1_to_$ROWS;"

  # CHECK over a table prints "count sum": a sum of CRC32s sees a missing,
  # an extra, a repeated and a changed row.
  CHECK="COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS('#', id, tenant_id, created_at, status, body))), 0)"
  WANT_LEFT=$(src "$DB" -e "SELECT $CHECK FROM orders_template WHERE NOT ($WHERE)")
  WANT_MOVED=$(src "$DB" -e "SELECT $CHECK FROM orders_template WHERE $WHERE")
  [ "${WANT_MOVED%%	*}" = "$PURGE" ] || die "the MariaDB template has ${WANT_MOVED%%	*} old rows, not $PURGE"
fi

if engine postgres; then
  # The same rows as on MariaDB; the (created_at, id) index is built after
  # each fill, outside the timed runs.
  PG_DDL="(id BIGINT NOT NULL PRIMARY KEY, tenant_id INT NOT NULL, created_at TIMESTAMP NOT NULL,
    status VARCHAR(16) NOT NULL, body VARCHAR(255) NOT NULL)"
  log "PostgreSQL: filling the template: $ROWS rows, $PURGE older than the cutoff ($DATA)"
  [ "$(pg -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" = 1 ] || pg -d postgres -c "CREATE DATABASE $DB"
  pg -d "$DB" -c "DROP TABLE IF EXISTS orders_template" -c "CREATE TABLE orders_template $PG_DDL" -c "
    INSERT INTO orders_template
    SELECT seq, 1 + seq % 50,
      CASE WHEN $OLD THEN TIMESTAMP '2024-01-01' ELSE TIMESTAMP '2025-07-01' END + seq * INTERVAL '1 second',
      (ARRAY['open', 'paid', 'shipped'])[1 + seq % 3],
      rpad('order ' || seq || ' ', (100 + seq % 100)::int, 'x')
    FROM generate_series(1::bigint, $ROWS) AS seq" -c "VACUUM ANALYZE orders_template"

  # PG_CHECK as CHECK: a sum of the first 32 bits of each row's md5 (the
  # same on both PostgreSQL servers, DateStyle ISO on both).
  PG_CHECK="count(*), coalesce(sum(('x' || left(md5(concat_ws('#', id, tenant_id, created_at, status, body)), 8))::bit(32)::int), 0)"
  PG_WANT_LEFT=$(pg -d "$DB" -c "SELECT $PG_CHECK FROM orders_template WHERE NOT ($WHERE)")
  PG_WANT_MOVED=$(pg -d "$DB" -c "SELECT $PG_CHECK FROM orders_template WHERE $WHERE")
  [ "${PG_WANT_MOVED%%	*}" = "$PURGE" ] || die "the PostgreSQL template has ${PG_WANT_MOVED%%	*} old rows, not $PURGE"
fi

# The second servers, for the remote archive.
if [[ " $WORKLOADS " == *" remote "* ]] && engine mariadb; then
  DEST_PORT=${DEST_PORT:-$(free_port)}
  log "starting a second MariaDB on port $DEST_PORT"
  mkdir -p "$WORK/dest/tmp"
  chown -R mysql:mysql "$WORK/dest"
  # A private tmpdir: at start-up mariadbd removes every #sql* file in its
  # tmpdir, which in /tmp would include the shared server's.
  TMPDIR=$WORK/dest/tmp mariadb-install-db --datadir="$WORK/dest/data" --user=mysql --auth-root-authentication-method=normal \
    --skip-test-db --tmpdir="$WORK/dest/tmp" >"$WORK/dest-install.log" 2>&1 || die "mariadb-install-db failed: $(tail -5 "$WORK/dest-install.log")"
  # The same durability and buffer pool as the shared server.
  TMPDIR=$WORK/dest/tmp /usr/sbin/mariadbd --no-defaults --datadir="$WORK/dest/data" --port="$DEST_PORT" --socket="$WORK/dest/sock" \
    --bind-address=127.0.0.1 --user=mysql --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=128M \
    --local-infile=1 --pid-file="$WORK/dest/pid" --tmpdir="$WORK/dest/tmp" >"$WORK/dest.log" 2>&1 &
  DEST_PID=$!
  for _ in $(seq 600); do
    mysqladmin -uroot -h127.0.0.1 -P"$DEST_PORT" ping >/dev/null 2>&1 && break
    kill -0 "$DEST_PID" 2>/dev/null || die "the second MariaDB exited: $(tail -5 "$WORK/dest.log")"
    sleep 0.1
  done
  dst -e "CREATE DATABASE IF NOT EXISTS $DB CHARACTER SET utf8mb4"
fi
if [[ " $WORKLOADS " == *" remote "* ]] && engine postgres; then
  # The shared server's version, from Debian's versioned directory, which
  # is not on PATH.
  pg_major=$(pg -d postgres -c "SELECT current_setting('server_version_num')::int / 10000")
  if [ -z "${PG_BIN:-}" ]; then
    if [ -x "/usr/lib/postgresql/$pg_major/bin/initdb" ]; then
      PG_BIN=/usr/lib/postgresql/$pg_major/bin
    elif command -v initdb >/dev/null; then
      PG_BIN=$(dirname "$(command -v initdb)")
    else
      die "initdb is required for the second PostgreSQL (apt-get install -y postgresql; or set PG_BIN)"
    fi
  fi
  PG_DEST_PORT=${PG_DEST_PORT:-$(free_port)}
  log "starting a second PostgreSQL cluster on port $PG_DEST_PORT ($PG_BIN)"
  mkdir -p "$WORK/pgdest"
  [ "$(id -u)" != 0 ] || chown postgres:postgres "$WORK/pgdest"
  as_postgres "$PG_BIN/initdb" -D "$WORK/pgdest/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$WORK/pgdest-init.log" 2>&1 ||
    die "initdb failed: $(tail -5 "$WORK/pgdest-init.log")"
  # The shared server's settings that matter here: its buffers, WAL size,
  # durability (fsync and synchronous commit on), no autovacuum, and the
  # DateStyle the checksum's text of created_at depends on.
  PG_DEST_UP=1
  as_postgres "$PG_BIN/pg_ctl" -D "$WORK/pgdest/data" -l "$WORK/pgdest/log" -w -t 120 start -o "-p $PG_DEST_PORT -k $WORK/pgdest \
    -c listen_addresses=127.0.0.1 -c shared_buffers=128MB -c max_wal_size=1GB -c autovacuum=off -c fsync=on \
    -c synchronous_commit=on -c TimeZone=UTC -c DateStyle=ISO,MDY" >/dev/null 2>&1 ||
    die "the second PostgreSQL did not start: $(tail -5 "$WORK/pgdest/log")"
  pgdst -d postgres -c "CREATE DATABASE $DB"
fi

# sluice's batches: NAME is WORKLOAD-FORM-SIZE, with SIZE "adaptive" or a
# row count, in one sluice.yaml per engine. The source walks the primary
# key, as pt-archiver does: MariaDB is told to (FORCE INDEX (PRIMARY)),
# otherwise it may read the (created_at, id) index and sort; PostgreSQL's
# planner takes the primary key by itself for ORDER BY id LIMIT n, since
# most rows match the filter (EXPLAIN: Limit -> Index Scan using
# orders_pkey, Index Cond: id > $1, Filter: created_at < ...).
batch_yaml() {
  local engine=$1 workload=$2 form=$3 size=$4 match sink chunk dest from
  if [ "$form" = range ]; then
    match="id BETWEEN {min:id} AND {max:id} AND $WHERE"
  else
    match="id IN ({id})"
  fi
  if [ "$engine" = mariadb ]; then
    dest="mysql://root@127.0.0.1:${DEST_PORT:-}/$DB" from="orders FORCE INDEX (PRIMARY)"
  else
    dest="postgres://postgres@127.0.0.1:${PG_DEST_PORT:-}/$DB" from="orders"
  fi
  case $workload in
    purge) sink="{ sql: \"DELETE FROM orders WHERE $match\" }" ;;
    archive) sink="{ sql: [\"INSERT INTO orders_archive SELECT * FROM orders WHERE $match\", \"DELETE FROM orders WHERE $match\"] }" ;;
    remote) sink="{ copy: { db: \"$dest\", table: orders_archive }, sql: \"DELETE FROM orders WHERE $match\" }" ;;
  esac
  if [ "$size" = adaptive ]; then
    chunk="{ target: $TARGET, min: $CHUNK, max: $MAXCHUNK }"
  else
    chunk="{ size: $size }"
  fi
  local cols="id"
  [ "$workload" = purge ] || cols="*"
  cat <<EOF
  $workload-$form-$size:
    source: "SELECT $cols FROM $from WHERE $WHERE"
    key: [id]
    sink: $sink
    chunk: $chunk
EOF
}

# Cases: ENGINE TOOL WORKLOAD FORM SIZE, in the order they alternate;
# pt-archiver only on MariaDB.
CASES=()
for w in $WORKLOADS; do
  for e in $ENGINES; do
    [ "$e" = mariadb ] && CASES+=("$e pt-archiver $w - $CHUNK")
    for f in $FORMS; do CASES+=("$e sluice $w $f $CHUNK"); done
    if [ "$w" = purge ]; then
      for s in $SIZES; do CASES+=("$e sluice $w range $s"); done
    fi
    if [ "$ADAPTIVE" = 1 ]; then CASES+=("$e sluice $w range adaptive"); fi
  done
done

# sl ENGINE ARGS... runs sluice on ENGINE's database and sluice.yaml, for
# an hour at most.
sl() {
  local e=$1 url
  shift
  if [ "$e" = mariadb ]; then url="mysql://root@$MYSQL_HOST:$MYSQL_PORT/$DB"; else url="postgres://postgres@$PG_HOST:$PG_PORT/$DB"; fi
  SLUICE_DB=$url SLUICE_PREFIX=sluice_ SLUICE_CONFIG=$WORK/$e.yaml timeout 3600 "$WORK/sluice" "$@"
}
for e in $ENGINES; do
  {
    echo "batches:"
    for c in "${CASES[@]}"; do
      read -r engine tool w form size <<<"$c"
      [ "$engine" = "$e" ] && [ "$tool" = sluice ] && batch_yaml "$e" "$w" "$form" "$size"
    done
  } >"$WORK/$e.yaml"
  sl "$e" migrate >/dev/null
done

# fresh ENGINE WORKLOAD: the orders table from the template, an empty archive.
fresh() {
  if [ "$1" = postgres ]; then
    pg -d "$DB" -c "DROP TABLE IF EXISTS orders, orders_archive" -c "CREATE TABLE orders $PG_DDL" \
      -c "INSERT INTO orders SELECT * FROM orders_template ORDER BY id" \
      -c "CREATE INDEX orders_created_id ON orders (created_at, id)" -c "VACUUM ANALYZE orders"
    local archive=(-c "DROP TABLE IF EXISTS orders_archive" -c "CREATE TABLE orders_archive $PG_DDL"
      -c "CREATE INDEX orders_archive_created_id ON orders_archive (created_at, id)")
    case $2 in
      archive) pg -d "$DB" "${archive[@]}" ;;
      remote) pgdst -d "$DB" "${archive[@]}" ;;
    esac
    return
  fi
  src "$DB" -e "DROP TABLE IF EXISTS orders, orders_archive; CREATE TABLE orders $TABLE_DDL;
    INSERT INTO orders SELECT * FROM orders_template; ANALYZE TABLE orders;" >/dev/null
  case $2 in
    archive) src "$DB" -e "CREATE TABLE orders_archive $TABLE_DDL" ;;
    remote) dst "$DB" -e "DROP TABLE IF EXISTS orders_archive; CREATE TABLE orders_archive $TABLE_DDL" ;;
  esac
}

# check ENGINE WORKLOAD: the rows left and the rows archived are exactly the ones wanted.
check() {
  local left moved want_left=${WANT_LEFT:-} want_moved=${WANT_MOVED:-}
  if [ "$1" = postgres ]; then
    want_left=$PG_WANT_LEFT want_moved=$PG_WANT_MOVED
    left=$(pg -d "$DB" -c "SELECT $PG_CHECK FROM orders")
  else
    left=$(src "$DB" -e "SELECT $CHECK FROM orders")
  fi
  [ "$left" = "$want_left" ] || { log "rows left: got $left, want $want_left"; return 1; }
  case $1-$2 in
    mariadb-archive) moved=$(src "$DB" -e "SELECT $CHECK FROM orders_archive") ;;
    mariadb-remote) moved=$(dst "$DB" -e "SELECT $CHECK FROM orders_archive") ;;
    postgres-archive) moved=$(pg -d "$DB" -c "SELECT $PG_CHECK FROM orders_archive") ;;
    postgres-remote) moved=$(pgdst -d "$DB" -c "SELECT $PG_CHECK FROM orders_archive") ;;
    *) return 0 ;;
  esac
  [ "$moved" = "$want_moved" ] || { log "rows archived: got $moved, want $want_moved"; return 1; }
}

PT_SRC="h=$MYSQL_HOST,P=$MYSQL_PORT,u=root,D=$DB,t=orders"
PT_COMMON=(--source "$PT_SRC" --where "$WHERE" --limit "$CHUNK" --commit-each --bulk-delete --no-safe-auto-increment
  --charset utf8 --no-check-charset --no-version-check)

# one ENGINE TOOL WORKLOAD FORM SIZE RUN: a timed run on a fresh table, checked.
one() {
  local e=$1 tool=$2 w=$3 form=$4 size=$5 i=$6 start end status=ok sizes=""
  fresh "$e" "$w"
  start=$(date +%s.%N)
  if [ "$tool" = pt-archiver ]; then
    local args=("${PT_COMMON[@]}")
    case $w in
      purge) args+=(--purge --primary-key-only) ;;
      archive) args+=(--dest "t=orders_archive,L=1" --bulk-insert) ;;
      remote) args+=(--dest "h=127.0.0.1,P=$DEST_PORT,u=root,D=$DB,t=orders_archive,L=1" --bulk-insert) ;;
    esac
    timeout 3600 pt-archiver "${args[@]}" >"$WORK/out" 2>&1 || status=failed
  else
    sl "$e" batch reset "$w-$form-$size" >/dev/null
    sl "$e" batch run "$w-$form-$size" --interval 1h --log-level warn >"$WORK/out" 2>&1 || status=failed
  fi
  end=$(date +%s.%N)
  if [ "$status" = ok ] && ! check "$e" "$w"; then
    status=wrong
  fi
  if [ "$tool" = sluice ] && [ "$size" = adaptive ]; then
    sizes=$(sl "$e" batch status "$w-$form-$size" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["chunk_size"])')
  fi
  [ "$status" = ok ] || log "$e $tool $w $form $size run $i: $status: $(tail -3 "$WORK/out" | tr '\n' ' ')"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$e" "$tool" "$w" "$form" "$size" "$status" "$(awk "BEGIN { print $end - $start }")" "$sizes" >>"$RESULTS"
  log "$e $tool $w $form $size run $i: $status in $(awk "BEGIN { printf \"%.2f\", $end - $start }")s"
}

for i in $(seq "$RUNS"); do
  for c in "${CASES[@]}"; do
    read -r e tool w form size <<<"$c"
    one "$e" "$tool" "$w" "$form" "$size" "$i"
  done
done

log "writing the batch section of $OUT"
export RESULTS ROWS PURGE DATA RUNS CHUNK TARGET MAXCHUNK LABEL
M_DATE=$(date -u '+%Y-%m-%d %H:%M UTC') M_NPROC=$(nproc) M_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
M_MYSQL="" M_PT="" M_PG="" M_PG_DEST=""
if engine mariadb; then
  M_MYSQL=$(src -e "SELECT VERSION()") M_PT=$(pt-archiver --version | awk '{ print $2 }')
fi
if engine postgres; then
  M_PG=$(pg -d "$DB" -c "SHOW server_version")
  [ -z "${PG_DEST_PORT:-}" ] || M_PG_DEST="a second PostgreSQL cluster (own port and data directory, started by the script)"
fi
export M_DATE M_NPROC M_MYSQL M_PT M_COMMIT M_PG M_PG_DEST
python3 - "$OUT" <<'PY'
import os, statistics, sys
from collections import defaultdict

e = os.environ
runs = defaultdict(list)   # (engine, tool, workload, form, size) -> seconds of good runs
bad = defaultdict(int)
settled = defaultdict(list)
for line in open(e["RESULTS"]):
    engine, tool, w, form, size, status, secs, chunk = line.rstrip("\n").split("\t")
    key = (engine, tool, w, form, size)
    if status == "ok":
        runs[key].append(float(secs))
    else:
        bad[key] += 1
    if chunk:
        settled[key].append(chunk)
purged = int(e["PURGE"])
names = {"purge": "Purge", "archive": "Archive to a second table, same database", "remote": "Archive to a second MariaDB instance"}
pg_names = {"purge": "Purge", "archive": "Archive to a second table, same database", "remote": "Archive to a second PostgreSQL cluster"}
targets = {"purge": 2.0, "archive": 2.0, "remote": 1.5}
stmts = {"-": "pt-archiver", "in": "IN list", "range": "key range"}
chunk = e["CHUNK"]

def rate(key):
    return purged / statistics.median(runs[key]) if runs.get(key) else None

def fmt(x):
    return f"{x:,.0f}" if x is not None else "n/a"

def median(k):
    return f"{statistics.median(runs[k]):.2f}" if runs.get(k) else "n/a"

def order(k):
    return (k[1] != "pt-archiver", k[3] != "in", k[4] == "adaptive", int(k[4]) if k[4].isdigit() else 0)

def keys_of(engine, w):
    return sorted((k for k in runs.keys() | bad.keys() if k[0] == engine and k[2] == w), key=order)

def adaptive_vs_fixed(engine, label):
    keys = keys_of(engine, "purge")
    fixed = [(rate(k), k[4]) for k in keys if k[1] == "sluice" and k[3] == "range" and k[4].isdigit() and rate(k)]
    ad = rate((engine, "sluice", "purge", "range", "adaptive"))
    if not (fixed and ad):
        return []
    bf = max(fixed)
    return [f"| {label}, adaptive / best fixed size ({int(bf[1]):,}) | > 1.0 | {ad / bf[0]:.2f} | {'yes' if ad > bf[0] else '**no**'} |"]

versions = []
if e.get("M_MYSQL"):
    versions.append(f"MariaDB {e['M_MYSQL']}, pt-archiver {e['M_PT']}")
if e.get("M_PG"):
    versions.append(f"PostgreSQL {e['M_PG']}")
out = ["<!-- bench/batch.sh:begin -->", "## Batch jobs against pt-archiver", "",
       "Generated by `bench/batch.sh`; do not edit by hand."]
if e.get("LABEL"):
    out += ["", f"**{e['LABEL']}**"]
out += ["",
        f"- Date: {e['M_DATE']}, sluice commit {e['M_COMMIT']}, {e['M_NPROC']} CPUs, {', '.join(versions)}",
        f"- orders(id, tenant_id, created_at, status, body) with an index on (created_at, id): {int(e['ROWS']):,} rows, "
        f"{purged:,} older than the cutoff ({e['DATA']} over the ids){', the same rows on both engines' if len(versions) == 2 else ''}; "
        f"medians of {e['RUNS']} runs, the tools alternating on fresh copies of one table",
        f"- Both tools commit once per chunk of {int(chunk):,} rows (adaptive: from {int(chunk):,} up to {int(e['MAXCHUNK']):,}, target {e['TARGET']} per chunk); "
        "rows/s is the rows moved over the wall time of the whole command",
        "- Every run is checked: the remaining rows' count and checksum, and the archive's, equal the template's; "
        "a run that fails the check is left out and counted under failed",
        ""]
summary = []
for w in ["purge", "archive", "remote"]:
    keys = keys_of("mariadb", w)
    if not keys:
        continue
    pt = rate(("mariadb", "pt-archiver", w, "-", chunk))
    out += [f"### {names[w]}", "", "| tool | statement | chunk | runs ok | failed | median s | rows/s | × pt-archiver | settled chunk |",
            "|---|---|---|---:|---:|---:|---:|---:|---|"]
    best = None
    for k in keys:
        r = rate(k)
        ratio = f"{r / pt:.2f}" if r and pt else "n/a"
        out.append(f"| {k[1]} | {stmts[k[3]]} | {k[4]} | {len(runs.get(k, []))} | {bad.get(k, 0)} | {median(k)} | {fmt(r)} | {ratio} | {', '.join(settled.get(k, []))} |")
        if k[1] == "sluice" and r and k[4] == chunk and (best is None or r > best[1]):
            best = (k, r)
    out.append("")
    if best and pt:
        met = best[1] / pt >= targets[w]
        summary.append(f"| {names[w]}, sluice ({stmts[best[0][3]]}, {int(chunk):,}-row chunks) / pt-archiver "
                       f"| ≥ {targets[w]} | {best[1] / pt:.2f} | {'yes' if met else '**no**'} |")
    if w == "purge":
        summary += adaptive_vs_fixed("mariadb", "Purge")

pg = [k for w in ["purge", "archive", "remote"] for k in keys_of("postgres", w)]
if pg:
    out += ["### PostgreSQL (sluice alone; pt-archiver runs only on MySQL)", "",
            "The same rows, cutoff, chunks and sink statements as on MariaDB, without FORCE INDEX "
            "(the planner walks the primary key by itself)"
            + (f"; the remote archive goes to {e['M_PG_DEST']}, with the shared server's buffers and durability." if e.get("M_PG_DEST") else "."),
            "", "| workload | statement | chunk | runs ok | failed | median s | rows/s | settled chunk |",
            "|---|---|---|---:|---:|---:|---:|---|"]
    for k in pg:
        out.append(f"| {pg_names[k[2]]} | {stmts[k[3]]} | {k[4]} | {len(runs.get(k, []))} | {bad.get(k, 0)} | {median(k)} | {fmt(rate(k))} | {', '.join(settled.get(k, []))} |")
    out.append("")
    summary += adaptive_vs_fixed("postgres", "PostgreSQL purge")
if summary:
    out += ["### Against the targets", "", "| measure | target | measured | met |", "|---|---|---:|---|"] + summary
out += ["", "Reproduce: `bench/batch.sh` (the full size; `ENGINES=mariadb` or `ENGINES=postgres` for one side), or `ROWS=20000 RUNS=1 SIZES= bench/batch.sh` for a quick check.",
        "<!-- bench/batch.sh:end -->"]
section = "\n".join(out) + "\n"

path = sys.argv[1]
if path == "-":
    sys.stdout.write(section)
    sys.exit(0)
try:
    text = open(path).read()
except FileNotFoundError:
    text = "# Benchmarks\n"
begin, end = "<!-- bench/batch.sh:begin -->", "<!-- bench/batch.sh:end -->"
if begin in text and end in text:
    text = text[:text.index(begin)] + section.rstrip("\n") + text[text.index(end) + len(end):]
else:
    text = text.rstrip("\n") + "\n\n" + section
open(path, "w").write(text)
PY
if [ "$STRICT" = 1 ] && cut -f6 "$RESULTS" | grep -qv '^ok$'; then
  die "some runs failed or left wrong rows (STRICT=1)"
fi
log "done"
