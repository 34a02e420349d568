-- The audit trail of operator actions (driver.Audit, audit.go in
-- sqldriver). Every filter of AuditList is bound twice, once to test
-- whether it is set, so that all three dialects take the same arguments.

-- name: AuditInsert
INSERT INTO sluice_audit (at, actor, source, address, action, target, affected)
VALUES (strftime('%Y-%m-%d %H:%M:%f', 'now'), ?, ?, ?, ?, ?, ?)

-- name: AuditList
SELECT id, at, actor, source, address, action, target, affected FROM sluice_audit
WHERE at >= ? AND (? = '' OR actor = ?) AND (? = '' OR action = ?) AND (? = 0 OR id < ?)
ORDER BY id DESC LIMIT ?

-- name: AuditPrune
DELETE FROM sluice_audit WHERE at < strftime('%Y-%m-%d %H:%M:%f', 'now', ?)
