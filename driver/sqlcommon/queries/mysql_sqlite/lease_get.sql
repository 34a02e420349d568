SELECT holder, fence, acquired_at, expires_at FROM sluice_leases WHERE name = ?
