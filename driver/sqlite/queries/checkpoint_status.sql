UPDATE sluice_checkpoints SET status = ?, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE batch = ? AND status IN (/*IDS*/)
