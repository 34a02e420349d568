package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlcommon"
	"github.com/sluicehq/sluice/sluicetype"
)

// Insert adds jobs with their keys taken in one global order (see
// sqlcommon.Insert), so that overlapping batches cannot deadlock.
func (d *Driver) Insert(ctx context.Context, p driver.InsertParams) ([]driver.InsertResult, error) {
	return sqlcommon.Insert(ctx, p, d.insertAll)
}

// insertAll adds jobs in one transaction with a prepared statement per row,
// which in-process SQLite runs about as fast as a multi-row insert.
func (d *Driver) insertAll(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob) ([]driver.InsertResult, error) {
	run := func(tx *sql.Tx) ([]driver.InsertResult, error) {
		ins, err := tx.PrepareContext(ctx, d.Q["insert"])
		if err != nil {
			return nil, err
		}
		defer ins.Close()
		out := make([]driver.InsertResult, len(jobs))
		for i, j := range jobs {
			var runAt any
			if !j.RunAt.IsZero() {
				runAt = d.Time(j.RunAt)
			}
			err := ins.QueryRowContext(ctx, j.Queue, j.Type, driver.NullString(j.Key), j.Dedupe, j.Payload,
				j.Priority, j.MaxAttempts, runAt, d.Duration(j.Delay), driver.NullString(j.TraceParent), j.Partition).Scan(&out[i].ID)
			if errors.Is(err, sql.ErrNoRows) {
				// The key is taken; the writer lock we hold means its holder
				// cannot change under us.
				if err := tx.QueryRowContext(ctx, d.Q["key_holder"], j.Key).Scan(&out[i].ID); err != nil {
					return nil, fmt.Errorf("%s: find its holder: %w", sqlcommon.RowName(i, j), err)
				}
				out[i].Duplicate = true
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sqlcommon.RowName(i, j), err)
			}
		}
		return out, nil
	}
	var out []driver.InsertResult
	err := d.InTx(ctx, tx, func(tx *sql.Tx) (err error) {
		out, err = run(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	return out, nil
}

// Claim runs one UPDATE ... RETURNING in an IMMEDIATE transaction, or,
// for a fair queue or one with limits, sqlcommon's ClaimFair.
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	var jobs []sluicetype.JobRow
	if p.Fair || p.Limits.Active() {
		err := d.InTx(ctx, nil, func(tx *sql.Tx) (err error) {
			jobs, err = d.ClaimFair(ctx, tx, p, d.ClaimIDsReturning)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("claim %s: %w", p.Queue, err)
		}
		return jobs, nil
	}
	name, args := "claim", []any{p.Token, d.Duration(p.Lease), p.Queue, p.Limit}
	if p.Type != "" {
		name, args = "claim_type", []any{p.Token, d.Duration(p.Lease), p.Queue, p.Type, p.Limit}
	}
	// Prepared before the transaction: the writer pool has one
	// connection, which the transaction holds.
	st, err := d.claimStmt(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", p.Queue, err)
	}
	err = d.InTx(ctx, nil, func(tx *sql.Tx) error {
		rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, args...)
		if err != nil {
			return err
		}
		jobs, err = driver.ScanJobs(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", p.Queue, err)
	}
	return jobs, nil
}

// claimStmt returns the named claim query prepared on the writer, preparing
// it on first use (after Migrate: it names the jobs table). Compiled on
// every claim, the UPDATE that merges two index ranges took about 40% of
// the instructions SQLite spent claiming and completing 20 jobs. A
// statement whose schema changed since is recompiled by SQLite when it
// runs.
func (d *Driver) claimStmt(ctx context.Context, name string) (*sql.Stmt, error) {
	d.claims.Lock()
	defer d.claims.Unlock()
	if st := d.claims.stmts[name]; st != nil {
		return st, nil
	}
	st, err := d.Write.PrepareContext(ctx, d.Q[name])
	if err != nil {
		return nil, err
	}
	if d.claims.stmts == nil {
		d.claims.stmts = map[string]*sql.Stmt{}
	}
	d.claims.stmts[name] = st
	return st, nil
}

var _ driver.Prober = (*Driver)(nil)

// Runnable reports whether a claim on queue (and typ, if set) would find a
// job now; idle workers call it often in place of claiming.
func (d *Driver) Runnable(ctx context.Context, p driver.RunnableParams) (bool, error) {
	queue, typ := p.Queue, p.Type
	return d.ProbeRunnable(ctx, queue, typ)
}
