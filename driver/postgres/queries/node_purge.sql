DELETE FROM sluice_nodes WHERE last_seen < now() + $1::bigint * interval '1 microsecond'
