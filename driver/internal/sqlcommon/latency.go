package sqlcommon

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// The queue-latency roll-ups (sluice_stats_latency) are written, read and
// compacted as the counts of sluice_stats are, one row per histogram slot.

func (b *Base) addLatencyTx(ctx context.Context, tx *sql.Tx, rows []driver.LatencyRow) error {
	for _, r := range rows {
		if r.Slot < 0 || r.Slot >= driver.LatencySlots {
			return fmt.Errorf("latency slot %d: want 0 to %d", r.Slot, driver.LatencySlots-1)
		}
		if _, err := tx.ExecContext(ctx, b.Q.LatencyAdd, r.Queue, r.Type, b.Time(r.Bucket.UTC()), r.Slot, r.Count); err != nil {
			return err
		}
	}
	return nil
}

// ReadLatency returns the latency slots of the buckets at or after since,
// oldest first.
func (b *Base) ReadLatency(ctx context.Context, p driver.ReadStatsParams) ([]driver.LatencyRow, error) {
	rows, err := b.Read.QueryContext(ctx, b.Q.LatencyRead, b.Time(p.Since.UTC()))
	if err != nil {
		return nil, fmt.Errorf("read latency roll-ups: %w", err)
	}
	out, err := scanLatency(rows)
	if err != nil {
		return nil, fmt.Errorf("read latency roll-ups: %w", err)
	}
	return out, nil
}

func scanLatency(rows *sql.Rows) ([]driver.LatencyRow, error) {
	defer rows.Close()
	var out []driver.LatencyRow
	for rows.Next() {
		var r driver.LatencyRow
		var bucket Time
		if err := rows.Scan(&r.Queue, &r.Type, &bucket, &r.Slot, &r.Count); err != nil {
			return nil, err
		}
		r.Bucket = bucket.Time
		out = append(out, r)
	}
	return out, rows.Err()
}

// compactLatencyTx folds sluice_stats_latency's buckets in [lo, hi) to
// hours, slot by slot, as compactCountsTx does the counts.
func (b *Base) compactLatencyTx(ctx context.Context, tx *sql.Tx, lo, hi time.Time) error {
	rows, err := tx.QueryContext(ctx, b.Q.LatencyRange, b.Time(lo), b.Time(hi))
	if err != nil {
		return err
	}
	old, err := scanLatency(rows)
	if err != nil {
		return err
	}
	type key struct {
		queue, typ string
		hour       time.Time
		slot       int
	}
	sums := map[key]int64{}
	var order []key
	for _, r := range old {
		k := key{r.Queue, r.Type, r.Bucket.UTC().Truncate(time.Hour), r.Slot}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += r.Count
	}
	if len(order) == len(old) {
		return nil // every bucket is hourly already
	}
	if _, err := tx.ExecContext(ctx, b.Q.LatencyDeleteRange, b.Time(lo), b.Time(hi)); err != nil {
		return err
	}
	hourly := make([]driver.LatencyRow, len(order))
	for i, k := range order {
		hourly[i] = driver.LatencyRow{Queue: k.queue, Type: k.typ, Bucket: k.hour, Slot: k.slot, Count: sums[k]}
	}
	return b.addLatencyTx(ctx, tx, hourly)
}
