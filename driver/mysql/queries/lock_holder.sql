-- The holder of a busy named lock, by its server-wide key and its name: a
-- row is trusted only if its session is the one IS_USED_LOCK reports.
SELECT u.s, h.holder, h.since FROM (SELECT IS_USED_LOCK(?) AS s) u
LEFT JOIN sluice_lock_holders h ON h.name = ? AND h.session = u.s
