SELECT type, state, failures, opens, manual, open_until, probe, updated_at FROM sluice_circuits WHERE type = ?
