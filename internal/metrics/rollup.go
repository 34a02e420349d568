package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

type rollKey struct {
	queue, typ string
	outcome    sluicetype.Outcome
	minute     time.Time
}

type latencyKey struct {
	queue, typ string
	minute     time.Time
	slot       int
}

// Rollup counts finished attempts per queue, type, outcome and minute,
// and their queue latencies per queue, type, minute and histogram slot,
// in memory; Flush adds them to sluice_stats and sluice_stats_latency. No
// one ever counts finished rows: each node adds what it saw.
type Rollup struct {
	mu      sync.Mutex
	counts  map[rollKey]int64
	latency map[latencyKey]int64
	// flushing serializes flushes, so that when Flush returns every count
	// added before the call is in the roll-ups (or kept after a failure),
	// even if another flush (the heartbeat's) had taken them first.
	flushing sync.Mutex
}

// NewRollup returns an empty Rollup.
func NewRollup() *Rollup {
	return &Rollup{counts: map[rollKey]int64{}, latency: map[latencyKey]int64{}}
}

// Add counts one attempt that finished at at after waiting waited from
// becoming runnable to its start; an attempt that ran nothing (a cancel)
// has no wait, as in Metrics.Completed.
func (r *Rollup) Add(queue, typ string, outcome sluicetype.Outcome, at time.Time, waited time.Duration) {
	minute := at.UTC().Truncate(time.Minute)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[rollKey{queue, typ, outcome, minute}]++
	if attempted(outcome) {
		r.latency[latencyKey{queue, typ, minute, sluicetype.LatencySlot(waited)}]++
	}
}

// AddRescued counts the jobs that a rescue pass at at failed for good; no
// attempt of theirs started here, so they have no wait.
func (r *Rollup) AddRescued(res sluicetype.RescueResult, at time.Time) {
	minute := at.UTC().Truncate(time.Minute)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, n := range res.FailedBy {
		r.counts[rollKey{k.Queue, k.Type, sluicetype.OutcomeFailed, minute}] += int64(n)
	}
}

// Flush writes the counts; on failure they are kept for the next flush,
// so a database outage delays roll-ups but loses none. Each count is
// written by one flush only, however many run at once.
func (r *Rollup) Flush(ctx context.Context, d driver.Driver) error {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	counts, latency := r.counts, r.latency
	r.counts, r.latency = map[rollKey]int64{}, map[latencyKey]int64{}
	r.mu.Unlock()
	if len(counts)+len(latency) == 0 {
		return nil
	}
	p := driver.AddStatsParams{Rows: make([]sluicetype.StatRow, 0, len(counts)), Latency: make([]sluicetype.LatencyRow, 0, len(latency))}
	for k, n := range counts {
		p.Rows = append(p.Rows, sluicetype.StatRow{Queue: k.queue, Type: k.typ, Outcome: k.outcome, Bucket: k.minute, Count: n})
	}
	for k, n := range latency {
		p.Latency = append(p.Latency, sluicetype.LatencyRow{Queue: k.queue, Type: k.typ, Bucket: k.minute, Slot: k.slot, Count: n})
	}
	if err := d.AddStats(ctx, p); err != nil {
		r.mu.Lock()
		for k, n := range counts {
			r.counts[k] += n
		}
		for k, n := range latency {
			r.latency[k] += n
		}
		r.mu.Unlock()
		return err
	}
	return nil
}
