-- For `sluice bench`: a plain-SQL enqueue, type and payload only, every
-- other column left to the defaults and the insert trigger.
INSERT INTO sluice_jobs (type, payload) VALUES (?, ?)
