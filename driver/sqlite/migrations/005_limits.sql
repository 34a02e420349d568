-- One circuit breaker per job type, shared by every node: the workers read
-- it before they start a job of a type that has a breaker, and record each
-- attempt's outcome in it (docs/design.md "Circuit breakers").
CREATE TABLE IF NOT EXISTS sluice_circuits (
  type       TEXT    PRIMARY KEY,
  state      TEXT    NOT NULL DEFAULT 'closed',
  failures   INTEGER NOT NULL DEFAULT 0,
  opens      INTEGER NOT NULL DEFAULT 0,
  manual     INTEGER NOT NULL DEFAULT 0,
  open_until TEXT    NOT NULL,
  probe      TEXT    NOT NULL DEFAULT '',
  updated_at TEXT    NOT NULL
);

-- Token buckets of the cluster-wide rate limits, one row per limited type
-- or queue; a worker takes tokens before it claims.
CREATE TABLE IF NOT EXISTS sluice_rate_buckets (
  name       TEXT PRIMARY KEY,
  tokens     REAL NOT NULL,
  updated_at TEXT NOT NULL
);
