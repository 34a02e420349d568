INSERT INTO sluice_leases AS l (name, holder, fence, acquired_at, expires_at)
VALUES ($1, $2, 1, now(), now() + $3::bigint * interval '1 microsecond')
ON CONFLICT (name) DO UPDATE SET
  fence = CASE WHEN l.holder = excluded.holder THEN l.fence ELSE l.fence + 1 END,
  acquired_at = CASE WHEN l.holder = excluded.holder THEN l.acquired_at ELSE excluded.acquired_at END,
  holder = excluded.holder,
  expires_at = excluded.expires_at
WHERE l.holder = excluded.holder OR l.expires_at < excluded.acquired_at
RETURNING holder, fence, acquired_at, expires_at
