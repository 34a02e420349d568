DELETE FROM sluice_nodes WHERE last_seen < strftime('%Y-%m-%d %H:%M:%f', 'now', ?)
