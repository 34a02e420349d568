-- Every table and function of the schema, as a DROP statement and the name
-- it drops (see DropTables). Functions go too: the insert trigger's
-- function outlives its table.
SELECT 'DROP TABLE IF EXISTS ' || quote_ident(tablename) || ' CASCADE', tablename
FROM pg_tables WHERE schemaname = current_schema()
UNION ALL
SELECT 'DROP FUNCTION IF EXISTS ' || quote_ident(p.proname) || ' CASCADE', p.proname
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()
