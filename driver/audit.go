package driver

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// Audit is the storage of the audit trail of operator actions
// (sluice_audit). The Client writes it; the server, the dashboard and
// `sluice audit` read it; maintenance prunes it.
type Audit interface {
	// InsertAudit records p.Entry, whose ID and At it ignores: the row
	// takes the next id and the database clock's time.
	InsertAudit(ctx context.Context, p InsertAuditParams) error
	// ListAudit reads entries newest first (by id), at or after p.Since,
	// of p.Actor and p.Action when set, with an id below p.BeforeID when
	// set, at most p.Limit of them.
	ListAudit(ctx context.Context, p ListAuditParams) ([]sluicetype.AuditEntry, error)
	// PruneAudit deletes the entries recorded more than p.OlderThan
	// before the database clock's now, and returns how many.
	PruneAudit(ctx context.Context, p PruneAuditParams) (int64, error)
}

// InsertAuditParams is one entry to record.
type InsertAuditParams struct {
	Entry sluicetype.AuditEntry
}

// ListAuditParams filters ListAudit. Zero fields filter nothing, except
// Limit, which must be positive.
type ListAuditParams struct {
	Since    time.Time
	Actor    string
	Action   string
	BeforeID int64 // paging: the last id of the previous page
	Limit    int
}

// PruneAuditParams is the age past which PruneAudit deletes.
type PruneAuditParams struct {
	OlderThan time.Duration
}
