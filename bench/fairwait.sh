#!/usr/bin/env bash
# bench/fairwait.sh measures what fair: true buys a small tenant behind a
# big one: tenant A's backlog of A_JOBS webhook jobs is queued first, then
# tenants B and C queue SMALL jobs each, and PROCS `sluice work` processes
# work the queue, once with fair: true and once without. It prints B's and
# C's wait (finished_at - created_at, database time: the webhook answers at
# once, so this is the time spent queued) as p50/p99, and how many of A's
# jobs finished before the last of B's and C's.
#
# Environment (defaults in brackets):
#   DB [postgres://postgres@127.0.0.1:5432/sluice_fairwait] a database of its own: its sluice_ tables are dropped
#   A_JOBS [20000]  SMALL [100]  PROCS [3]  CONCURRENCY [20]
#   SLUICE_BIN [built from this tree]
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${DB:-postgres://postgres@127.0.0.1:5432/sluice_fairwait}
A_JOBS=${A_JOBS:-20000}
SMALL=${SMALL:-100}
PROCS=${PROCS:-3}
CONCURRENCY=${CONCURRENCY:-20}

log() { printf '== [%ds] %s\n' "$SECONDS" "$*" >&2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sluice-fairwait.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 130" INT TERM

if [ -n "${SLUICE_BIN:-}" ]; then BIN=$SLUICE_BIN; else
  log "building sluice"; go build -o "$WORK/sluice" ./cmd/sluice; BIN=$WORK/sluice
fi

case $DB in
  postgres://*)
    base=${DB%/*}; name=${DB##*/}
    psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" -c "CREATE DATABASE $name"
    sql() { psql -qAt "$DB" -F ' ' -c "$1"; }
    WAIT="EXTRACT(EPOCH FROM finished_at - created_at)"
    SERIES="generate_series(1, $A_JOBS)"
    ;;
  mysql://*)
    rest=${DB#mysql://}; hostport=${rest#*@}; hostport=${hostport%%/*}; name=${DB##*/}
    my() { mysql -uroot -h"${hostport%:*}" -P"${hostport#*:}" -NB "$@"; }
    my -e "DROP DATABASE IF EXISTS $name; CREATE DATABASE $name CHARACTER SET utf8mb4"
    sql() { my "$name" -e "$1"; }
    WAIT="TIMESTAMPDIFF(MICROSECOND, created_at, finished_at) / 1e6"
    SERIES="seq_1_to_$A_JOBS"
    ;;
  *) echo "fairwait.sh: DB must be a postgres:// or mysql:// URL" >&2; exit 1 ;;
esac

# The receiver answers every webhook at once.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 - "$PORT" <<'EOF' &
import sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
PIDS+=($!)
# The workers start only once it listens: on a loaded machine python3 took
# longer to start than the workers to claim, the first attempts of B's and
# C's jobs were refused, and their retries, after the backoff, came after
# A's whole backlog (a CI run saw fair: true lose to fair: false so).
for try in $(seq 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  [ "$try" -lt 300 ] || { echo "fairwait.sh: the receiver on port $PORT did not start within 30 s" >&2; exit 1; }
  sleep 0.1
done

percentile() { # percentile P PARTITION: the wait's P-th percentile (nearest rank), seconds
  sql "SELECT $WAIT FROM sluice_jobs WHERE partition_key = '$2' ORDER BY 1" |
    awk -v p="$1" '{v[NR] = $1} END {i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1; printf "%.1f", v[i]}'
}

run() { # run FAIR
  local fair=$1
  cat >"$WORK/sluice.yaml" <<EOF
db: "$DB"
queues:
  tenants: { concurrency: $CONCURRENCY, fair: $fair }
types:
  hook: { queue: tenants, http: { url: "http://127.0.0.1:$PORT/hook" } }
EOF
  export SLUICE_CONFIG=$WORK/sluice.yaml
  "$BIN" migrate >/dev/null
  sql "DELETE FROM sluice_jobs" >/dev/null
  log "fair: $fair: $A_JOBS jobs of A, then $SMALL each of B and C"
  sql "INSERT INTO sluice_jobs (type, queue, payload, partition_key) SELECT 'hook', 'tenants', '{}', 'A' FROM $SERIES" >/dev/null
  for t in B C; do
    sql "INSERT INTO sluice_jobs (type, queue, payload, partition_key) SELECT 'hook', 'tenants', '{}', '$t' FROM $SERIES LIMIT $SMALL" >/dev/null
  done
  local workers=()
  for _ in $(seq "$PROCS"); do
    "$BIN" work --log-level warn >>"$WORK/work.log" 2>&1 &
    workers+=($!)
  done
  PIDS+=("${workers[@]}")
  while [ "$(sql "SELECT COUNT(*) FROM sluice_jobs WHERE partition_key IN ('B', 'C') AND status <> 'success'")" != 0 ]; do
    sleep 1
  done
  local before
  before=$(sql "SELECT COUNT(*) FROM sluice_jobs WHERE partition_key = 'A' AND status = 'success' AND finished_at <= (SELECT MAX(finished_at) FROM sluice_jobs WHERE partition_key IN ('B', 'C'))")
  for p in "${workers[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${workers[@]}" 2>/dev/null || true
  printf '| %s | %s | %s | %s | %s | %s |\n' "$fair" "$(percentile 50 B)" "$(percentile 99 B)" \
    "$(percentile 50 C)" "$(percentile 99 C)" "$before"
}

echo "A: $A_JOBS jobs queued first; B and C: $SMALL each; $PROCS processes × concurrency $CONCURRENCY; $DB"
echo
echo "| fair | B wait p50 s | B wait p99 s | C wait p50 s | C wait p99 s | A's jobs finished before B's and C's last |"
echo "|---|---:|---:|---:|---:|---:|"
run true
run false
