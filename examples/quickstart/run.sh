#!/usr/bin/env bash
# The quickstart: sluice on an embedded SQLite file with a command handler.
# It builds sluice, starts `sluice work` with examples/quickstart/sluice.yaml,
# enqueues a few jobs (one twice, to show dedupe by business key), waits for
# them to finish and lists them. Run it from the repository root:
#
#   bash examples/quickstart/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

work=$(mktemp -d)
trap 'kill $worker 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
bin=${SLUICE_BIN:-}
if [ -z "$bin" ]; then
  echo "== building sluice"
  go build -o "$work/sluice" ./cmd/sluice
  bin=$work/sluice
fi
# The config's db: (a SQLite file relative to the working directory) is
# the database, as for any user; running in $work makes it a fresh file.
# A SLUICE_DB left in the shell would win over db:, so it goes.
unset SLUICE_DB
export SLUICE_CONFIG="$PWD/examples/quickstart/sluice.yaml"
cd "$work"

echo "== sluice migrate"
"$bin" migrate
echo "== sluice work (in the background)"
"$bin" work --log-level warn &
worker=$!

echo "== enqueuing"
for name in Ann Bob Cleo Ann; do
  printf '%-5s -> ' "$name"
  "$bin" enqueue greet --key "welcome:$name" --payload "{\"name\":\"$name\"}"
done

echo "== waiting for the jobs"
# The three welcome jobs, not an empty queue: the config's schedule keeps
# adding a job every 10 s, and on a slow machine the queue was seldom empty
# when looked at, so the wait ran to its end and listed the schedule's jobs.
# At most 100 looks, then the list shows where the jobs are.
for _ in $(seq 1 100); do
  if [ "$("$bin" jobs list --key-prefix welcome: --status success --json | wc -l)" -ge 3 ]; then break; fi
  sleep 0.1
done
"$bin" jobs list --key-prefix welcome:
echo "== what the command printed for job 1 (its result):"
"$bin" jobs show 1 | grep '"result"'

kill -TERM $worker
wait $worker
echo "== done: the worker shut down cleanly"
