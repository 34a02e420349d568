UPDATE sluice_leases SET holder = '', expires_at = '1970-01-01 00:00:00' WHERE name = ? AND holder = ?
