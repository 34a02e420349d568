DELETE FROM sluice_nodes WHERE id = ?
