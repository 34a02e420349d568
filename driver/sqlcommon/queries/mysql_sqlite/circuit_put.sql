UPDATE sluice_circuits SET state = ?, failures = ?, opens = ?, manual = ?, open_until = ?, probe = ?, updated_at = ? WHERE type = ?
