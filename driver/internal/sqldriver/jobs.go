package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The jobs themselves: inserts, reads and the operator's retry and cancel
// (queries/jobs.sql of each dialect).

// InKeyOrder runs insert on jobs with the keyed rows sorted by business key
// (byte order, which is how every schema compares keys) and returns the
// results in the order of jobs. Inserting a key waits for any uncommitted
// writer of the same key, so two batches that reach shared keys in
// different orders can wait on each other until the database kills one as
// a deadlock victim; in one global order no such cycle exists. Keyless rows
// take no key lock and keep their places, so their ids still follow the
// input; rows with the same key keep their input order, so the first
// occurrence in the batch is still the one inserted.
func InKeyOrder(jobs []driver.InsertJob, insert func([]driver.InsertJob) ([]driver.InsertResult, error)) ([]driver.InsertResult, error) {
	var slots []int // the positions of the keyed rows
	for i, j := range jobs {
		if j.Key != "" {
			slots = append(slots, i)
		}
	}
	order := slices.Clone(slots)
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(jobs[a].Key, jobs[b].Key) })
	if slices.Equal(order, slots) {
		return insert(jobs)
	}
	sorted := slices.Clone(jobs)
	for n, s := range slots {
		sorted[s] = jobs[order[n]]
	}
	res, err := insert(sorted)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(res)
	for n, s := range slots {
		out[order[n]] = res[s]
	}
	return out, nil
}

// Insert is the SQL drivers' driver.Driver Insert: insertAll adds a
// nonempty batch, in tx (the caller's p.Tx, nil for none), with the keyed
// rows in InKeyOrder's global order, so that overlapping batches cannot
// deadlock.
func Insert(ctx context.Context, p driver.InsertParams, insertAll func(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob) ([]driver.InsertResult, error)) ([]driver.InsertResult, error) {
	if len(p.Jobs) == 0 {
		return nil, nil
	}
	return InKeyOrder(p.Jobs, func(jobs []driver.InsertJob) ([]driver.InsertResult, error) {
		return insertAll(ctx, p.Tx, jobs)
	})
}

// RowName names row i of a batch passed through InKeyOrder in an error:
// keyless rows keep their input position, keyed rows are named by key.
func RowName(i int, j driver.InsertJob) string {
	if j.Key != "" {
		return fmt.Sprintf("job with key %q", j.Key)
	}
	return fmt.Sprintf("job %d", i)
}

// GetJob reads one job.
func (b *Base) GetJob(ctx context.Context, id int64) (*sluicetype.JobRow, error) {
	// Get is the standard column list and the history.
	var s JobScanner
	var history []byte
	err := b.Read.QueryRowContext(ctx, b.Q.Get, id).Scan(append(s.Dest(), &history)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, sluicetype.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get job %d: %w", id, err)
	}
	job := s.Row()
	if job.History, err = DecodeHistory(history); err != nil {
		return nil, fmt.Errorf("get job %d: %w", id, err)
	}
	return &job, nil
}

// ListJobs returns jobs newest first, after AfterID, filtered.
func (b *Base) ListJobs(ctx context.Context, p sluicetype.ListParams) ([]sluicetype.JobRow, error) {
	q, args := b.ListQuery(p)
	var from driver.Querier = b.Read
	if p.Tx != nil {
		from = p.Tx
	}
	rows, err := from.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	jobs, err := ScanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// Retry moves one job, or every failed job (of a type), back to pending.
func (b *Base) Retry(ctx context.Context, p driver.RetryParams) (int64, error) {
	if !p.AllFailed {
		if err := b.retryOne(ctx, p.ID); err != nil {
			return 0, err
		}
		return 1, nil
	}
	// Chunks of ids keep each statement short and let a job whose key is
	// taken be skipped without failing the rest.
	var total int64
	after := int64(0)
	for {
		ids, err := QueryAll(ctx, b.Read, "retry failed jobs", b.Q.RetryIDs, []any{sluicetype.StatusFailed, p.Type, p.Type, after}, ScanID)
		if err != nil {
			return total, err
		}
		if len(ids) == 0 {
			return total, nil
		}
		for _, id := range ids {
			switch err := b.retryOne(ctx, id); {
			case err == nil:
				total++
			case errors.Is(err, sluicetype.ErrKeyTaken), errors.Is(err, sluicetype.ErrWrongState):
			default:
				return total, err
			}
		}
		after = ids[len(ids)-1]
	}
}

func (b *Base) retryOne(ctx context.Context, id int64) error {
	res, err := b.Write.ExecContext(ctx, b.InList(b.Q.Retry, 1, 1), id)
	if err != nil {
		if b.UniqueViolation(err) {
			return fmt.Errorf("retry job %d: %w", id, sluicetype.ErrKeyTaken)
		}
		return fmt.Errorf("retry job %d: %w", id, err)
	}
	return b.checkChanged(ctx, res, id, "retry")
}

// cancelTries bounds how often Cancel reads a job that changed state
// between its statements (a claim, a completion, a rescue) and tries
// again.
const cancelTries = 5

// Cancel moves a pending or failed job to cancelled, or ends a running
// one's attempt as cancelled: a completion written with the attempt's own
// lease token, so that exactly one of the cancel and the attempt's outcome
// is applied, whichever reaches the row first.
func (b *Base) Cancel(ctx context.Context, p driver.CancelParams) (bool, error) {
	for range cancelTries {
		res, err := b.Write.ExecContext(ctx, b.InList(b.Q.Cancel, 1, 1), p.ID)
		if err != nil {
			return false, fmt.Errorf("cancel job %d: %w", p.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return false, fmt.Errorf("cancel job %d: %w", p.ID, err)
		} else if n > 0 {
			return false, nil
		}
		j, err := b.GetJob(ctx, p.ID)
		if err != nil {
			return false, fmt.Errorf("cancel job %d: %w", p.ID, err)
		}
		switch j.Status {
		case sluicetype.StatusPending, sluicetype.StatusFailed:
			continue // it changed since the statement: try again
		case sluicetype.StatusProcessing:
		default:
			return false, fmt.Errorf("cancel job %d (status %s): %w", p.ID, j.Status, sluicetype.ErrWrongState)
		}
		c := driver.Completion{ID: j.ID, Token: j.LockedBy, Status: sluicetype.StatusCancelled, Error: &p.Reason,
			KeepAttempts: p.KeepAttempts,
			Attempt:      &sluicetype.Attempt{Number: j.Attempts, Outcome: sluicetype.OutcomeCancelled, Error: p.Reason}}
		n, err := b.ExecCount(ctx, b.Q.Complete, b.CompletionArgs(c)...)
		if err != nil {
			return false, fmt.Errorf("cancel running job %d: %w", p.ID, err)
		}
		if n == 1 {
			return true, nil
		}
		// The attempt finished, or its lease passed and it was rescued,
		// between the read and the write: look again.
	}
	return false, fmt.Errorf("cancel job %d: it changed state %d times while being cancelled; try again", p.ID, cancelTries)
}

// Cancelled returns the ids among ids whose job is cancelled.
func (b *Base) Cancelled(ctx context.Context, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := b.Read.QueryContext(ctx, b.InList(b.Q.Cancelled, 1, len(ids)), args...)
	if err != nil {
		return nil, fmt.Errorf("read cancelled jobs: %w", err)
	}
	set, err := IDSet(rows, len(ids))
	if err != nil {
		return nil, fmt.Errorf("read cancelled jobs: %w", err)
	}
	out := make([]int64, 0, len(set))
	for _, id := range ids {
		if set[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// ProgressSeen returns when the jobs among ids last reported progress.
func (b *Base) ProgressSeen(ctx context.Context, ids []int64) ([]driver.ProgressMark, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := b.Read.QueryContext(ctx, b.InList(b.Q.ProgressSeen, 1, len(ids)), args...)
	if err != nil {
		return nil, fmt.Errorf("read progress times: %w", err)
	}
	out := make([]driver.ProgressMark, 0, len(ids))
	err = EachRow(rows, func(rows *sql.Rows) error {
		var m driver.ProgressMark
		var at Time
		if err := rows.Scan(&m.ID, &at); err != nil {
			return err
		}
		m.At = at.Time
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read progress times: %w", err)
	}
	return out, nil
}

// checkChanged turns "zero rows changed" into not-found or wrong-state.
func (b *Base) checkChanged(ctx context.Context, res sql.Result, id int64, op string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s job %d: %w", op, id, err)
	}
	if n > 0 {
		return nil
	}
	var status string
	switch err := b.Write.QueryRowContext(ctx, b.Q.Exists, id).Scan(&status); {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s job %d: %w", op, id, sluicetype.ErrNotFound)
	case err != nil:
		return fmt.Errorf("%s job %d: %w", op, id, err)
	}
	return fmt.Errorf("%s job %d (status %s): %w", op, id, status, sluicetype.ErrWrongState)
}
