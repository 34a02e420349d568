package sluice

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/metrics"
	"github.com/sluicehq/sluice/internal/worker"
)

// Metrics returns the client's Prometheus metrics, which the server
// exposes at /metrics. Packages lock and batch count into them through
// LockAcquired, LockBusy and BatchChunk.
func (c *Client) Metrics() *metrics.Metrics { return c.metrics }

// Schedules returns the configured schedules, for the dashboard.
func (c *Client) Schedules() []Schedule { return c.cfg.Schedules }

// NodeID is the name this process uses in leases and sluice_nodes.
func (c *Client) NodeID() string { return c.cfg.NodeID }

// StartGauges refreshes the queue gauges of /metrics from the Stats query
// every 15 seconds until ctx ends. Start calls it; an API-only server
// (serve --no-workers) calls it itself.
func (c *Client) StartGauges(ctx context.Context) {
	c.metrics.StartGauges(ctx, 15*time.Second, func(ctx context.Context) ([]metrics.QueueGauge, error) {
		// The live-rows query only: the roll-ups that Stats adds are not
		// gauges.
		st, err := c.drv.Stats(ctx)
		if err != nil {
			return nil, err
		}
		now, err := c.drv.Now(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]metrics.QueueGauge, len(st))
		for i, s := range st {
			out[i] = metrics.QueueGauge{Queue: s.Queue, Pending: s.Pending, Processing: s.Processing, Failed: s.Failed}
			if s.OldestPending != nil && s.OldestPending.Before(now) {
				out[i].OldestPendingAge = now.Sub(*s.OldestPending)
			}
		}
		return out, nil
	}, func(err error) { c.log.Warn("refreshing queue gauges failed", "err", err) })
}

// outcomeOf names an attempt's outcome for metrics and roll-ups; "" for
// an attempt given back without a charge (snooze, shutdown), which is
// neither a success nor a failure.
func outcomeOf(o worker.Outcome) string {
	switch {
	case o.Status == driver.StatusSuccess:
		return metrics.OutcomeSuccess
	case o.Status == driver.StatusFailed:
		return metrics.OutcomeFailed
	case o.Refund:
		return ""
	default:
		return metrics.OutcomeRetry
	}
}

// workerHooks count and log every job event with the same fields.
func (c *Client) workerHooks() worker.Hooks {
	return worker.Hooks{
		Claimed: func(queue string, _ int, took time.Duration) { c.metrics.Claimed(queue, took) },
		Completed: func(job driver.JobRow, o worker.Outcome, ran time.Duration) {
			now := c.cfg.Clock()
			outcome := outcomeOf(o)
			attrs := []any{"job_id", job.ID, "type", job.Type, "queue", job.Queue, "attempt", job.Attempts,
				"duration", ran, "outcome", outcome, "status", o.Status}
			if outcome != "" {
				c.metrics.Completed(job.Queue, job.Type, outcome, ran, now.Add(-ran).Sub(job.NextRunAt))
				c.rollup.Add(job.Queue, job.Type, outcome, now)
			}
			if o.Error != nil {
				attrs = append(attrs, "error", driver.Truncate(*o.Error, 512, false))
			}
			if c.cfg.LogPayloads {
				attrs = append(attrs, "payload", string(job.Payload))
			}
			if outcome == metrics.OutcomeFailed || outcome == metrics.OutcomeRetry {
				c.log.Warn("job attempt failed", attrs...)
				return
			}
			c.log.Debug("job finished", attrs...)
		},
		LeaseLost: func(job driver.JobRow, _ string) { c.metrics.LeaseLost(job.Queue, job.Type) },
	}
}

// scheduleLabels gives the queue and type of a schedule's jobs.
func (c *Client) scheduleLabels(s Schedule) (queue, typ string) {
	queue = s.Queue
	if queue == "" {
		queue = "default"
		if t, ok := c.cfg.Types[s.Type]; ok {
			queue = t.Queue
		}
	}
	return queue, s.Type
}

// chores run on the maintenance leader: compact roll-ups past the success
// retention to hours and drop the rows of nodes that stopped without
// saying so (a killed process).
func (c *Client) chores(ctx context.Context) {
	keep := c.cfg.Retention[driver.StatusSuccess]
	if keep <= 0 {
		keep = 7 * 24 * time.Hour
	}
	if err := c.drv.CompactStats(ctx, c.cfg.Clock().Add(-keep)); err != nil {
		c.log.Warn("compacting roll-ups failed", "err", err)
	}
	if n, err := c.drv.PurgeNodes(ctx, staleNode); err != nil {
		c.log.Warn("removing stale node rows failed", "err", err)
	} else if n > 0 {
		c.log.Info("removed stale node rows", "nodes", n)
	}
}

// staleNode is how long a node row may go without a heartbeat (every 5s)
// before the leader deletes it.
const staleNode = time.Minute

// countCancel records an operator's cancel in the metrics and, at once,
// in the roll-ups: the cancelling process (often the CLI) may not live to
// flush.
func (c *Client) countCancel(ctx context.Context, id int64) {
	r, err := c.drv.GetJob(ctx, id)
	if err != nil {
		c.log.Warn("reading a cancelled job for its metrics", "job_id", id, "err", err)
		return
	}
	c.metrics.Completed(r.Queue, r.Type, metrics.OutcomeCancelled, 0, 0)
	c.log.Info("job cancelled", "job_id", r.ID, "type", r.Type, "queue", r.Queue, "attempt", r.Attempts, "duration", time.Duration(0))
	row := driver.StatRow{Queue: r.Queue, Type: r.Type, Outcome: metrics.OutcomeCancelled, Bucket: c.cfg.Clock().UTC().Truncate(time.Minute), Count: 1}
	if err := c.drv.AddStats(ctx, []driver.StatRow{row}); err != nil {
		c.log.Warn("counting a cancel in the roll-ups failed", "job_id", id, "err", err)
	}
}
