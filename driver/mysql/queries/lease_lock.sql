SELECT holder, fence, acquired_at, expires_at, UTC_TIMESTAMP(6) FROM sluice_leases WHERE name = ? FOR UPDATE
