package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Per-attempt logs (queries/attemptlogs.sql of each dialect).

// ReadAttemptLogs returns a job's logs in attempt order.
func (b *Base) ReadAttemptLogs(ctx context.Context, p driver.ReadAttemptLogsParams) ([]sluicetype.AttemptLog, error) {
	args := []any{p.JobID, p.Attempt, p.Attempt}
	out, err := QueryAll(ctx, b.Read, fmt.Sprintf("read attempt logs of job %d", p.JobID), b.Q.AttemptLogRead, args,
		func(rows *sql.Rows) (sluicetype.AttemptLog, error) {
			var l sluicetype.AttemptLog
			var at Time
			err := rows.Scan(&l.JobID, &l.Attempt, &l.Text, &l.Bytes, &l.Omitted, &at)
			l.CreatedAt = at.Time
			return l, err
		})
	if out == nil && err == nil {
		out = []sluicetype.AttemptLog{}
	}
	return out, err
}

// SplitLogged parts cs into the completions without a log and those with
// one, so that a driver's batch path keeps its speed for the first.
func SplitLogged(cs []driver.Completion) (plain, logged []driver.Completion) {
	for _, c := range cs {
		if c.Log != nil {
			logged = append(logged, c)
		} else {
			plain = append(plain, c)
		}
	}
	return plain, logged
}

// CompleteLogged applies completions that carry logs, one statement each,
// and writes the logs of the applied ones in the same transaction: a log
// is seen with its outcome or not at all. Drivers whose batch path is one
// statement (MySQL, PostgreSQL) send logged completions here; they come
// from commands, whose runs cost far more than a statement each.
func (b *Base) CompleteLogged(ctx context.Context, cs []driver.Completion) ([]int64, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	var lost []int64
	err := b.InTx(ctx, nil, func(tx *sql.Tx) (err error) {
		if lost, err = b.CompleteEachTx(ctx, tx, cs); err != nil {
			return err
		}
		return b.PutLogsTx(ctx, tx, cs, lost)
	})
	if err != nil {
		return nil, fmt.Errorf("complete %d jobs with logs: %w", len(cs), err)
	}
	return lost, nil
}

// PutLogsTx writes, in tx, the logs of the completions of cs that were
// applied: those whose id is not in lost. An attempt that lost its lease
// writes nothing, so it cannot replace the live attempt's log. Without a
// log in cs it runs no statement.
func (b *Base) PutLogsTx(ctx context.Context, tx *sql.Tx, cs []driver.Completion, lost []int64) error {
	if !slices.ContainsFunc(cs, func(c driver.Completion) bool { return c.Log != nil }) {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, b.Q.AttemptLogPut)
	if err != nil {
		return fmt.Errorf("write attempt logs: %w", err)
	}
	defer stmt.Close()
	for _, c := range cs {
		if c.Log == nil || slices.Contains(lost, c.ID) {
			continue
		}
		l := c.Log
		text := driver.StorableText(l.Text, sluicetype.MaxLogLen, false)
		if _, err := stmt.ExecContext(ctx, l.Attempt, text, l.Bytes, l.Omitted, c.ID); err != nil {
			return fmt.Errorf("write attempt log of job %d: %w", c.ID, err)
		}
	}
	return nil
}
