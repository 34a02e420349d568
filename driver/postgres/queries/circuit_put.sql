UPDATE sluice_circuits SET state = $1, failures = $2, opens = $3, manual = $4, open_until = $5, probe = $6, updated_at = $7 WHERE type = $8
