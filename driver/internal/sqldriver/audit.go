package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The audit trail (queries/audit.sql of each dialect).

// InsertAudit records one entry at the database's time.
func (b *Base) InsertAudit(ctx context.Context, p driver.InsertAuditParams) error {
	e := p.Entry
	_, err := b.ExecCount(ctx, b.Q.AuditInsert, e.Actor, e.Source, e.Address, e.Action, e.Target, e.Affected)
	if err != nil {
		return fmt.Errorf("record audit entry %s: %w", e.Action, err)
	}
	return nil
}

// auditEpoch stands for "no lower bound" in AuditList: a time every
// database stores (MySQL's DATETIME starts at year 1000).
var auditEpoch = time.Unix(0, 0).UTC()

// ListAudit reads entries newest first.
func (b *Base) ListAudit(ctx context.Context, p driver.ListAuditParams) ([]sluicetype.AuditEntry, error) {
	if p.Limit <= 0 {
		return nil, errors.New("list audit entries: limit must be positive")
	}
	since := p.Since
	if since.Before(auditEpoch) {
		since = auditEpoch
	}
	args := []any{b.Time(since.UTC()), p.Actor, p.Actor, p.Action, p.Action, p.BeforeID, p.BeforeID, p.Limit}
	out, err := QueryAll(ctx, b.Read, "list audit entries", b.Q.AuditList, args, func(rows *sql.Rows) (sluicetype.AuditEntry, error) {
		var e sluicetype.AuditEntry
		var at Time
		err := rows.Scan(&e.ID, &at, &e.Actor, &e.Source, &e.Address, &e.Action, &e.Target, &e.Affected)
		e.At = at.Time
		return e, err
	})
	if out == nil && err == nil {
		out = []sluicetype.AuditEntry{}
	}
	return out, err
}

// PruneAudit deletes entries older than p.OlderThan by the database clock.
func (b *Base) PruneAudit(ctx context.Context, p driver.PruneAuditParams) (int64, error) {
	n, err := b.ExecCount(ctx, b.Q.AuditPrune, b.Duration(-p.OlderThan))
	if err != nil {
		return 0, fmt.Errorf("prune audit entries: %w", err)
	}
	return n, nil
}
