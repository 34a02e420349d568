package bench

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/sluicehq/sluice/driver"
)

// preloadChunk is the number of rows one preload statement inserts: large
// enough that round trips do not matter, small enough that progress moves.
const preloadChunk = 100_000

// preload inserts FinishedRows finished rows in chunks, then refreshes the
// planner statistics, as a long-lived table would have them.
func (r *runner) preload(ctx context.Context) error {
	var done atomic.Int64
	stop := r.track("preload", int64(r.cfg.FinishedRows), &done)
	defer stop()
	// Their finished_at is spread over the last minutes, one millisecond
	// apart, well inside the retention, so that the purger leaves them alone.
	for done.Load() < int64(r.cfg.FinishedRows) {
		n := min(int64(preloadChunk), int64(r.cfg.FinishedRows)-done.Load())
		p := driver.SeedFinishedParams{Queue: queue, Type: preloadType, AgoMS: done.Load(), N: n}
		if err := r.d.SeedFinished(ctx, p); err != nil {
			return fmt.Errorf("preload finished rows at row %d: %w", done.Load(), err)
		}
		done.Add(n)
	}
	if err := r.d.Analyze(ctx); err != nil {
		return fmt.Errorf("analyze after preload: %w", err)
	}
	return nil
}
