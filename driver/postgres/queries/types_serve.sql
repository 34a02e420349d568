UPDATE sluice_types SET served_at = now() WHERE type = $1
