-- One circuit breaker per job type, shared by every node: the workers read
-- it before they start a job of a type that has a breaker, and record each
-- attempt's outcome in it (docs/design.md "Circuit breakers").
CREATE TABLE IF NOT EXISTS sluice_circuits (
  type       VARCHAR(64)  NOT NULL,
  state      VARCHAR(16)  NOT NULL DEFAULT 'closed',
  failures   INT          NOT NULL DEFAULT 0,
  opens      INT          NOT NULL DEFAULT 0,
  manual     BOOLEAN      NOT NULL DEFAULT FALSE,
  open_until DATETIME(6)  NOT NULL,
  probe      VARCHAR(64)  NOT NULL DEFAULT '',
  updated_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (type)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Token buckets of the cluster-wide rate limits, one row per limited type
-- or queue; a worker takes tokens before it claims.
CREATE TABLE IF NOT EXISTS sluice_rate_buckets (
  name       VARCHAR(80) NOT NULL,
  tokens     DOUBLE      NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
