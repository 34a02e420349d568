-- The last slot each schedule handled. Every node runs the scheduler; the
-- version column makes advancing a schedule a compare-and-set, and the
-- slot's job key makes each slot fire once whoever gets there first.
CREATE TABLE IF NOT EXISTS sluice_schedules (
  name        text        PRIMARY KEY,
  last_slot   timestamptz NOT NULL,
  last_job_id bigint      NULL,
  version     bigint      NOT NULL DEFAULT 0,
  fires       bigint      NOT NULL DEFAULT 0,
  skips       bigint      NOT NULL DEFAULT 0,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
