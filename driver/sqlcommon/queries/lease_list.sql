SELECT name, holder, fence, acquired_at, expires_at FROM sluice_leases ORDER BY name
