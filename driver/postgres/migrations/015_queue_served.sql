-- Jobs in a queue nothing runs (issue 33): every process that claims jobs
-- (a worker, or a pass of sluice run) stamps served_at on the queues it
-- claims from, at start and then every minute (driver.Driver
-- ServeQueues), so that pending jobs of a queue no process has served
-- lately (a queue no config lists, such as Laravel's ->onQueue('emails'))
-- show in stats, the dashboard and sluice_jobs_in_unserved_queue. A row
-- written only to stamp a queue is not paused.
ALTER TABLE sluice_queues ADD COLUMN IF NOT EXISTS served_at timestamptz;
