UPDATE sluice_types SET served_at = UTC_TIMESTAMP(6) WHERE type = ?
