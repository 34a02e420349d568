package batch

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Throttle slows a batch down to spare the database.
type Throttle struct {
	// Sleep pauses after every chunk.
	Sleep time.Duration
	// MaxRowsPerSec bounds each shard's rate: after a chunk of n rows, the
	// shard waits until n/MaxRowsPerSec has passed since the chunk began.
	MaxRowsPerSec float64
	// Query returns one number, such as replica lag in seconds or the
	// count of running threads. Before each chunk the shard waits, polling
	// every Poll, while it is above Threshold.
	Query     string
	Threshold float64
	Poll      time.Duration // default 1s
}

func (t *Throttle) check() error {
	if t.Sleep < 0 || t.MaxRowsPerSec < 0 || t.Poll < 0 {
		return fmt.Errorf("throttle: negative sleep, rate or poll")
	}
	if t.Poll == 0 {
		t.Poll = time.Second
	}
	return nil
}

// waitThrottle waits while the throttle query is above its threshold,
// saying why through Progress and the log. It keeps the shard's lease
// fresh and stops if the batch is paused meanwhile.
func (r *shardRun) waitThrottle(ctx context.Context) error {
	t := r.b.Throttle
	if t.Query == "" {
		return nil
	}
	lastTouch := time.Now()
	for {
		var v sql.NullFloat64
		if err := r.drv.DB().QueryRowContext(ctx, t.Query).Scan(&v); err != nil {
			return fmt.Errorf("batch %s: throttle query: %w", r.b.Name, err)
		}
		if v.Float64 <= t.Threshold {
			return nil
		}
		why := fmt.Sprintf("throttled: throttle query returned %g, above the threshold %g", v.Float64, t.Threshold)
		r.b.Log.Info("batch throttled", "batch", r.b.Name, "shard", r.shard.name, "value", v.Float64, "threshold", t.Threshold)
		r.progress.throttled(r.shard.name, why)
		if err := sleep(ctx, t.Poll); err != nil {
			return err
		}
		if time.Since(lastTouch) > r.b.Lease/3 {
			if err := r.touch(ctx); err != nil {
				return err
			}
			lastTouch = time.Now()
		}
		if err := r.boundary(ctx); err != nil {
			return err
		}
	}
}

// pace applies Sleep and MaxRowsPerSec after a chunk of n rows that took took.
func (r *shardRun) pace(ctx context.Context, n int, took time.Duration) error {
	t := r.b.Throttle
	wait := t.Sleep
	if t.MaxRowsPerSec > 0 {
		wait = max(wait, time.Duration(float64(n)/t.MaxRowsPerSec*float64(time.Second))-took)
	}
	if wait <= 0 {
		return nil
	}
	return sleep(ctx, wait)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
