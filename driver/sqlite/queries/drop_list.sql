-- Every table, as a DROP statement and the name it drops (see DropTables).
SELECT 'DROP TABLE IF EXISTS "' || replace(name, '"', '""') || '"', name FROM sqlite_master WHERE type = 'table'
