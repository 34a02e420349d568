SELECT to_regclass('sluice_schema') IS NOT NULL
