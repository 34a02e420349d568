-- Locks the scope's row until the claim commits (SQLite's write
-- transaction is already exclusive).
SELECT last_partition FROM sluice_claim_state WHERE scope = ?
FOR UPDATE
