package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// AddStats adds every row, counts and latency slots, to its bucket in one
// transaction, so a flush is counted whole or not at all.
func (b *Base) AddStats(ctx context.Context, p driver.AddStatsParams) error {
	n := len(p.Rows) + len(p.Latency)
	if n == 0 {
		return nil
	}
	err := RetryTransient(ctx, b.Transient, func() error {
		tx, err := b.Write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := b.addStatsTx(ctx, tx, p.Rows); err != nil {
			return err
		}
		if err := b.addLatencyTx(ctx, tx, p.Latency); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("add %d roll-up rows: %w", n, err)
	}
	return nil
}

func (b *Base) addStatsTx(ctx context.Context, tx *sql.Tx, rows []sluicetype.StatRow) error {
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, b.Q.StatsAdd, r.Queue, r.Type, r.Outcome, b.Time(r.Bucket.UTC()), r.Count); err != nil {
			return err
		}
	}
	return nil
}

// ReadStats returns the buckets at or after since, oldest first.
func (b *Base) ReadStats(ctx context.Context, p driver.ReadStatsParams) ([]sluicetype.StatRow, error) {
	since := p.Since
	return QueryAll(ctx, b.Read, "read roll-ups", b.Q.StatsRead, []any{b.Time(since.UTC())}, scanStat)
}

func scanStat(rows *sql.Rows) (sluicetype.StatRow, error) {
	var r sluicetype.StatRow
	var bucket Time
	err := rows.Scan(&r.Queue, &r.Type, &r.Outcome, &bucket, &r.Count)
	r.Bucket = bucket.Time
	return r, err
}

// CompactStats rewrites the day of buckets before the hour of before as
// hourly buckets, in both roll-up tables: it reads them, deletes them and
// inserts their sums, in one transaction. Rewriting a whole day each pass
// makes it idempotent (already hourly rows are summed into themselves)
// and bounded, and a leader that was down for under a day catches up.
func (b *Base) CompactStats(ctx context.Context, p driver.CompactStatsParams) error {
	hi := p.Before.UTC().Truncate(time.Hour)
	lo := hi.Add(-24 * time.Hour)
	err := RetryTransient(ctx, b.Transient, func() error {
		tx, err := b.Write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := b.compactCountsTx(ctx, tx, lo, hi); err != nil {
			return err
		}
		if err := b.compactLatencyTx(ctx, tx, lo, hi); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("compact roll-ups before %s: %w", hi.Format(time.RFC3339), err)
	}
	return nil
}

// compactCountsTx folds sluice_stats's buckets in [lo, hi) to hours.
func (b *Base) compactCountsTx(ctx context.Context, tx *sql.Tx, lo, hi time.Time) error {
	return compactTx(ctx, tx, b, lo, hi, b.Q.StatsRange, b.Q.StatsDeleteRange, scanStat,
		func(r *sluicetype.StatRow) (*time.Time, *int64) { return &r.Bucket, &r.Count }, b.addStatsTx)
}

// compactTx folds the roll-up rows in [lo, hi) that rangeQ reads with
// scan to hourly rows: when any row is finer than an hour, deleteQ drops
// the range and add writes the sums, each the sum of the rows alike but
// for the bucket (cut to the hour) and the count, which fields point at.
// The sums come in the order their hours first appear.
func compactTx[R comparable](ctx context.Context, tx *sql.Tx, b *Base, lo, hi time.Time, rangeQ, deleteQ string,
	scan func(*sql.Rows) (R, error), fields func(*R) (*time.Time, *int64), add func(context.Context, *sql.Tx, []R) error) error {
	rows, err := tx.QueryContext(ctx, rangeQ, b.Time(lo), b.Time(hi))
	if err != nil {
		return err
	}
	old, err := ScanAll(rows, scan)
	if err != nil {
		return err
	}
	sums := map[R]int64{}
	var order []R
	for _, r := range old {
		bucket, count := fields(&r)
		n := *count
		*bucket, *count = bucket.UTC().Truncate(time.Hour), 0
		if _, ok := sums[r]; !ok {
			order = append(order, r)
		}
		sums[r] += n
	}
	if len(order) == len(old) {
		return nil // every bucket is hourly already
	}
	if _, err := tx.ExecContext(ctx, deleteQ, b.Time(lo), b.Time(hi)); err != nil {
		return err
	}
	for i := range order {
		_, count := fields(&order[i])
		*count = sums[order[i]]
	}
	return add(ctx, tx, order)
}

// UpsertNode writes a heartbeat row; last_seen comes from the database clock.
func (b *Base) UpsertNode(ctx context.Context, n sluicetype.Node) error {
	err := RetryTransient(ctx, b.Transient, func() error {
		_, err := b.Write.ExecContext(ctx, b.Q.NodeUpsert, n.ID, n.Version, b.Time(n.StartedAt.UTC()), n.Concurrency, n.Running)
		return err
	})
	if err != nil {
		return fmt.Errorf("node heartbeat %s: %w", n.ID, err)
	}
	return nil
}

// DeleteNode removes a node's heartbeat row.
func (b *Base) DeleteNode(ctx context.Context, id string) error {
	if _, err := b.Write.ExecContext(ctx, b.Q.NodeDelete, id); err != nil {
		return fmt.Errorf("delete node %s: %w", id, err)
	}
	return nil
}

// ListNodes reads every heartbeat row.
func (b *Base) ListNodes(ctx context.Context) ([]sluicetype.Node, error) {
	return QueryAll(ctx, b.Read, "list nodes", b.Q.NodeList, nil, func(rows *sql.Rows) (sluicetype.Node, error) {
		var n sluicetype.Node
		var started, seen Time
		err := rows.Scan(&n.ID, &n.Version, &started, &seen, &n.Concurrency, &n.Running)
		n.StartedAt, n.LastSeen = started.Time, seen.Time
		return n, err
	})
}

// PurgeNodes deletes heartbeat rows older than staleAfter.
func (b *Base) PurgeNodes(ctx context.Context, p driver.PurgeNodesParams) (int64, error) {
	staleAfter := p.StaleAfter
	res, err := b.Write.ExecContext(ctx, b.Q.NodePurge, b.Duration(-staleAfter))
	if err != nil {
		return 0, fmt.Errorf("purge stale nodes: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge stale nodes: %w", err)
	}
	return n, nil
}

// ListLeases reads every named lease.
func (b *Base) ListLeases(ctx context.Context) ([]sluicetype.LeaseState, error) {
	return QueryAll(ctx, b.Read, "list leases", b.Q.LeaseList, nil, func(rows *sql.Rows) (sluicetype.LeaseState, error) {
		var l sluicetype.LeaseState
		var since, until Time
		err := rows.Scan(&l.Name, &l.Holder, &l.Fence, &since, &until)
		l.Since, l.Until = since.Time, until.Time
		return l, err
	})
}

// Queries returns the dialect's statements, with the table prefix
// applied: the query-plan tests EXPLAIN them, and the bench runs its own.
func (b *Base) Queries() *Queries { return b.Q }
