INSERT IGNORE INTO sluice_circuits (type, open_until, updated_at) VALUES (?, ?, ?)
