package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Insert adds jobs with their keys taken in one global order (see
// sqldriver.Insert), so that overlapping batches cannot deadlock.
func (d *Driver) Insert(ctx context.Context, p driver.InsertParams) ([]driver.InsertResult, error) {
	return sqldriver.Insert(ctx, p, d.insertAll)
}

// insertAll adds jobs in one transaction with a prepared statement per row,
// which in-process SQLite runs about as fast as a multi-row insert.
func (d *Driver) insertAll(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob) ([]driver.InsertResult, error) {
	run := func(tx *sql.Tx) ([]driver.InsertResult, error) {
		ins, err := tx.PrepareContext(ctx, d.q.Insert)
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
			var deadline, deadlineAfter any
			if !j.Deadline.IsZero() {
				deadline = d.Time(j.Deadline)
			}
			if j.DeadlineAfter > 0 {
				deadlineAfter = d.Duration(j.DeadlineAfter)
			}
			err := ins.QueryRowContext(ctx, j.Queue, j.Type, sqldriver.NullString(j.Key), j.Dedupe, j.Payload,
				j.Priority, j.MaxAttempts, runAt, d.Duration(j.Delay), sqldriver.NullString(j.TraceParent), j.Partition,
				deadline, deadlineAfter, sqldriver.NullMicros(j.ProgressTimeout)).Scan(&out[i].ID)
			if errors.Is(err, sql.ErrNoRows) {
				// The key is taken; the writer lock we hold means its holder
				// cannot change under us.
				if err := tx.QueryRowContext(ctx, d.q.KeyHolder, j.Key).Scan(&out[i].ID); err != nil {
					return nil, fmt.Errorf("%s: find its holder: %w", sqldriver.RowName(i, j), err)
				}
				out[i].Duplicate = true
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sqldriver.RowName(i, j), err)
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
// for a fair queue or one with limits, sqldriver's ClaimFair.
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	if p.Fair || p.Limits.Active() {
		return d.ClaimFairInTx(ctx, p)
	}
	q := d.claimQuery(p.Types)
	args := append([]any{p.Token, d.Duration(p.Lease), p.Queue, p.Limit}, sqldriver.Args(p.Types)...)
	// Prepared before the transaction: the writer pool has one
	// connection, which the transaction holds.
	st, err := d.claimStmt(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", p.Queue, err)
	}
	var jobs []sluicetype.JobRow
	err = d.InTx(ctx, nil, func(tx *sql.Tx) error {
		rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, args...)
		if err != nil {
			return err
		}
		jobs, err = sqldriver.ScanJobs(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", p.Queue, err)
	}
	return jobs, nil
}

// claimQuery is Claim's statement for types: they bind from ?5, after
// its four numbered parameters, which both of its branches share.
func (d *Driver) claimQuery(types []string) string {
	return sqldriver.TypeFilter(d.q.Claim, 5, types, d.Placeholder)
}

// claimStmt returns the claim statement q prepared on the writer,
// preparing it on first use (after Migrate: it names the jobs table). Compiled on
// every claim, the UPDATE that merges two index ranges took about 40% of
// the instructions SQLite spent claiming and completing 20 jobs. A
// statement whose schema changed since is recompiled by SQLite when it
// runs.
// Each set of types a queue claims is a text of its own; a process claims
// a few such sets, one per queue.
func (d *Driver) claimStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	d.claims.Lock()
	defer d.claims.Unlock()
	if st := d.claims.stmts[q]; st != nil {
		return st, nil
	}
	st, err := d.Write.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if d.claims.stmts == nil {
		d.claims.stmts = map[string]*sql.Stmt{}
	}
	d.claims.stmts[q] = st
	return st, nil
}

var _ driver.Prober = (*Driver)(nil)

// Runnable reports whether a claim on p's queue and types would find a
// job now; idle workers call it often in place of claiming.
func (d *Driver) Runnable(ctx context.Context, p driver.RunnableParams) (bool, error) {
	return d.ProbeRunnable(ctx, p)
}
