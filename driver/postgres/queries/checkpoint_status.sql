UPDATE sluice_checkpoints SET status = $1, updated_at = now() WHERE batch = $2 AND status IN (/*IDS*/)
