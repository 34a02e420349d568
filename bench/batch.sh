#!/usr/bin/env bash
# bench/batch.sh runs pt-archiver and `sluice batch run` alternately on
# identical fresh MariaDB tables, checks both tools' results, and writes
# the medians into the batch section of BENCHMARKS.md (between the
# bench/batch.sh markers; the rest of the file is left as it is).
#
# The table is orders(id, tenant_id, created_at, status, body) with an
# index on (created_at, id); the rows older than the cutoff are purged, or
# archived (moved) to orders_archive in the same database, or to a second
# MariaDB instance that this script starts on its own port and data
# directory. Every run starts from a fresh copy of one template table, and
# after every run the remaining rows' count and checksum, and the
# archive's, must equal what the template says they should be; a run that
# fails the check is reported and left out of the medians.
#
# Both tools commit once per chunk. pt-archiver 3.2.1 (Debian's
# percona-toolkit) runs with --limit CHUNK --commit-each --bulk-delete
# --no-safe-auto-increment (otherwise it never deletes the row holding
# MAX(id)), plus --purge --primary-key-only for the purge and
# --bulk-insert for the archives. sluice runs a keyset batch on the
# primary key with an IN list ({id}) or a key range ({min:id}/{max:id}),
# at fixed chunk sizes and with adaptive sizing.
#
# It assumes the shared MariaDB is up and creates the database
# sluice_batchbench on it. Non-interactive; exits non-zero only when it
# cannot run at all.
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
#   WORKLOADS ["purge archive remote"]
#   FORMS ["in range"] sluice's statement forms at CHUNK; ADAPTIVE [1]: also adaptive sizing (range)
#   SLUICE_BIN [built from this tree] the sluice binary to run
#   STRICT [0]        1: exit 1 if any run failed or left wrong rows (the smoke test sets it)
#   MYSQL_HOST [127.0.0.1], MYSQL_PORT [3306] the shared server (user root, no password)
#   DB [sluice_batchbench] the database used on both servers (dropped tables only, never the database)
#   DEST_PORT [free port] the second instance's port
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
WORKLOADS=${WORKLOADS:-"purge archive remote"}
FORMS=${FORMS:-"in range"}
ADAPTIVE=${ADAPTIVE:-1}
STRICT=${STRICT:-0}
MYSQL_HOST=${MYSQL_HOST:-127.0.0.1}
MYSQL_PORT=${MYSQL_PORT:-3306}
LABEL=${LABEL:-}
OUT=${OUT:-BENCHMARKS.md}
DB=${DB:-sluice_batchbench}
CUTOFF="2025-06-01 00:00:00"
WHERE="created_at < '$CUTOFF'"

log() { printf '== [%ds] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'batch.sh: %s\n' "$*" >&2; exit 1; }

for tool in mysql mysqladmin pt-archiver python3 mariadbd mariadb-install-db; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || die "$tool is required (apt-get install -y percona-toolkit mariadb-server)"
done
[[ $DATA == scattered || $DATA == ordered ]] || die "DATA must be scattered or ordered"
((PURGE > 0 && PURGE < ROWS)) || die "PURGE must be between 1 and ROWS-1"

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sluice-batchbench.XXXXXX")
chmod 755 "$WORK" # the second MariaDB runs as mysql and keeps its data under it
DEST_PID=""
cleanup() {
  if [ -n "$DEST_PID" ]; then
    kill "$DEST_PID" 2>/dev/null || true
    wait "$DEST_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 130" INT TERM # so that cleanup runs: the second MariaDB is stopped
RESULTS=$WORK/results.tsv
: >"$RESULTS"

src() { mysql -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" -NB "$@"; }
dst() { mysql -uroot -h127.0.0.1 -P"$DEST_PORT" -NB "$@"; }

if [ -n "${SLUICE_BIN:-}" ]; then
  cp "$SLUICE_BIN" "$WORK/sluice"
else
  log "building sluice"
  go build -o "$WORK/sluice" ./cmd/sluice
fi

TABLE_DDL="(id BIGINT NOT NULL PRIMARY KEY, tenant_id INT NOT NULL, created_at DATETIME NOT NULL,
  status VARCHAR(16) NOT NULL, body VARCHAR(255) NOT NULL, KEY created_id (created_at, id)) ENGINE=InnoDB"
if [ "$DATA" = scattered ]; then
  # (id * a prime) mod ROWS permutes 0..ROWS-1 (ROWS shares no factor
  # with the prime), so exactly PURGE ids are old, spread over the table.
  OLD="(seq * 2654435761) % $ROWS < $PURGE"
else
  OLD="seq <= $PURGE"
fi
log "filling the template: $ROWS rows, $PURGE older than the cutoff ($DATA)"
src -e "CREATE DATABASE IF NOT EXISTS $DB CHARACTER SET utf8mb4"
src "$DB" -e "DROP TABLE IF EXISTS orders_template;
  CREATE TABLE orders_template $TABLE_DDL;
  INSERT INTO orders_template
  SELECT seq, 1 + seq % 50,
    IF($OLD, '2024-01-01', '2025-07-01') + INTERVAL seq SECOND,
    ELT(1 + seq % 3, 'open', 'paid', 'shipped'),
    RPAD(CONCAT('order ', seq, ' '), 100 + seq % 100, 'x')
  FROM seq_1_to_$ROWS;"

# checksum TABLE [WHERE] prints "count sum" over the rows: a sum of CRC32s
# sees a missing, an extra, a repeated and a changed row.
CHECK="COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS('#', id, tenant_id, created_at, status, body))), 0)"
WANT_LEFT=$(src "$DB" -e "SELECT $CHECK FROM orders_template WHERE NOT ($WHERE)")
WANT_MOVED=$(src "$DB" -e "SELECT $CHECK FROM orders_template WHERE $WHERE")
[ "${WANT_MOVED%%	*}" = "$PURGE" ] || die "the template has ${WANT_MOVED%%	*} old rows, not $PURGE"

# The second MariaDB instance, for the remote archive.
if [[ " $WORKLOADS " == *" remote "* ]]; then
  DEST_PORT=${DEST_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
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

SLUICE_URL="mysql://root@$MYSQL_HOST:$MYSQL_PORT/$DB"
export SLUICE_DB=$SLUICE_URL SLUICE_PREFIX=sluice_ SLUICE_CONFIG=$WORK/sluice.yaml
# sluice's batches: NAME is WORKLOAD-FORM-SIZE, with SIZE "adaptive" or a
# row count. The source walks the primary key, as pt-archiver does.
batch_yaml() {
  local workload=$1 form=$2 size=$3 match sink chunk
  if [ "$form" = range ]; then
    match="id BETWEEN {min:id} AND {max:id} AND $WHERE"
  else
    match="id IN ({id})"
  fi
  case $workload in
    purge) sink="{ sql: \"DELETE FROM orders WHERE $match\" }" ;;
    archive) sink="{ sql: [\"INSERT INTO orders_archive SELECT * FROM orders WHERE $match\", \"DELETE FROM orders WHERE $match\"] }" ;;
    remote) sink="{ copy: { db: \"mysql://root@127.0.0.1:$DEST_PORT/$DB\", table: orders_archive }, sql: \"DELETE FROM orders WHERE $match\" }" ;;
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
    source: "SELECT $cols FROM orders FORCE INDEX (PRIMARY) WHERE $WHERE"
    key: [id]
    sink: $sink
    chunk: $chunk
EOF
}

# Cases: TOOL WORKLOAD FORM SIZE, in the order they alternate.
CASES=()
for w in $WORKLOADS; do
  CASES+=("pt-archiver $w - $CHUNK")
  for f in $FORMS; do CASES+=("sluice $w $f $CHUNK"); done
  if [ "$w" = purge ]; then
    for s in $SIZES; do CASES+=("sluice $w range $s"); done
  fi
  if [ "$ADAPTIVE" = 1 ]; then CASES+=("sluice $w range adaptive"); fi
done
{
  echo "batches:"
  for c in "${CASES[@]}"; do
    read -r tool w form size <<<"$c"
    [ "$tool" = sluice ] && batch_yaml "$w" "$form" "$size"
  done
} >"$SLUICE_CONFIG"
"$WORK/sluice" migrate >/dev/null

# fresh WORKLOAD: the orders table from the template, an empty archive.
fresh() {
  src "$DB" -e "DROP TABLE IF EXISTS orders, orders_archive; CREATE TABLE orders $TABLE_DDL;
    INSERT INTO orders SELECT * FROM orders_template; ANALYZE TABLE orders;" >/dev/null
  case $1 in
    archive) src "$DB" -e "CREATE TABLE orders_archive $TABLE_DDL" ;;
    remote) dst "$DB" -e "DROP TABLE IF EXISTS orders_archive; CREATE TABLE orders_archive $TABLE_DDL" ;;
  esac
}

# check WORKLOAD: the rows left and the rows archived are exactly the ones wanted.
check() {
  local left moved
  left=$(src "$DB" -e "SELECT $CHECK FROM orders")
  [ "$left" = "$WANT_LEFT" ] || { log "rows left: got $left, want $WANT_LEFT"; return 1; }
  case $1 in
    archive) moved=$(src "$DB" -e "SELECT $CHECK FROM orders_archive") ;;
    remote) moved=$(dst "$DB" -e "SELECT $CHECK FROM orders_archive") ;;
    *) return 0 ;;
  esac
  [ "$moved" = "$WANT_MOVED" ] || { log "rows archived: got $moved, want $WANT_MOVED"; return 1; }
}

PT_SRC="h=$MYSQL_HOST,P=$MYSQL_PORT,u=root,D=$DB,t=orders"
PT_COMMON=(--source "$PT_SRC" --where "$WHERE" --limit "$CHUNK" --commit-each --bulk-delete --no-safe-auto-increment
  --charset utf8 --no-check-charset --no-version-check)

# one TOOL WORKLOAD FORM SIZE RUN: a timed run on a fresh table, checked.
one() {
  local tool=$1 w=$2 form=$3 size=$4 i=$5 start end status=ok sizes=""
  fresh "$w"
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
    "$WORK/sluice" batch reset "$w-$form-$size" >/dev/null
    timeout 3600 "$WORK/sluice" batch run "$w-$form-$size" --interval 1h --log-level warn >"$WORK/out" 2>&1 || status=failed
  fi
  end=$(date +%s.%N)
  if [ "$status" = ok ] && ! check "$w"; then
    status=wrong
  fi
  if [ "$tool" = sluice ] && [ "$size" = adaptive ]; then
    sizes=$("$WORK/sluice" batch status "$w-$form-$size" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["chunk_size"])')
  fi
  [ "$status" = ok ] || log "$tool $w $form $size run $i: $status: $(tail -3 "$WORK/out" | tr '\n' ' ')"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$w" "$form" "$size" "$status" "$(awk "BEGIN { print $end - $start }")" "$sizes" >>"$RESULTS"
  log "$tool $w $form $size run $i: $status in $(awk "BEGIN { printf \"%.2f\", $end - $start }")s"
}

for i in $(seq "$RUNS"); do
  for c in "${CASES[@]}"; do
    read -r tool w form size <<<"$c"
    one "$tool" "$w" "$form" "$size" "$i"
  done
done

log "writing the batch section of $OUT"
export RESULTS ROWS PURGE DATA RUNS CHUNK TARGET MAXCHUNK LABEL
M_DATE=$(date -u '+%Y-%m-%d %H:%M UTC') M_NPROC=$(nproc) M_MYSQL=$(src -e "SELECT VERSION()")
M_PT=$(pt-archiver --version | awk '{ print $2 }') M_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
export M_DATE M_NPROC M_MYSQL M_PT M_COMMIT
python3 - "$OUT" <<'PY'
import os, statistics, sys
from collections import defaultdict

e = os.environ
runs = defaultdict(list)   # (tool, workload, form, size) -> seconds of good runs
bad = defaultdict(int)
settled = defaultdict(list)
for line in open(e["RESULTS"]):
    tool, w, form, size, status, secs, chunk = line.rstrip("\n").split("\t")
    key = (tool, w, form, size)
    if status == "ok":
        runs[key].append(float(secs))
    else:
        bad[key] += 1
    if chunk:
        settled[key].append(chunk)
purged = int(e["PURGE"])
names = {"purge": "Purge", "archive": "Archive to a second table, same database", "remote": "Archive to a second MariaDB instance"}
targets = {"purge": 2.0, "archive": 2.0, "remote": 1.5}

def rate(key):
    return purged / statistics.median(runs[key]) if runs.get(key) else None

def fmt(x):
    return f"{x:,.0f}" if x is not None else "n/a"

out = ["<!-- bench/batch.sh:begin -->", "## Batch jobs against pt-archiver", "",
       "Generated by `bench/batch.sh`; do not edit by hand."]
if e.get("LABEL"):
    out += ["", f"**{e['LABEL']}**"]
out += ["",
        f"- Date: {e['M_DATE']}, sluice commit {e['M_COMMIT']}, {e['M_NPROC']} CPUs, MariaDB {e['M_MYSQL']}, pt-archiver {e['M_PT']}",
        f"- orders(id, tenant_id, created_at, status, body) with an index on (created_at, id): {int(e['ROWS']):,} rows, "
        f"{purged:,} older than the cutoff ({e['DATA']} over the ids); medians of {e['RUNS']} runs, the tools alternating on fresh copies of one table",
        f"- Both tools commit once per chunk of {int(e['CHUNK']):,} rows (adaptive: from {int(e['CHUNK']):,} up to {int(e['MAXCHUNK']):,}, target {e['TARGET']} per chunk); "
        "rows/s is the rows moved over the wall time of the whole command",
        "- Every run is checked: the remaining rows' count and checksum, and the archive's, equal the template's; "
        "a run that fails the check is left out and counted under failed",
        ""]
summary = []
for w in ["purge", "archive", "remote"]:
    keys = [k for k in runs.keys() | bad.keys() if k[1] == w]
    if not keys:
        continue
    pt = rate(("pt-archiver", w, "-", e["CHUNK"]))
    out += [f"### {names[w]}", "", "| tool | statement | chunk | runs ok | failed | median s | rows/s | × pt-archiver | settled chunk |",
            "|---|---|---|---:|---:|---:|---:|---:|---|"]
    def order(k):
        return (k[0] != "pt-archiver", k[2] != "in", k[3] == "adaptive", int(k[3]) if k[3].isdigit() else 0)
    best = None
    for k in sorted(keys, key=order):
        r = rate(k)
        ratio = f"{r / pt:.2f}" if r and pt else "n/a"
        stmt = {"-": "pt-archiver", "in": "IN list", "range": "key range"}[k[2]]
        med = f"{statistics.median(runs[k]):.2f}" if runs.get(k) else "n/a"
        out.append(f"| {k[0]} | {stmt} | {k[3]} | {len(runs.get(k, []))} | {bad.get(k, 0)} | {med} | {fmt(r)} | {ratio} | {', '.join(settled.get(k, []))} |")
        if k[0] == "sluice" and r and k[3] == e["CHUNK"] and (best is None or r > best[1]):
            best = (k, r)
    out.append("")
    if best and pt:
        met = best[1] / pt >= targets[w]
        summary.append(f"| {names[w]}, sluice ({'key range' if best[0][2] == 'range' else 'IN list'}, {int(e['CHUNK']):,}-row chunks) / pt-archiver "
                       f"| ≥ {targets[w]} | {best[1] / pt:.2f} | {'yes' if met else '**no**'} |")
    if w == "purge":
        fixed = [(rate(k), k[3]) for k in keys if k[0] == "sluice" and k[2] == "range" and k[3].isdigit() and rate(k)]
        ad = rate(("sluice", w, "range", "adaptive"))
        if fixed and ad:
            bf = max(fixed)
            summary.append(f"| Purge, adaptive / best fixed size ({int(bf[1]):,}) | > 1.0 | {ad / bf[0]:.2f} | {'yes' if ad > bf[0] else '**no**'} |")
out += ["### Against the targets", "", "| measure | target | measured | met |", "|---|---|---:|---|"] + summary
out += ["", "Reproduce: `bench/batch.sh` (the full size), or `ROWS=20000 RUNS=1 SIZES= bench/batch.sh` for a quick check.",
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
if [ "$STRICT" = 1 ] && cut -f5 "$RESULTS" | grep -qv '^ok$'; then
  die "some runs failed or left wrong rows (STRICT=1)"
fi
log "done"
