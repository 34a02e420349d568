DELETE FROM sluice_checkpoints WHERE batch = ?
