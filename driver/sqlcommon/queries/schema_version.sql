SELECT version FROM sluice_schema WHERE id = 1
