UPDATE sluice_types SET served_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE type = ?
