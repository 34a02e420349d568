-- Progress (issue 38): what a running attempt last reported, done of
-- total and a short message (driver.Driver Progress), and when it was
-- written. NULL, as every older row has, is no progress. A claim clears
-- them, so they always belong to the job's current or last attempt; the
-- attempt's history entry keeps its own copy. No index: they are read
-- with their row, never searched.
ALTER TABLE sluice_jobs ADD COLUMN progress_done INTEGER;
ALTER TABLE sluice_jobs ADD COLUMN progress_total INTEGER;
ALTER TABLE sluice_jobs ADD COLUMN progress_message TEXT;
ALTER TABLE sluice_jobs ADD COLUMN progress_at TEXT;
