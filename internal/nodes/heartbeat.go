// Package nodes keeps this process's sluice_nodes row: the live-node list
// the dashboard shows and the maintenance leader prunes. It is neither a
// metric nor a job heartbeat (those extend job leases, in internal/worker).
package nodes

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/buildinfo"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/metrics"
	"github.com/sluicehq/sluice/sluicetype"
)

// Heartbeat keeps a process's sluice_nodes row fresh and flushes its
// roll-up counts, every Every (default 5s), from Start until Stop.
type Heartbeat struct {
	Driver  driver.Driver
	Node    sluicetype.Node // ID, Concurrency; StartedAt and Version are filled in
	Running func() int
	Rollup  *metrics.Rollup // flushed on every beat, so counts ride the same timer
	Every   time.Duration
	Logger  *slog.Logger
	Clock   clock.Clock // the client's; StartedAt is read from it
	// Serve, when set, stamps the job types the process serves; it runs
	// on the first beat and then on the first beat ServeEvery after the
	// last one that succeeded.
	Serve      func(context.Context) error
	ServeEvery time.Duration

	lastServed time.Time

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
		h.Node.Version = buildinfo.Get().Compact()
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
	if h.Serve != nil && (h.lastServed.IsZero() || h.Clock.Since(h.lastServed) >= h.ServeEvery) {
		if err := h.Serve(ctx); err != nil {
			if ctx.Err() == nil {
				h.Logger.Warn("stamping the served job types failed; tried again on the next beat", "err", err)
			}
			return
		}
		h.lastServed = h.Clock.Now()
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
