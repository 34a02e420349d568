#!/usr/bin/env bash
# bench/compare.sh runs `sluice bench` and River's peer (riverpeer) on the
# same PostgreSQL, alternately so that drift of a shared machine hits both
# alike; then sluice alone on MariaDB and SQLite, the finished-rows preload
# case, the --latency case and the pickup latency of jobs from another
# client and from a plain INSERT on each database. It writes the medians
# and the sluice/River ratios to BENCHMARKS.md.
#
# It assumes the servers are up (as .ci/run starts them) and creates the
# databases sluice_bench (PostgreSQL, MariaDB) and riverpeer (PostgreSQL)
# when missing. riverpeer drops and recreates the public schema of its
# database, so it gets a database of its own and never a shared one.
#
# Environment (defaults in brackets):
#   JOBS [100000]          jobs per run
#   RUNS [3]               runs (pairs on PostgreSQL) per configuration
#   CONCURRENCY ["100 1000"]
#   FINISHED_ROWS [1000000] rows preloaded in the preload case; 0 skips it
#   PRELOAD_JOBS [$JOBS]   jobs worked in the preload case
#   LATENCY_JOBS [1000], LATENCY_RATE [200]
#   PICKUP_JOBS [100], PICKUP_GAP [2s]: jobs from another client and from a
#     plain INSERT, spaced at random around the gap, into idle workers
#   PG_BASE [postgres://postgres@127.0.0.1:5432], MYSQL_URL [mysql://root@127.0.0.1:3306/sluice_bench]
#   RIVERPEER [../shared/bench/riverpeer]: the peer's source directory or a built binary
#   OUT [BENCHMARKS.md]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

JOBS=${JOBS:-100000}
RUNS=${RUNS:-3}
CONCURRENCY=${CONCURRENCY:-"100 1000"}
FINISHED_ROWS=${FINISHED_ROWS:-1000000}
PRELOAD_JOBS=${PRELOAD_JOBS:-$JOBS}
LATENCY_JOBS=${LATENCY_JOBS:-1000}
LATENCY_RATE=${LATENCY_RATE:-200}
PICKUP_JOBS=${PICKUP_JOBS:-100}
PICKUP_GAP=${PICKUP_GAP:-2s}
PG_BASE=${PG_BASE:-postgres://postgres@127.0.0.1:5432}
PG_URL=$PG_BASE/sluice_bench
RIVER_URL=$PG_BASE/riverpeer
MYSQL_URL=${MYSQL_URL:-mysql://root@127.0.0.1:3306/sluice_bench}
RIVERPEER=${RIVERPEER:-../shared/bench/riverpeer}
OUT=${OUT:-BENCHMARKS.md}

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'compare.sh: %s\n' "$*" >&2; exit 1; }

for tool in go psql mysql python3; do
  command -v "$tool" >/dev/null || die "$tool is required"
done

# Work files live on disk (not a tmpfs), so SQLite pays for real writes.
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sluice-compare.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RESULTS=$WORK/results.tsv
: >"$RESULTS"

log "building sluice and riverpeer"
go build -o "$WORK/sluice" ./cmd/sluice
if [ -d "$RIVERPEER" ]; then
  (cd "$RIVERPEER" && go build -o "$WORK/riverpeer" .)
elif [ -x "$RIVERPEER" ]; then
  cp "$RIVERPEER" "$WORK/riverpeer"
else
  die "RIVERPEER=$RIVERPEER is neither the peer's source directory nor an executable"
fi

log "creating the bench databases if missing"
pg_has_db() { psql "$PG_BASE/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$1'" | grep -q 1; }
for db in sluice_bench riverpeer; do
  pg_has_db "$db" || psql -q "$PG_BASE/postgres" -c "CREATE DATABASE $db"
done
# mysql://USER[:PASS]@HOST[:PORT]/DB
[[ $MYSQL_URL =~ ^mysql://([^:@/]+)(:([^@/]*))?@([^:/]+)(:([0-9]+))?/([A-Za-z0-9_]+) ]] ||
  die "MYSQL_URL must look like mysql://USER[:PASS]@HOST[:PORT]/DB"
MYSQL_ARGS=(-u"${BASH_REMATCH[1]}" -h"${BASH_REMATCH[4]}" -P"${BASH_REMATCH[6]:-3306}")
[ -n "${BASH_REMATCH[3]}" ] && MYSQL_ARGS+=(-p"${BASH_REMATCH[3]}")
mysql "${MYSQL_ARGS[@]}" -e "CREATE DATABASE IF NOT EXISTS ${BASH_REMATCH[7]} CHARACTER SET utf8mb4"

# run KIND CONCURRENCY COMMAND...: one bench run; its JSON line is kept
# with its kind. A failed run is reported and left out of the medians.
step=0
run() {
  local kind=$1 conc=$2 out
  shift 2
  step=$((step + 1))
  log "[$step] $kind concurrency $conc"
  if out=$(timeout 1200 "$@" | tail -n 1) && [ -n "$out" ]; then
    printf '%s\t%s\t%s\n' "$kind" "$conc" "$out" >>"$RESULTS"
    printf '   %s\n' "$out" >&2
  else
    printf '%s\t%s\tFAILED\n' "$kind" "$conc" >>"$RESULTS"
    log "$kind concurrency $conc FAILED"
  fi
}
SLUICE=("$WORK/sluice" bench --json --log-level warn)
sqlite_url() { rm -f "$WORK"/bench.db*; echo "sqlite:$WORK/bench.db"; }

for c in $CONCURRENCY; do
  for i in $(seq "$RUNS"); do
    run pg-sluice "$c" "${SLUICE[@]}" --db "$PG_URL" --jobs "$JOBS" --concurrency "$c"
    run pg-river "$c" "$WORK/riverpeer" --db "$RIVER_URL" --jobs "$JOBS" --concurrency "$c"
  done
done
for c in $CONCURRENCY; do
  for i in $(seq "$RUNS"); do
    run mysql-sluice "$c" "${SLUICE[@]}" --db "$MYSQL_URL" --jobs "$JOBS" --concurrency "$c"
    run sqlite-sluice "$c" "${SLUICE[@]}" --db "$(sqlite_url)" --jobs "$JOBS" --concurrency "$c"
  done
done
if [ "$FINISHED_ROWS" -gt 0 ]; then
  c=${CONCURRENCY%% *}
  run pg-preload "$c" "${SLUICE[@]}" --db "$PG_URL" --jobs "$PRELOAD_JOBS" --concurrency "$c" --finished-rows "$FINISHED_ROWS"
  run mysql-preload "$c" "${SLUICE[@]}" --db "$MYSQL_URL" --jobs "$PRELOAD_JOBS" --concurrency "$c" --finished-rows "$FINISHED_ROWS"
  run sqlite-preload "$c" "${SLUICE[@]}" --db "$(sqlite_url)" --jobs "$PRELOAD_JOBS" --concurrency "$c" --finished-rows "$FINISHED_ROWS"
fi
for db in pg mysql sqlite; do
  case $db in
    pg) url=$PG_URL ;;
    mysql) url=$MYSQL_URL ;;
    sqlite) url=$(sqlite_url) ;;
  esac
  run "$db-latency" 100 "${SLUICE[@]}" --db "$url" --latency --jobs "$LATENCY_JOBS" --rate "$LATENCY_RATE" --concurrency 100
  for src in client sql; do
    [ "$db" = sqlite ] && url=$(sqlite_url)
    run "$db-pickup-$src" 10 "${SLUICE[@]}" --db "$url" --latency --latency-source "$src" --jobs "$PICKUP_JOBS" --gap "$PICKUP_GAP" --concurrency 10
  done
done

log "writing $OUT"
export JOBS RUNS FINISHED_ROWS PRELOAD_JOBS LATENCY_JOBS LATENCY_RATE PICKUP_JOBS PICKUP_GAP RESULTS
M_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
M_NPROC=$(nproc)
M_MEM=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
M_CPU=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
M_OS=$(uname -sr)
M_GO=$(go version | awk '{ print $3 }')
M_PG=$(psql "$PG_BASE/postgres" -tAc "SHOW server_version" | awk '{ print $1 }')
M_MYSQL=$(mysql "${MYSQL_ARGS[@]}" -NBe "SELECT VERSION()")
M_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo "+local changes")
export M_DATE M_NPROC M_MEM M_CPU M_OS M_GO M_PG M_MYSQL M_COMMIT
# bench/batch.sh owns the section between its markers: keep it as it is.
batch_section=$(mktemp)
sed -n '/<!-- bench\/batch.sh:begin -->/,/<!-- bench\/batch.sh:end -->/p' "$ROOT/$OUT" 2>/dev/null >"$batch_section" || true
python3 - >"$ROOT/$OUT" <<'PY'
import json, os, statistics

env = os.environ
rows = {}  # (kind, concurrency) -> list of results
failed = []
for line in open(env["RESULTS"]):
    kind, conc, out = line.rstrip("\n").split("\t", 2)
    if out == "FAILED":
        failed.append(f"{kind} concurrency {conc}")
        continue
    rows.setdefault((kind, int(conc)), []).append(json.loads(out))

def med(kind, conc, key):
    vals = [r[key] for r in rows.get((kind, conc), []) if r.get(key) is not None]
    return statistics.median(vals) if vals else None

def n(kind, conc):
    return len(rows.get((kind, conc), []))

def num(v, digits=0):
    return "n/a" if v is None else f"{v:,.{digits}f}"

def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b

def rx(v):
    return "n/a" if v is None else f"{v:.2f}"

concs = sorted({c for (k, c) in rows if k in ("pg-sluice", "pg-river", "mysql-sluice", "sqlite-sluice")})
river_name = next((r.get("system") for k in rows if k[0] == "pg-river" for r in rows[k]), "River")
p = print

p("# Benchmarks")
p()
p("Generated by `bench/compare.sh`; do not edit by hand. Every job is a no-op, so these figures")
p("measure the queue itself: enqueue, claim, completion and their round trips. Absolute numbers on a")
p("shared machine are noisy; the ratios between systems measured in the same run are what matter.")
p()
p(f"- Date: {env['M_DATE']}, sluice commit {env['M_COMMIT']}")
p(f"- Machine: {env['M_NPROC']} CPUs ({env['M_CPU']}), {env['M_MEM']} memory, {env['M_OS']}")
p(f"- PostgreSQL {env['M_PG']}, MariaDB {env['M_MYSQL']}, SQLite (modernc, on disk, WAL), {env['M_GO']}")
p(f"- Peer: {river_name} (`bench/riverpeer` of the shared tree), on the same PostgreSQL server, in a database of its own")
p(f"- {int(env['JOBS']):,} jobs per run; medians of {env['RUNS']} runs per row. sluice and River alternate on PostgreSQL.")
if failed:
    p(f"- **Failed runs (left out):** {', '.join(failed)}")
p()
p("## Throughput")
p()
p("Insert: `EnqueueMany` / `InsertMany` in batches of 5,000. Work: from starting the workers until the last")
p("outcome is written. Latency: from `next_run_at` (the insert) to `finished_at`, so in this bulk mode")
p("it is mostly time spent waiting in the queue behind the other jobs.")
p()
p("| database | system | concurrency | runs | insert/s | work/s | latency p50 ms | latency p99 ms | peak RSS MB |")
p("|---|---|---:|---:|---:|---:|---:|---:|---:|")
labels = [("pg-sluice", "PostgreSQL", "sluice"), ("pg-river", "PostgreSQL", river_name),
          ("mysql-sluice", "MariaDB", "sluice"), ("sqlite-sluice", "SQLite", "sluice")]
for kind, db, system in labels:
    for c in concs:
        if not n(kind, c):
            continue
        p(f"| {db} | {system} | {c:,} | {n(kind, c)} | {num(med(kind, c, 'insert_per_s'))} | {num(med(kind, c, 'work_per_s'))} | "
          f"{num(med(kind, c, 'latency_p50_ms'))} | {num(med(kind, c, 'latency_p99_ms'))} | {num(med(kind, c, 'peak_rss_mb'), 1) if kind != 'pg-river' else 'n/a'} |")
p()

p("## Against the targets")
p()
p("| measure | concurrency | target | measured | met |")
p("|---|---:|---|---:|---|")
def target(measure, c, goal, v, ok):
    met = "n/a" if v is None else ("yes" if ok(v) else "**no**")
    p(f"| {measure} | {c if c is not None else ''} | {goal} | {rx(v) if isinstance(v, float) or v is None else v} | {met} |")
for c in concs:
    target("PostgreSQL work/s, sluice / River", f"{c:,}", "≥ 2.0", ratio(med("pg-sluice", c, "work_per_s"), med("pg-river", c, "work_per_s")), lambda v: v >= 2.0)
for c in concs:
    target("PostgreSQL insert/s, sluice / River", f"{c:,}", "≥ 1.5", ratio(med("pg-sluice", c, "insert_per_s"), med("pg-river", c, "insert_per_s")), lambda v: v >= 1.5)
for c in concs:
    target("MariaDB work/s / River-on-PostgreSQL work/s", f"{c:,}", "≥ 1.0", ratio(med("mysql-sluice", c, "work_per_s"), med("pg-river", c, "work_per_s")), lambda v: v >= 1.0)
for c in concs:
    target("SQLite work/s / River-on-PostgreSQL work/s", f"{c:,}", "≥ 3.0", ratio(med("sqlite-sluice", c, "work_per_s"), med("pg-river", c, "work_per_s")), lambda v: v >= 3.0)
preload = [("pg", "PostgreSQL"), ("mysql", "MariaDB"), ("sqlite", "SQLite")]
for db, name in preload:
    for (k, c), rs in rows.items():
        if k == f"{db}-preload":
            target(f"{name} work/s with {int(env['FINISHED_ROWS']):,} finished rows / empty", f"{c:,}", "≥ 0.9",
                   ratio(med(k, c, "work_per_s"), med(f"{db}-sluice", c, "work_per_s")), lambda v: v >= 0.9)
for db, name in preload:
    limit = 5.0 if db == "pg" else 50.0
    v = med(f"{db}-latency", 100, "latency_p50_ms")
    p(f"| {name} `--latency` p50, ms | | ≤ {limit:g} | {num(v, 1)} | {'n/a' if v is None else ('yes' if v <= limit else '**no**')} |")
rss = [r["peak_rss_mb"] for (k, c), rs in rows.items() if k.endswith("-sluice") for r in rs if r.get("peak_rss_mb")]
v = max(rss) if rss else None
p(f"| peak RSS working {int(env['JOBS']):,} jobs (worst run), MB | | ≤ 150 | {num(v, 1)} | {'n/a' if v is None else ('yes' if v <= 150 else '**no**')} |")
p()

if any(k.endswith("-preload") for k, _ in rows):
    p("## With finished rows")
    p()
    p(f"The table holds {int(env['FINISHED_ROWS']):,} finished rows (preloaded, then analysed) before "
      f"{int(env['PRELOAD_JOBS']):,} jobs are enqueued and worked. One run per database.")
    p()
    p("| database | concurrency | work/s | empty-table work/s | ratio | latency p50 ms | latency p99 ms | peak RSS MB |")
    p("|---|---:|---:|---:|---:|---:|---:|---:|")
    for db, name in preload:
        for (k, c), rs in sorted(rows.items()):
            if k != f"{db}-preload":
                continue
            w, e = med(k, c, "work_per_s"), med(f"{db}-sluice", c, "work_per_s")
            p(f"| {name} | {c:,} | {num(w)} | {num(e)} | {rx(ratio(w, e))} | {num(med(k, c, 'latency_p50_ms'))} | "
              f"{num(med(k, c, 'latency_p99_ms'))} | {num(med(k, c, 'peak_rss_mb'), 1)} |")
    p()

p("## Latency mode")
p()
p(f"`sluice bench --latency`: {int(env['LATENCY_JOBS']):,} single `Enqueue` calls at {env['LATENCY_RATE']}/s from one goroutine")
p("while 100 workers run in the same process; latency runs from the start of the `Enqueue` call to the")
p("start of the handler. One run per database.")
p()
p("| database | enqueued/s | latency p50 ms | latency p99 ms |")
p("|---|---:|---:|---:|")
for db, name in preload:
    if n(f"{db}-latency", 100):
        p(f"| {name} | {num(med(f'{db}-latency', 100, 'insert_per_s'))} | {num(med(f'{db}-latency', 100, 'latency_p50_ms'), 2)} | "
          f"{num(med(f'{db}-latency', 100, 'latency_p99_ms'), 2)} |")
p()

p("## Pickup latency")
p()
p(f"Jobs that the workers' own process did not enqueue, so nothing wakes the workers in-process: "
  f"{int(env['PICKUP_JOBS']):,} jobs, one every {env['PICKUP_GAP']} on average (at random between half and one and a")
p("half times it), into 10 idle workers; from the start of the enqueue call or `INSERT` to the start of the handler.")
p("`client`: `Enqueue` on a second client with a connection pool of its own and no workers, as a web process or")
p("another node enqueues. `sql`: `INSERT INTO sluice_jobs (type, payload) VALUES (?, ?)` on a connection of its own,")
p("as a PHP application does. PostgreSQL's insert trigger sends a `NOTIFY`; idle MySQL and SQLite workers check for")
p("a runnable job every 25 ms with one indexed read. One run per row.")
p()
p("| database | source | latency p50 ms | latency p99 ms | target p50 / p99 ms | met |")
p("|---|---|---:|---:|---|---|")
for db, name in preload:
    for src in ("client", "sql"):
        k = f"{db}-pickup-{src}"
        if not n(k, 10):
            continue
        p50, p99 = med(k, 10, "latency_p50_ms"), med(k, 10, "latency_p99_ms")
        goal = (10.0, None) if db == "pg" else (50.0, 250.0)
        ok = p50 is not None and p50 <= goal[0] and (goal[1] is None or (p99 is not None and p99 <= goal[1]))
        p(f"| {name} | {src} | {num(p50, 1)} | {num(p99, 1)} | ≤ {goal[0]:g}{'' if goal[1] is None else f' / ≤ {goal[1]:g}'} | "
          f"{'n/a' if p50 is None else ('yes' if ok else '**no**')} |")
p()

p("## Reproduce")
p()
p("Start MariaDB and PostgreSQL (`.ci/run` starts them), then from the repository root:")
p()
p("```sh")
p("bench/compare.sh                      # the full run: 100,000 jobs, 3 pairs, 1,000,000 finished rows")
p("JOBS=20000 FINISHED_ROWS=0 bench/compare.sh   # a quick check")
p("```")
p()
p("It builds `sluice` and the River peer (`../shared/bench/riverpeer`, or `RIVERPEER=DIR|BINARY`),")
p("creates the databases `sluice_bench` and `riverpeer` if missing, and rewrites this file. One run by hand:")
p()
p("```sh")
p("sluice bench --db postgres://postgres@127.0.0.1:5432/sluice_bench --jobs 100000 --concurrency 100 --json")
p("sluice bench --db mysql://root@127.0.0.1:3306/sluice_bench --latency")
p("```")
p()
p("<details><summary>Raw results (one JSON line per run)</summary>")
p()
p("```")
for line in open(env["RESULTS"]):
    p(line.rstrip("\n").replace("\t", " "))
p("```")
p()
p("</details>")
PY
if [ -s "$batch_section" ]; then
  { echo; cat "$batch_section"; } >>"$ROOT/$OUT"
fi
rm -f "$batch_section"
log "done: $OUT"
