package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The claim. Its statements are in queries/claim.sql; a fair or limited
// claim, and every claim on a server without SKIP LOCKED, goes through
// sqldriver.ClaimFair (internal/sqldriver/fair.go), with claimIDs below
// as its last step.

// claimTx is the isolation of claim transactions. READ COMMITTED takes no
// gap locks, so a claim's index range scan does not block enqueues into
// that range nor deadlock with them.
var claimTx = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// Claim moves up to p.Limit runnable jobs to processing in one short
// transaction, retried on deadlock. With SKIP LOCKED it locks the rows with
// a SELECT and updates them by id, so concurrent claimers pass over each
// other's rows instead of waiting. Without, and for fair or limited
// queues, it claims through sqldriver.ClaimFair, whose claim-state row
// makes concurrent claims of a queue wait for each other instead.
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	claim := d.claimSkipLocked
	if !d.skipLocked || p.Fair || p.Limits.Active() {
		claim = func(ctx context.Context, tx *sql.Tx, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
			return d.ClaimFair(ctx, tx, p)
		}
	}
	var jobs []sluicetype.JobRow
	err := sqldriver.RetryTransient(ctx, d.Transient, func() error {
		tx, err := d.Write.BeginTx(ctx, claimTx)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if jobs, err = claim(ctx, tx, p); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", p.Queue, err)
	}
	return jobs, nil
}

// claimSkipLocked locks the queue's first runnable jobs in its global
// order and claims them. Jobs without a partition and jobs with one are in
// claim order in two indexes (012_pending_indexes.sql), read one statement
// each; the second runs only when the first says the queue has pending
// jobs with a partition, or finds none without. Each branch locks up to
// p.Limit jobs and the merge claims the first p.Limit of them: those it
// leaves stay pending, skipped by other claimers until this transaction
// commits.
func (d *Driver) claimSkipLocked(ctx context.Context, tx *sql.Tx, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	// MySQL's placeholders are not numbered: the types bind where each
	// filter stands, between the queue and the limit.
	types := sqldriver.Args(p.Types)
	q := sqldriver.TypeFilter(d.q.Claim, 0, p.Types, d.Placeholder)
	args := append(append([]any{p.Queue, p.Queue}, types...), p.Limit)
	pq := sqldriver.TypeFilter(d.q.ClaimPartitioned, 0, p.Types, d.Placeholder)
	pargs := append(append([]any{p.Queue}, types...), p.Limit)
	var partitioned bool
	jobs, now, err := d.lockJobs(ctx, tx, q, args, &partitioned)
	if err != nil {
		return nil, err
	}
	if partitioned || len(jobs) == 0 {
		more, pnow, err := d.lockJobs(ctx, tx, pq, pargs, nil)
		if err != nil {
			return nil, err
		}
		if len(jobs) == 0 {
			now = pnow
		}
		jobs = append(jobs, more...)
		slices.SortFunc(jobs, claimOrder)
		jobs = jobs[:min(len(jobs), p.Limit)]
	}
	return d.claimLocked(ctx, tx, p, jobs, now)
}

// claimOrder is the claims' order: priority, next_run_at, id.
func claimOrder(a, b sluicetype.JobRow) int {
	if a.Priority != b.Priority {
		return cmp.Compare(a.Priority, b.Priority)
	}
	if c := a.NextRunAt.Compare(b.NextRunAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// claimIDs is the fair claim's ClaimPicked (sqldriver.Base): it locks the picked jobs still pending
// and claims them as claimSkipLocked does. The claim of a fair or limited
// queue holds its claim-state row, so no other such claim picks them.
func (d *Driver) claimIDs(ctx context.Context, tx *sql.Tx, p driver.ClaimParams, ids []int64) ([]sluicetype.JobRow, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	jobs, now, err := d.lockJobs(ctx, tx, d.Bind(d.q.ClaimIDs, len(ids)), args, nil)
	if err != nil {
		return nil, err
	}
	return d.claimLocked(ctx, tx, p, jobs, now)
}

// lockJobs runs q, which locks and returns jobs with the database clock in
// front, and after it a flag if flag is not nil.
func (d *Driver) lockJobs(ctx context.Context, tx *sql.Tx, q string, args []any, flag *bool) ([]sluicetype.JobRow, time.Time, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, time.Time{}, err
	}
	var jobs []sluicetype.JobRow
	var now sqldriver.Time
	var s sqldriver.JobScanner
	dest := []any{&now}
	if flag != nil {
		dest = append(dest, flag)
	}
	dest = append(dest, s.Dest()...)
	err = sqldriver.EachRow(rows, func(rows *sql.Rows) error {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		jobs = append(jobs, s.Row())
		return nil
	})
	return jobs, now.Time, err
}

// claimLocked claims jobs, which the transaction has locked, at now, the
// database clock of the statement that locked them.
func (d *Driver) claimLocked(ctx context.Context, tx *sql.Tx, p driver.ClaimParams, jobs []sluicetype.JobRow, now time.Time) ([]sluicetype.JobRow, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	// The rows are locked, so the update is known to apply to all of them:
	// they are patched here with the times written instead of read again.
	until := now.Add(p.Lease).Truncate(time.Microsecond)
	args := append(make([]any, 0, len(jobs)+3), p.Token, until, now)
	for _, j := range jobs {
		args = append(args, j.ID)
	}
	if _, err := tx.ExecContext(ctx, d.InList(d.q.ClaimUpdate, 4, len(jobs)), args...); err != nil {
		return nil, err
	}
	for i := range jobs {
		j := &jobs[i]
		j.Status, j.Attempts, j.LockedBy, j.UpdatedAt = sluicetype.StatusProcessing, j.Attempts+1, p.Token, now
		j.Progress = nil // ClaimUpdate cleared the last attempt's
		lockedUntil := until
		j.LockedUntil = &lockedUntil
	}
	return jobs, nil
}

var _ driver.Prober = (*Driver)(nil)

// Runnable reports whether a claim on p's queue and types would find a
// job now; idle workers call it often in place of claiming.
func (d *Driver) Runnable(ctx context.Context, p driver.RunnableParams) (bool, error) {
	return d.ProbeRunnable(ctx, p)
}
