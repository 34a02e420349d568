INSERT INTO sluice_lock_holders (name, holder, session, fence, since) VALUES (?, ?, CONNECTION_ID(), 1, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE holder = VALUES(holder), session = VALUES(session), fence = fence + 1, since = VALUES(since)
