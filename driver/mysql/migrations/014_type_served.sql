-- Jobs waiting for a handler (issue 24): every process that runs jobs
-- stamps served_at on the types it has handlers for, at start and then
-- every minute (driver.Driver ServeTypes), so that pending jobs of a type
-- no process has served lately show in stats, the dashboard and
-- sluice_jobs_waiting_for_handler.
ALTER TABLE sluice_types ADD COLUMN served_at DATETIME(6) NULL;
