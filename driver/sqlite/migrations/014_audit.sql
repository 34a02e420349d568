-- The audit trail of operator actions (issue 36): who (a token's name,
-- never its value, or cli:<os user>), from where, what and on what, for
-- every retry, cancel, delete, pause, resume and circuit change made
-- through the API, the dashboard or the CLI (driver.Audit). Rows are
-- written at the database's time and pruned by maintenance after the
-- configured retention (retention.audit).
CREATE TABLE IF NOT EXISTS sluice_audit (
  id       INTEGER PRIMARY KEY,
  at       TEXT    NOT NULL,
  actor    TEXT    NOT NULL,
  source   TEXT    NOT NULL,
  address  TEXT    NOT NULL,
  action   TEXT    NOT NULL,
  target   TEXT    NOT NULL,
  affected INTEGER NOT NULL DEFAULT 0
);

-- The prune deletes by age.
CREATE INDEX IF NOT EXISTS sluice_audit_at ON sluice_audit (at);
