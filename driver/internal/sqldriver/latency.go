package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The queue-latency roll-ups (sluice_stats_latency) are written, read and
// compacted as the counts of sluice_stats are, one row per histogram slot.

func (b *Base) addLatencyTx(ctx context.Context, tx *sql.Tx, rows []sluicetype.LatencyRow) error {
	for _, r := range rows {
		if r.Slot < 0 || r.Slot >= sluicetype.LatencySlots {
			return fmt.Errorf("latency slot %d: want 0 to %d", r.Slot, sluicetype.LatencySlots-1)
		}
		if _, err := tx.ExecContext(ctx, b.Q.LatencyAdd, r.Queue, r.Type, b.Time(r.Bucket.UTC()), r.Slot, r.Count); err != nil {
			return err
		}
	}
	return nil
}

// ReadLatency returns the latency slots of the buckets at or after since,
// oldest first.
func (b *Base) ReadLatency(ctx context.Context, p driver.ReadStatsParams) ([]sluicetype.LatencyRow, error) {
	return QueryAll(ctx, b.Read, "read latency roll-ups", b.Q.LatencyRead, []any{b.Time(p.Since.UTC())}, scanLatencyRow)
}

func scanLatencyRow(rows *sql.Rows) (sluicetype.LatencyRow, error) {
	var r sluicetype.LatencyRow
	var bucket Time
	err := rows.Scan(&r.Queue, &r.Type, &bucket, &r.Slot, &r.Count)
	r.Bucket = bucket.Time
	return r, err
}

// compactLatencyTx folds sluice_stats_latency's buckets in [lo, hi) to
// hours, slot by slot, as compactCountsTx does the counts.
func (b *Base) compactLatencyTx(ctx context.Context, tx *sql.Tx, lo, hi time.Time) error {
	return compactTx(ctx, tx, b, lo, hi, b.Q.LatencyRange, b.Q.LatencyDeleteRange, scanLatencyRow,
		func(r *sluicetype.LatencyRow) (*time.Time, *int64) { return &r.Bucket, &r.Count }, b.addLatencyTx)
}
