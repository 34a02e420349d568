-- Every table of the database, as a DROP statement and the name it drops
-- (see DropTables).
SELECT CONCAT('DROP TABLE IF EXISTS `', REPLACE(table_name, '`', '``'), '`'), table_name
FROM information_schema.tables WHERE table_schema = DATABASE()
