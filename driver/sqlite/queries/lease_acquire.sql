INSERT INTO sluice_leases (name, holder, fence, acquired_at, expires_at)
VALUES (?, ?, 1, strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now', ?))
ON CONFLICT (name) DO UPDATE SET
  fence = CASE WHEN sluice_leases.holder = excluded.holder THEN sluice_leases.fence ELSE sluice_leases.fence + 1 END,
  acquired_at = CASE WHEN sluice_leases.holder = excluded.holder THEN sluice_leases.acquired_at ELSE excluded.acquired_at END,
  holder = excluded.holder,
  expires_at = excluded.expires_at
WHERE sluice_leases.holder = excluded.holder OR sluice_leases.expires_at < excluded.acquired_at
RETURNING holder, fence, acquired_at, expires_at
