-- Wake workers as soon as runnable jobs are inserted, by sluice or by an
-- application's own INSERT. One statement-level trigger sends one
-- notification per queue per statement, and PostgreSQL folds identical
-- notifications within a transaction, so bulk inserts stay cheap.
CREATE OR REPLACE FUNCTION sluice_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('sluice_jobs', q.queue)
  FROM (SELECT DISTINCT queue FROM sluice_new_jobs WHERE status = 'pending' AND next_run_at <= now()) q;
  RETURN NULL;
END;
$$;

DROP TRIGGER IF EXISTS sluice_jobs_notify ON sluice_jobs;

CREATE TRIGGER sluice_jobs_notify AFTER INSERT ON sluice_jobs
  REFERENCING NEW TABLE AS sluice_new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION sluice_jobs_notify();
