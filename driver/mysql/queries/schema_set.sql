-- The version only grows: on a Galera cluster GET_LOCK does not keep two
-- nodes' migrations apart, and a slower one recording an older version
-- after a faster one recorded the newest would make every later migrate
-- re-run applied migrations.
INSERT INTO sluice_schema (id, version) VALUES (1, ?)
ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))
