package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
)

type rollKey struct {
	queue, typ string
	outcome    driver.Outcome
	minute     time.Time
}

// Rollup counts finished attempts per queue, type, outcome and minute in
// memory; Flush adds them to sluice_stats. No one ever counts finished
// rows: each node adds what it saw.
type Rollup struct {
	mu     sync.Mutex
	counts map[rollKey]int64
	// flushing serializes flushes, so that when Flush returns every count
	// added before the call is in sluice_stats (or kept after a failure),
	// even if another flush (the heartbeat's) had taken them first.
	flushing sync.Mutex
}

// NewRollup returns an empty Rollup.
func NewRollup() *Rollup { return &Rollup{counts: map[rollKey]int64{}} }

// Add counts one attempt that finished at at.
func (r *Rollup) Add(queue, typ string, outcome driver.Outcome, at time.Time) {
	r.addN(queue, typ, outcome, at, 1)
}

// AddRescued counts the jobs that a rescue pass at at failed for good.
func (r *Rollup) AddRescued(res driver.RescueResult, at time.Time) {
	for k, n := range res.FailedBy {
		r.addN(k.Queue, k.Type, driver.OutcomeFailed, at, int64(n))
	}
}

func (r *Rollup) addN(queue, typ string, outcome driver.Outcome, at time.Time, n int64) {
	k := rollKey{queue, typ, outcome, at.UTC().Truncate(time.Minute)}
	r.mu.Lock()
	r.counts[k] += n
	r.mu.Unlock()
}

// Flush writes the counts; on failure they are kept for the next flush,
// so a database outage delays roll-ups but loses none. Each count is
// written by one flush only, however many run at once.
func (r *Rollup) Flush(ctx context.Context, d driver.Driver) error {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	counts := r.counts
	r.counts = map[rollKey]int64{}
	r.mu.Unlock()
	if len(counts) == 0 {
		return nil
	}
	rows := make([]driver.StatRow, 0, len(counts))
	for k, n := range counts {
		rows = append(rows, driver.StatRow{Queue: k.queue, Type: k.typ, Outcome: k.outcome, Bucket: k.minute, Count: n})
	}
	if err := d.AddStats(ctx, driver.AddStatsParams{Rows: rows}); err != nil {
		r.mu.Lock()
		for k, n := range counts {
			r.counts[k] += n
		}
		r.mu.Unlock()
		return err
	}
	return nil
}
