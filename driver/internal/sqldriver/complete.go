package sqldriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// What happens to claimed jobs: heartbeats, completions, the rescue of
// expired leases and the purge (queries/complete.sql of each dialect).

// Heartbeat extends the leases held with p.Token and reports the lost ones.
func (b *Base) Heartbeat(ctx context.Context, p driver.HeartbeatParams) ([]int64, error) {
	if len(p.IDs) == 0 {
		return nil, nil
	}
	args := append(make([]any, 0, len(p.IDs)+2), b.Duration(p.Lease), p.Token)
	for _, id := range p.IDs {
		args = append(args, id)
	}
	n, err := b.ExecCount(ctx, b.InList(b.Q.Heartbeat, 3, len(p.IDs)), args...)
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	if int(n) == len(p.IDs) {
		return nil, nil
	}
	return b.lostOf(ctx, p.Token, p.IDs)
}

// Progress writes a running attempt's report, fenced by its token.
func (b *Base) Progress(ctx context.Context, p driver.ProgressParams) (bool, error) {
	msg := driver.StorableText(p.Message, sluicetype.MaxProgressMessageLen, false)
	n, err := b.ExecCount(ctx, b.Q.Progress, p.Done, p.Total, msg, p.ID, p.Token)
	if err != nil {
		return false, fmt.Errorf("progress: %w", err)
	}
	return n == 1, nil
}

// lostOf returns the ids in ids that are no longer held with token.
func (b *Base) lostOf(ctx context.Context, token string, ids []int64) ([]int64, error) {
	args := append(make([]any, 0, len(ids)+1), token)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := b.Write.QueryContext(ctx, b.InList(b.Q.Held, 2, len(ids)), args...)
	if err != nil {
		return nil, fmt.Errorf("check leases: %w", err)
	}
	held, err := IDSet(rows, len(ids))
	if err != nil {
		return nil, fmt.Errorf("check leases: %w", err)
	}
	return Missing(ids, held), nil
}

// CompletionArgs are the arguments of Complete, in its order: the
// outcome's, the history entry and limit as entry, keep, keep, entry (MySQL
// and SQLite bind each placeholder once), then the id and token.
func (b *Base) CompletionArgs(c driver.Completion) []any {
	entry, keep := HistoryArgs(c)
	return append(b.outcomeArgs(c), entry, keep, keep, entry, c.ID, c.Token)
}

// ManyRowArgs are one row of a batch's derived table (MySQL's
// CompleteManyFirst): the outcome, the id and the token.
func (b *Base) ManyRowArgs(c driver.Completion) []any {
	return append(b.outcomeArgs(c), c.ID, c.Token)
}

// ManyHistoryRowArgs are one row of a batch that writes history
// (CompleteManyHistoryFirst), which names the entry and limit once.
func (b *Base) ManyHistoryRowArgs(c driver.Completion) []any {
	entry, keep := HistoryArgs(c)
	return append(b.outcomeArgs(c), entry, keep, c.ID, c.Token)
}

// outcomeArgs are the status, refund, final, delay, final, error and
// result arguments that Complete and a batch row start with.
func (b *Base) outcomeArgs(c driver.Completion) []any {
	refund := 0
	if c.Refund {
		refund = 1
	}
	var errText, result *string
	if c.Error != nil {
		s := driver.StorableText(*c.Error, sluicetype.MaxErrorLen, true)
		errText = &s
	}
	if c.Result != nil {
		s := driver.StorableText(*c.Result, sluicetype.MaxResultLen, true)
		result = &s
	}
	final := 0
	if c.Status != sluicetype.StatusPending {
		final = 1
	}
	return []any{c.Status, refund, final, b.Duration(c.Delay), final, PtrString(errText), PtrString(result)}
}

// HistoryArgs are the history entry to append (NULL for none) and the
// number of attempts to keep.
func HistoryArgs(c driver.Completion) (sql.NullString, int) {
	if c.Attempt == nil {
		return sql.NullString{}, driver.KeepAttempts(c.KeepAttempts)
	}
	return sql.NullString{String: EncodeAttempt(c.Attempt), Valid: true}, driver.KeepAttempts(c.KeepAttempts)
}

// CompleteTx applies one fenced outcome in the caller's transaction.
func (b *Base) CompleteTx(ctx context.Context, p driver.CompleteTxParams) (bool, error) {
	tx, c := p.Tx, p.Completion
	res, err := tx.ExecContext(ctx, b.Q.Complete, b.CompletionArgs(c)...)
	if err != nil {
		return false, fmt.Errorf("complete job %d: %w", c.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("complete job %d: %w", c.ID, err)
	}
	if n != 1 {
		return false, nil
	}
	// In the caller's transaction: the log commits with the outcome.
	if err := b.PutLogsTx(ctx, tx, []driver.Completion{c}, nil); err != nil {
		return false, err
	}
	return true, nil
}

// CompleteEach is CompleteEachTx in a transaction of its own, retried on
// transient errors.
func (b *Base) CompleteEach(ctx context.Context, cs []driver.Completion) ([]int64, error) {
	var lost []int64
	err := b.InTx(ctx, nil, func(tx *sql.Tx) (err error) {
		lost, err = b.CompleteEachTx(ctx, tx, cs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("complete %d jobs: %w", len(cs), err)
	}
	return lost, nil
}

// CompleteEachTx applies completions one prepared statement each in tx and
// returns the ids whose lease was lost. It suits SQLite, where a statement
// costs no round trip.
func (b *Base) CompleteEachTx(ctx context.Context, tx *sql.Tx, cs []driver.Completion) ([]int64, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	stmt, err := tx.PrepareContext(ctx, b.Q.Complete)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	var lost []int64
	for _, c := range cs {
		res, err := stmt.ExecContext(ctx, b.CompletionArgs(c)...)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 0 {
			lost = append(lost, c.ID)
		}
	}
	return lost, nil
}

// Rescue returns expired leases to pending, or fails jobs out of attempts.
func (b *Base) Rescue(ctx context.Context, p driver.RescueParams) (sluicetype.RescueResult, error) {
	var r sluicetype.RescueResult
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	err := RetryTransient(ctx, b.Transient, func() error {
		r = sluicetype.RescueResult{}
		keep := driver.KeepAttempts(p.KeepAttempts)
		rows, err := b.Write.QueryContext(ctx, b.Q.Rescue, keep, keep, limit)
		if err != nil {
			return err
		}
		return EachRow(rows, func(rows *sql.Rows) error {
			var status sluicetype.Status
			var queue, typ string
			err := rows.Scan(&status, &queue, &typ)
			r.CountRescued(status, queue, typ)
			return err
		})
	})
	if err != nil {
		return r, fmt.Errorf("rescue expired leases: %w", err)
	}
	return r, nil
}

// SweepDeadlines cancels one chunk of pending jobs past their deadline.
func (b *Base) SweepDeadlines(ctx context.Context, p driver.SweepDeadlinesParams) (int64, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	keep := driver.KeepAttempts(p.KeepAttempts)
	n, err := b.ExecCount(ctx, b.Q.SweepDeadlines, keep, keep, limit)
	if err != nil {
		return 0, fmt.Errorf("cancel jobs past their deadline: %w", err)
	}
	return n, nil
}

// Purge deletes one chunk of old finished jobs.
func (b *Base) Purge(ctx context.Context, p driver.PurgeParams) (int64, error) {
	if !sluicetype.IsFinal(p.Status) {
		return 0, fmt.Errorf("purge: status %q is not a finished state (success, failed, cancelled)", p.Status)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	args := []any{p.Status, b.Duration(-p.OlderThan), limit}
	if b.PurgeBound != nil {
		bound, err := b.PurgeBound(ctx, p.Status, p.OlderThan)
		if err != nil {
			return 0, fmt.Errorf("purge %s jobs: %w", p.Status, err)
		}
		if bound == 0 {
			return 0, nil
		}
		args = []any{p.Status, b.Duration(-p.OlderThan), bound, limit}
	}
	n, err := b.ExecCount(ctx, b.Q.Purge, args...)
	if err != nil {
		return 0, fmt.Errorf("purge %s jobs: %w", p.Status, err)
	}
	return n, nil
}
