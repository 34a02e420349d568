-- Progress (issue 38): what a running attempt last reported, done of
-- total and a short message (driver.Driver Progress), and when it was
-- written. NULL, as every older row has, is no progress. A claim clears
-- them, so they always belong to the job's current or last attempt; the
-- attempt's history entry keeps its own copy. No index: they are read
-- with their row, never searched. The message is cut to
-- sluicetype.MaxProgressMessageLen characters before it is written.
ALTER TABLE sluice_jobs
  ADD COLUMN progress_done BIGINT NULL,
  ADD COLUMN progress_total BIGINT NULL,
  ADD COLUMN progress_message VARCHAR(200) NULL,
  ADD COLUMN progress_at DATETIME(6) NULL;
