package metrics

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
)

type rollKey struct {
	queue, typ, outcome string
	minute              time.Time
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
func (r *Rollup) Add(queue, typ, outcome string, at time.Time) { r.addN(queue, typ, outcome, at, 1) }

// AddRescued counts the jobs that a rescue pass at at failed for good.
func (r *Rollup) AddRescued(res driver.RescueResult, at time.Time) {
	for k, n := range res.FailedBy {
		r.addN(k.Queue, k.Type, driver.OutcomeFailed, at, int64(n))
	}
}

func (r *Rollup) addN(queue, typ, outcome string, at time.Time, n int64) {
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

// Heartbeat keeps a process's sluice_nodes row fresh and flushes its
// roll-up counts, every Every (default 5s), from Start until Stop.
type Heartbeat struct {
	Driver  driver.Driver
	Node    driver.Node // ID, Concurrency; StartedAt and Version are filled in
	Running func() int
	Rollup  *Rollup
	Every   time.Duration
	Logger  *slog.Logger
	Clock   clock.Clock // the client's; StartedAt is read from it

	cancel context.CancelFunc
	done   chan struct{}
}

// Start writes the first row at once, then runs the loop.
func (h *Heartbeat) Start(ctx context.Context) {
	if h.Every <= 0 {
		h.Every = 5 * time.Second
	}
	h.Node.StartedAt = h.Clock.Now()
	if h.Node.Version == "" {
		h.Node.Version = version()
	}
	ctx, h.cancel = context.WithCancel(context.WithoutCancel(ctx))
	h.done = make(chan struct{})
	h.beat(ctx)
	go func() {
		defer close(h.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(h.Every):
			}
			h.beat(ctx)
		}
	}()
}

func (h *Heartbeat) beat(ctx context.Context) {
	n := h.Node
	n.Running = h.Running()
	if err := h.Driver.UpsertNode(ctx, n); err != nil && ctx.Err() == nil {
		h.Logger.Warn("node heartbeat failed", "node", n.ID, "err", err)
	}
	if err := h.Rollup.Flush(ctx, h.Driver); err != nil && ctx.Err() == nil {
		h.Logger.Warn("flushing roll-ups failed; kept for the next try", "err", err)
	}
}

// Stop ends the loop, flushes the last counts and deletes the node's row.
func (h *Heartbeat) Stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Rollup.Flush(ctx, h.Driver); err != nil {
		h.Logger.Warn("flushing roll-ups at stop", "err", err)
	}
	if err := h.Driver.DeleteNode(ctx, h.Node.ID); err != nil {
		h.Logger.Warn("deleting node row at stop", "node", h.Node.ID, "err", err)
	}
	h.cancel = nil
}

// version is the main module's version from the build, "(devel)" for a
// plain go build.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}
