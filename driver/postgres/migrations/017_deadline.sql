-- Job deadlines (issue 38): a job not started by its deadline is never
-- run late. Claims skip a pending job whose deadline has passed, and the
-- maintenance leader moves such jobs to cancelled with the reason
-- (driver.Driver SweepDeadlines). NULL, as every older row has, is no
-- deadline. The sweep reads the pending jobs that have a deadline in
-- deadline order, a range of this partial index that holds nothing for
-- jobs without one.
ALTER TABLE sluice_jobs ADD COLUMN IF NOT EXISTS deadline timestamptz;

CREATE INDEX IF NOT EXISTS sluice_jobs_deadline ON sluice_jobs (deadline)
  WHERE status = 'pending' AND deadline IS NOT NULL;
