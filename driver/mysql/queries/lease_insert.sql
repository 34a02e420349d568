INSERT INTO sluice_leases (name, holder, fence, acquired_at, expires_at) VALUES (?, ?, 1, ?, ?)
