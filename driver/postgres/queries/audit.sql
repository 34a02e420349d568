-- The audit trail of operator actions (driver.Audit, audit.go in
-- sqldriver). Every filter of AuditList is bound twice, once to test
-- whether it is set, so that all three dialects take the same arguments.

-- name: AuditInsert
INSERT INTO sluice_audit (at, actor, source, address, action, target, affected)
VALUES (now(), $1, $2, $3, $4, $5, $6)

-- name: AuditList
SELECT id, at, actor, source, address, action, target, affected FROM sluice_audit
WHERE at >= $1 AND ($2::text = '' OR actor = $3) AND ($4::text = '' OR action = $5) AND ($6::bigint = 0 OR id < $7)
ORDER BY id DESC LIMIT $8

-- name: AuditPrune
DELETE FROM sluice_audit WHERE at < now() + $1::bigint * interval '1 microsecond'
