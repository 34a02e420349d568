-- One index over (status, id) serves both the dashboard's listing by status
-- and the purge, which walks a status's rows by id (ids grow with time, so
-- the oldest finished rows come first). MySQL has no partial indexes, so
-- every index here is maintained on every status change of every job: one
-- fewer measured about 15% more claims and completions per second.
DROP INDEX IF EXISTS sluice_jobs_finished ON sluice_jobs;
