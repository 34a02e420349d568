DELETE FROM sluice_checkpoints WHERE batch = $1
