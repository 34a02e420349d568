package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// ImportRow is one row of another job table that Import copies into
// sluice_jobs as it is: its status, attempts, error and times kept.
type ImportRow struct {
	SourceID    int64 // the row's id in its table: with the table, its key in sluice_imports
	Type        string
	Key         sql.NullString
	Payload     string
	Status      sluicetype.Status
	Attempts    int
	MaxAttempts int // 0: the type's setting
	NextRunAt   time.Time
	LastError   sql.NullString
	CreatedAt   time.Time
	UpdatedAt   time.Time
	FinishedAt  sql.NullTime
	// Queue and Dedupe are the type's settings; "" leaves them to the
	// insert trigger, as for any plain INSERT.
	Queue, Dedupe string
}

// ImportParams is one batch of rows of the table Source to copy.
type ImportParams struct {
	Source string
	Rows   []ImportRow
}

// ImportResult counts a batch's rows: copied, found in sluice_imports
// from an earlier run, and not copied because a sluice job already holds
// their business key (that job stands; the row is recorded as imported to
// it).
type ImportResult struct {
	Copied, Before, KeyTaken int
}

// Import copies p.Rows into sluice_jobs in one transaction, each with its
// record in sluice_imports, so that running an import again copies only
// the rows it has not. A row whose key a sluice job holds is not copied.
func (d *Driver) Import(ctx context.Context, p ImportParams) (ImportResult, error) {
	// DDL commits in MySQL, so the ledger is created before the batch's
	// transaction begins.
	if _, err := d.Write.ExecContext(ctx, d.q.ImportLedgerCreate); err != nil {
		return ImportResult{}, fmt.Errorf("create the import ledger: %w", err)
	}
	tx, err := d.Write.BeginTx(ctx, nil)
	if err != nil {
		return ImportResult{}, err
	}
	defer tx.Rollback()
	var res ImportResult
	for _, r := range p.Rows {
		var done int
		if err := tx.QueryRowContext(ctx, d.q.ImportLedgerHas, p.Source, r.SourceID).Scan(&done); err != nil {
			return ImportResult{}, fmt.Errorf("row id %d: %w", r.SourceID, err)
		}
		if done > 0 {
			res.Before++
			continue
		}
		// A key the row would hold may be held by a job of the new code:
		// that job stands, and the row is recorded as imported to it.
		var id int64
		if r.Key.Valid && (r.Status == sluicetype.StatusPending || r.Dedupe != sluicetype.DedupeActive) {
			err := tx.QueryRowContext(ctx, d.q.ImportKeyHolder, r.Key.String).Scan(&id)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return ImportResult{}, fmt.Errorf("row id %d: %w", r.SourceID, err)
			}
		}
		if id != 0 {
			res.KeyTaken++
		} else {
			ins, err := tx.ExecContext(ctx, d.q.ImportInsert, r.Type, r.Key, r.Payload, string(r.Status), r.Attempts, r.NextRunAt,
				r.LastError, r.CreatedAt, r.UpdatedAt, r.FinishedAt, r.MaxAttempts, r.Queue, r.Dedupe)
			if err == nil {
				id, err = ins.LastInsertId()
			}
			if err != nil {
				return ImportResult{}, fmt.Errorf("row id %d: %w", r.SourceID, err)
			}
			res.Copied++
		}
		if _, err := tx.ExecContext(ctx, d.q.ImportLedgerAdd, p.Source, r.SourceID, id); err != nil {
			return ImportResult{}, fmt.Errorf("row id %d: record in sluice_imports: %w", r.SourceID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return ImportResult{}, err
	}
	return res, nil
}
