UPDATE sluice_checkpoints SET status = ?, updated_at = UTC_TIMESTAMP(6) WHERE batch = ? AND status IN (/*IDS*/)
