-- One circuit breaker per job type, shared by every node: the workers read
-- it before they start a job of a type that has a breaker, and record each
-- attempt's outcome in it (docs/design.md "Circuit breakers").
CREATE TABLE IF NOT EXISTS sluice_circuits (
  type       text        PRIMARY KEY,
  state      text        NOT NULL DEFAULT 'closed',
  failures   integer     NOT NULL DEFAULT 0,
  opens      integer     NOT NULL DEFAULT 0,
  manual     boolean     NOT NULL DEFAULT false,
  open_until timestamptz NOT NULL,
  probe      text        NOT NULL DEFAULT '',
  updated_at timestamptz NOT NULL
);

-- Token buckets of the cluster-wide rate limits, one row per limited type
-- or queue; a worker takes tokens before it claims.
CREATE TABLE IF NOT EXISTS sluice_rate_buckets (
  name       text             PRIMARY KEY,
  tokens     double precision NOT NULL,
  updated_at timestamptz      NOT NULL
);
