SELECT fence FROM sluice_lock_holders WHERE name = ?
