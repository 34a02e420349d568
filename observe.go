package sluice

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/metrics"
	"github.com/sluicehq/sluice/internal/worker"
	"github.com/sluicehq/sluice/sluicetype"
)

// Metrics returns the client's Prometheus metrics, which the server
// exposes at /metrics. Locks and batches are counted there only when a
// program passes it as lock.Options.Metrics or batch.Batch.Metrics.
func (c *Client) Metrics() *metrics.Metrics { return c.metrics }

// Schedules returns the configured schedules, for the dashboard.
func (c *Client) Schedules() []Schedule { return c.cfg.Schedules }

// QueueOf is the queue a job of jobType goes to when it names none: its
// type's queue in the config, else DefaultQueue. The server checks it
// against a token limited to some queues.
func (c *Client) QueueOf(jobType string) string { return c.typeOf(jobType).Queue }

// NodeID is the name this process uses in leases and sluice_nodes.
func (c *Client) NodeID() string { return c.cfg.NodeID }

// StartGauges refreshes the gauges of /metrics every gaugeEvery until ctx
// ends: the live queue counts (shared by the cluster, see queueGauges),
// the paused flags, the newest worker heartbeat and the stalled batch
// shards, each a read of a small table. Start calls it; an API-only server
// (serve --no-workers) calls it itself.
func (c *Client) StartGauges(ctx context.Context) {
	c.metrics.StartGauges(ctx, gaugeEvery, c.readGauges, func(err error) { c.log.Warn("refreshing gauges failed", "err", err) })
}

// gaugeEvery is how often each process refreshes its gauges.
const gaugeEvery = 15 * time.Second

// gaugeClaimAge is how old the cluster's shared count must be before a
// process counts again: a tenth under gaugeEvery, so that the last
// winner's own next tick, a little early by the ticker's jitter, still
// wins rather than leaving the count a whole interval older.
const gaugeClaimAge = gaugeEvery - gaugeEvery/10

// queueGauges returns the live counts per queue, counted (the Stats query,
// the expensive read of the gauges) by one process of the cluster per
// interval: the one whose claim moves the shared snapshot on. The others
// read what it wrote, at most an interval old; when the winner died
// before writing, the next claim an interval later is another's.
func (c *Client) queueGauges(ctx context.Context) ([]sluicetype.QueueStats, error) {
	won, err := c.drv.ClaimGauges(ctx, driver.ClaimGaugesParams{Every: gaugeClaimAge})
	if err != nil {
		return nil, err
	}
	if !won {
		snap, err := c.drv.ReadGauges(ctx)
		return snap.Queues, err
	}
	// The live-rows query only: the roll-ups that Stats adds are not
	// gauges.
	st, err := c.drv.Stats(ctx)
	if err != nil {
		return nil, err
	}
	return st, c.drv.PutGauges(ctx, driver.PutGaugesParams{Queues: st})
}

func (c *Client) readGauges(ctx context.Context) (metrics.Gauges, error) {
	st, err := c.queueGauges(ctx)
	if err != nil {
		return metrics.Gauges{}, err
	}
	now, err := c.drv.Now(ctx)
	if err != nil {
		return metrics.Gauges{}, err
	}
	g := metrics.Gauges{Queues: make([]metrics.QueueGauge, len(st)), ShardStalled: map[string]time.Duration{}}
	for i, s := range st {
		g.Queues[i] = metrics.QueueGauge{Queue: s.Queue, Pending: s.Pending, Processing: s.Processing, Failed: s.Failed,
			OldestPendingAge: s.PendingAge(now)}
	}
	if g.Paused, err = c.drv.PausedQueues(ctx); err != nil {
		return metrics.Gauges{}, err
	}
	// sluice_nodes holds one row per live process (stale rows are purged),
	// and sluice_checkpoints one per batch shard: both stay small.
	nodes, err := c.drv.ListNodes(ctx)
	if err != nil {
		return metrics.Gauges{}, err
	}
	for _, n := range nodes {
		age := max(now.Sub(n.LastSeen), 0)
		if g.HeartbeatAge == nil || age < *g.HeartbeatAge {
			g.HeartbeatAge = &age
		}
	}
	cps, err := c.drv.ListCheckpoints(ctx)
	if err != nil {
		return metrics.Gauges{}, err
	}
	for _, cp := range cps {
		if cp.Status != sluicetype.CheckpointRunning {
			continue
		}
		g.ShardStalled[cp.Batch] = max(g.ShardStalled[cp.Batch], now.Sub(cp.UpdatedAt), 0)
	}
	circuits, err := c.drv.ListCircuits(ctx)
	if err != nil {
		return metrics.Gauges{}, err
	}
	g.Circuits = map[string]bool{}
	for name, t := range c.cfg.Types {
		if t.Circuit.Threshold > 0 {
			g.Circuits[name] = false
		}
	}
	for _, cs := range circuits {
		g.Circuits[cs.Type] = cs.State != sluicetype.CircuitClosed
	}
	waiting, err := c.WaitingForHandler(ctx)
	if err != nil {
		return metrics.Gauges{}, err
	}
	g.WaitingForHandler = make(map[string]int64, len(waiting))
	for _, w := range waiting {
		g.WaitingForHandler[w.Type] = w.Pending
	}
	unserved, err := c.UnservedQueues(ctx)
	if err != nil {
		return metrics.Gauges{}, err
	}
	g.UnservedQueues = make(map[string]int64, len(unserved))
	for _, u := range unserved {
		g.UnservedQueues[u.Queue] = u.Pending
	}
	return g, nil
}

// uncharged is the outcome of an attempt given back without using it (a
// snooze, or a shutdown or pass deadline that cut it short): neither a
// success nor a failure, so metrics and roll-ups skip it.
const uncharged = sluicetype.AttemptReleased

// outcomeOf names an attempt's outcome for metrics, roll-ups, logs, the
// counts of a RunOnce pass and the attempt history: worker.AttemptOutcome
// is the one rule, so that they cannot disagree.
func outcomeOf(o worker.Result) sluicetype.Outcome { return worker.AttemptOutcome(o) }

// workerHooks count and log every job event with the same fields. Every
// pool of the client uses them: the long-running workers and each RunOnce
// pass.
func (c *Client) workerHooks() worker.Hooks {
	return worker.Hooks{
		Claimed: func(queue string, _ int, took time.Duration) { c.metrics.Claimed(queue, took) },
		Completed: func(job sluicetype.JobRow, o worker.Result, ran time.Duration) {
			outcome := outcomeOf(o)
			if outcome != uncharged {
				now, waited := c.cfg.Clock(), job.QueueLatency()
				c.metrics.Completed(job.Queue, job.Type, outcome, ran, waited)
				c.rollup.Add(job.Queue, job.Type, outcome, now, waited)
			}
			c.logAttempt(job, o, outcome, ran)
		},
		LeaseLost: func(job sluicetype.JobRow, _ string) { c.metrics.LeaseLost(job.Queue, job.Type) },
		CancelDropped: func(job sluicetype.JobRow, reported sluicetype.Outcome) {
			c.metrics.CancelDropped(job.Queue, job.Type, reported)
		},
	}
}

// logAttempt writes the one log line of an attempt: a warning when it
// failed, info otherwise. Above debug level it carries no user data: the
// error is its summary (see DetailError), and the payload and the
// handler's output appear only when debug is enabled.
func (c *Client) logAttempt(job sluicetype.JobRow, o worker.Result, outcome sluicetype.Outcome, ran time.Duration) {
	debug := c.log.Enabled(context.Background(), slog.LevelDebug)
	attrs := []any{"job_id", job.ID, "type", job.Type, "queue", job.Queue, "attempt", job.Attempts,
		"duration", ran, "status", o.Status}
	if outcome != uncharged {
		attrs = append(attrs, "outcome", outcome)
	}
	if o.TraceID != "" {
		attrs = append(attrs, "trace_id", o.TraceID)
	}
	if o.Error != nil {
		summary := o.Summary
		if summary == "" {
			summary = *o.Error
		}
		attrs = append(attrs, "error", driver.Truncate(summary, maxLoggedError, false))
		if debug && summary != *o.Error {
			attrs = append(attrs, "error_detail", driver.Truncate(*o.Error, maxLoggedError, false))
		}
	}
	if debug && c.cfg.LogPayloads {
		attrs = append(attrs, "payload", string(job.Payload))
	}
	switch outcome {
	case sluicetype.OutcomeFailed, sluicetype.OutcomeRetry:
		c.log.Warn("job attempt failed", attrs...)
	case uncharged:
		c.log.Info("job returned to pending without using its attempt", attrs...)
	default:
		// At info, so that a worker's terminal shows each job finish;
		// --log-level warn keeps only failures.
		c.log.Info("job finished", attrs...)
	}
}

// maxLoggedError bounds an error in a log line; last_error keeps more.
const maxLoggedError = 512

// DetailError is a handler error whose full text holds what the handler
// printed or answered (a command's stderr, a webhook's response body),
// which may repeat the job's payload. Its Error is the full text, kept in
// the job's last_error; logs above debug level show only Err, so that
// payloads stay out of them as docs/observability.md "Logs" promises.
type DetailError struct {
	// Err says how the handler failed in words that carry no user data:
	// "command report: exit code 3", "HTTP 500". errors.Is and errors.As
	// see through to it.
	Err error
	// Detail is the handler's output, already cut to what last_error holds.
	Detail string
}

func (e *DetailError) Error() string {
	if e.Detail == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + ": " + e.Detail
}

func (e *DetailError) Unwrap() error { return e.Err }

// summaryOf is err's text with the detail of a DetailError left out. If a
// wrapper reworded the DetailError's text so that it cannot be found,
// only the DetailError's summary is given, never the rest.
func summaryOf(err error) string {
	var de *DetailError
	if !errors.As(err, &de) || de.Detail == "" {
		return err.Error()
	}
	full, safe := err.Error(), de.Err.Error()
	if !strings.Contains(full, de.Error()) {
		return safe
	}
	return strings.ReplaceAll(full, de.Error(), safe)
}

// scheduleLabels gives the queue and type of a schedule's jobs.
func (c *Client) scheduleLabels(s Schedule) (queue, typ string) {
	queue = s.Queue
	if queue == "" {
		queue = c.typeOf(s.Type).Queue
	}
	return queue, s.Type
}

// chores run on the maintenance leader: compact roll-ups past the success
// retention to hours and drop the rows of nodes that stopped without
// saying so (a killed process).
func (c *Client) chores(ctx context.Context) {
	keep := c.cfg.Retention[sluicetype.StatusSuccess]
	if keep <= 0 {
		keep = DefaultRetentionSuccess
	}
	if err := c.drv.CompactStats(ctx, driver.CompactStatsParams{Before: c.cfg.Clock().Add(-keep)}); err != nil {
		c.log.Warn("compacting roll-ups failed", "err", err)
	}
	if n, err := c.drv.PurgeNodes(ctx, driver.PurgeNodesParams{StaleAfter: staleNode}); err != nil {
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
	c.metrics.Completed(r.Queue, r.Type, sluicetype.OutcomeCancelled, 0, 0)
	c.log.Info("job cancelled", "job_id", r.ID, "type", r.Type, "queue", r.Queue, "attempt", r.Attempts, "duration", time.Duration(0))
	row := sluicetype.StatRow{Queue: r.Queue, Type: r.Type, Outcome: sluicetype.OutcomeCancelled, Bucket: c.cfg.Clock().UTC().Truncate(time.Minute), Count: 1}
	if err := c.drv.AddStats(ctx, driver.AddStatsParams{Rows: []sluicetype.StatRow{row}}); err != nil {
		c.log.Warn("counting a cancel in the roll-ups failed", "job_id", id, "err", err)
	}
}
