package batch

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/service"
)

// Throttle slows a batch down to spare the database.
type Throttle struct {
	// Sleep pauses after every chunk.
	Sleep time.Duration
	// MaxRowsPerSec bounds the rows per second of the whole batch in this
	// process: every shard it runs (Run's Parallel shards, and the shard
	// jobs of one Batch value in a worker) draws a chunk's rows from one
	// token bucket after the chunk, the last chunk of a shard included.
	// The bucket starts empty and holds at most one chunk, so over any run
	// the rows done stay within MaxRowsPerSec times the time taken. Other
	// processes have their own buckets: N processes run up to N times it.
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
		v, err := r.b.throttleValue(ctx, r.drv)
		if err != nil {
			return err
		}
		if v <= t.Threshold {
			return nil
		}
		why := fmt.Sprintf("throttled: throttle query returned %g, above the threshold %g", v, t.Threshold)
		r.b.Log.Info("batch throttled", "batch", r.b.Name, "shard", r.shard.name, "value", v, "threshold", t.Threshold)
		r.progress.throttled(r.shard.name, why)
		if !service.Sleep(ctx, t.Poll) {
			return ctx.Err()
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

// throttleValue runs the throttle query; NULL counts as 0.
func (b *Batch) throttleValue(ctx context.Context, d driver.Driver) (float64, error) {
	var v sql.NullFloat64
	if err := d.DB().QueryRowContext(ctx, b.Throttle.Query).Scan(&v); err != nil {
		return 0, fmt.Errorf("batch %s: throttle query: %w", b.Name, err)
	}
	return v.Float64, nil
}

// pace applies Sleep and MaxRowsPerSec after a chunk of n rows: the sleep
// between chunks, then the rows drawn from the batch's bucket.
func (r *shardRun) pace(ctx context.Context, n int, last bool) error {
	if t := r.b.Throttle.Sleep; t > 0 && !last {
		if !service.Sleep(ctx, t) {
			return ctx.Err()
		}
	}
	if r.b.limiter != nil && n > 0 {
		return r.b.limiter.WaitN(ctx, n)
	}
	return nil
}

// maxChunk is the largest chunk a shard can read.
func (b *Batch) maxChunk() int {
	if b.TargetChunkDuration > 0 {
		return b.MaxChunk
	}
	return b.ChunkSize
}

// newRowLimiter returns a bucket of perSec rows a second that holds one
// chunk, empty: a full one would let the first chunk of every shard
// through unpaced.
func newRowLimiter(perSec float64, chunk int) *rate.Limiter {
	l := rate.NewLimiter(rate.Limit(perSec), chunk)
	l.AllowN(time.Now(), chunk)
	return l
}
