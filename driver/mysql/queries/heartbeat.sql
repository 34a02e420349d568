-- SYSDATE(6), not UTC_TIMESTAMP(6): the latter is when the statement
-- started, and a heartbeat that waited behind a lock for longer than the
-- lease would otherwise write an expiry that has already passed. The
-- driver pins the session time zone to UTC, so SYSDATE is UTC too.
UPDATE sluice_jobs SET locked_until = SYSDATE(6) + INTERVAL ? MICROSECOND, updated_at = SYSDATE(6)
WHERE locked_by = ? AND status = 'processing' AND id IN (/*IDS*/)
