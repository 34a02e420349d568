UPDATE sluice_leases SET holder = ?, fence = ?, acquired_at = ?, expires_at = ? WHERE name = ?
