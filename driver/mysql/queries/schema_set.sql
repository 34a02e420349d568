REPLACE INTO sluice_schema (id, version) VALUES (1, ?)
