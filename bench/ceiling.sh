#!/usr/bin/env bash
# bench/ceiling.sh measures the SQL ceiling of a job queue on each database
# (issue 39): the jobs per second that the minimal statements a queue needs
# per job reach, with no sluice code (bench/ceiling, which imports only the
# database drivers). For each setting, batch B × clients N, a fresh minimal
# table of pending rows; each client loops claiming B rows in one statement
# or transaction (PostgreSQL: UPDATE ... FOR UPDATE SKIP LOCKED ...
# RETURNING; MariaDB: SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE by id;
# SQLite: UPDATE ... RETURNING with a LIMIT subquery on its one writer) and
# completing them by id and owner in the next. Durability is the servers'
# own; SQLite's is sluice's (WAL, synchronous=NORMAL), on a file on disk.
# Jobs/s: completed rows over the clients' run. The best setting of each
# database is the floor that BENCHMARKS.md sets sluice's work/s against
# (bench/compare.sh runs this as its section `ceiling`).
#
# Output: on stdout one JSON line per setting (db, server, batch, clients,
# rows, seconds, claimed, completed, jobs_per_s, ran_dry), then one per
# database with "best": true; progress on stderr. A database that fails is
# reported on stderr, the others still run, and the exit status is 1.
#
# It assumes the servers are up and creates the databases of PG_URL and
# MYSQL_URL when missing.
#
# Environment (defaults in brackets):
#   DBS ["pg mysql sqlite"]
#   PG_URL [postgres://postgres@127.0.0.1:5432/sluice_bench]
#   MYSQL_URL [mysql://root@127.0.0.1:3306/sluice_bench]
#   SQLITE_DIR [${TMPDIR:-/var/tmp}]  where the SQLite file goes: on disk, not a tmpfs
#   BATCHES ["100 500 1000"], CLIENTS ["1 2 4 8"]
#   DURATION [15s]         per setting
#   ROWS [0]               pending rows per setting; 0 sizes them from
#                          DURATION and the best rate so far (1.5 times what
#                          it would claim) and repeats a setting that ran dry
#   TABLE [sluice_ceiling] the table, dropped and recreated per setting
#   CEILING_BIN [unset]    a built bench/ceiling to run instead of building one
# Tiny: DURATION=1s BATCHES=100 CLIENTS=2 ROWS=5000 bench/ceiling.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DBS=${DBS:-"pg mysql sqlite"}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/sluice_bench}
MYSQL_URL=${MYSQL_URL:-mysql://root@127.0.0.1:3306/sluice_bench}
SQLITE_DIR=${SQLITE_DIR:-${TMPDIR:-/var/tmp}}
BATCHES=${BATCHES:-"100 500 1000"}
CLIENTS=${CLIENTS:-"1 2 4 8"}
DURATION=${DURATION:-15s}
ROWS=${ROWS:-0}
TABLE=${TABLE:-sluice_ceiling}

log() { printf '== [%ds] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'ceiling.sh: %s\n' "$*" >&2; exit 1; }

for db in $DBS; do
  [[ " pg mysql sqlite " == *" $db "* ]] || die "DBS: unknown database $db (pg, mysql, sqlite)"
done

BIN=${CEILING_BIN:-}
if [ -z "$BIN" ]; then
  BUILD=$(mktemp -d "${TMPDIR:-/var/tmp}/sluice-ceiling.XXXXXX")
  trap 'rm -rf "$BUILD"' EXIT
  log "building bench/ceiling"
  go build -o "$BUILD/ceiling" ./bench/ceiling
  BIN=$BUILD/ceiling
fi

# create_db DB: its database when missing (best effort: a server that
# refuses fails the run below with its own message).
create_db() {
  case $1 in
    pg)
      if [[ $PG_URL =~ ^(postgres(ql)?://[^/]+)/([A-Za-z0-9_]+)$ ]] && command -v psql >/dev/null; then
        psql "${BASH_REMATCH[1]}/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '${BASH_REMATCH[3]}'" 2>/dev/null | grep -q 1 ||
          psql -q "${BASH_REMATCH[1]}/postgres" -c "CREATE DATABASE ${BASH_REMATCH[3]}" >&2 || true
      fi
      ;;
    mysql)
      if [[ $MYSQL_URL =~ ^mysql://([^:@/]+)(:([^@/]*))?@([^:/]+)(:([0-9]+))?/([A-Za-z0-9_]+)$ ]] && command -v mysql >/dev/null; then
        local args=(-u"${BASH_REMATCH[1]}" -h"${BASH_REMATCH[4]}" -P"${BASH_REMATCH[6]:-3306}")
        [ -n "${BASH_REMATCH[3]}" ] && args+=(-p"${BASH_REMATCH[3]}")
        mysql "${args[@]}" -e "CREATE DATABASE IF NOT EXISTS ${BASH_REMATCH[7]} CHARACTER SET utf8mb4" >&2 || true
      fi
      ;;
  esac
}

# csv "1 2  4": 1,2,4
csv() {
  local a
  read -ra a <<<"$1"
  local IFS=,
  echo "${a[*]}"
}

status=0
for db in $DBS; do
  create_db "$db"
  case $db in
    pg) url=$PG_URL ;;
    mysql) url=$MYSQL_URL ;;
    sqlite)
      rm -f "$SQLITE_DIR/$TABLE.db" "$SQLITE_DIR/$TABLE.db-wal" "$SQLITE_DIR/$TABLE.db-shm"
      url=sqlite:$SQLITE_DIR/$TABLE.db
      ;;
  esac
  log "$db: batches $BATCHES, clients $CLIENTS, $DURATION each"
  if ! "$BIN" -db "$url" -table "$TABLE" -batch "$(csv "$BATCHES")" -clients "$(csv "$CLIENTS")" \
    -duration "$DURATION" -rows "$ROWS" -json; then
    log "$db FAILED"
    status=1
  fi
  if [ "$db" = sqlite ]; then
    rm -f "$SQLITE_DIR/$TABLE.db" "$SQLITE_DIR/$TABLE.db-wal" "$SQLITE_DIR/$TABLE.db-shm"
  fi
done
exit $status
