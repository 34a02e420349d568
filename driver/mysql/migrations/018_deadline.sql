-- Job deadlines (issue 38): a job not started by its deadline is never
-- run late. Claims skip a pending job whose deadline has passed, and the
-- maintenance leader moves such jobs to cancelled with the reason
-- (driver.Driver SweepDeadlines). NULL, as every older row has, is no
-- deadline.
--
-- The sweep reads the pending jobs that have a deadline in deadline order.
-- MySQL has no partial index, so pending_deadline is the deadline of a
-- pending job and NULL otherwise, and the index on it holds the sweep's
-- range after its NULLs. The column is virtual, so adding it copies no
-- rows; InnoDB rewrites its index entry only when its value changes, so a
-- job without a deadline (NULL whatever its status) pays no rewrite at its
-- claim and completion, only the entry itself.
ALTER TABLE sluice_jobs ADD COLUMN deadline DATETIME(6) NULL;

ALTER TABLE sluice_jobs
  ADD COLUMN pending_deadline DATETIME(6) GENERATED ALWAYS AS (
    CASE WHEN status = 'pending' THEN deadline END) VIRTUAL,
  ADD KEY sluice_jobs_deadline (pending_deadline);
