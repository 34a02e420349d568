// Package sluice runs background jobs durably on the SQL database a team
// already has: SQLite, MySQL / MariaDB or PostgreSQL.
//
// A Client enqueues jobs and, when configured with queues, runs them:
// claims are batched under leases, every update after a claim is fenced by
// the lease token, failed attempts retry with exponential backoff, and a
// maintenance leader rescues jobs whose worker died. See docs/design.md.
package sluice

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/maintenance"
	"github.com/sluicehq/sluice/internal/metrics"
	"github.com/sluicehq/sluice/internal/nodes"
	"github.com/sluicehq/sluice/internal/scheduler"
	"github.com/sluicehq/sluice/internal/worker"
	"github.com/sluicehq/sluice/sluicetype"
)

// Client enqueues jobs and runs workers for its configured queues.
type Client struct {
	cfg   Config
	drv   driver.Driver
	log   *slog.Logger
	pool  *worker.Pool
	maint *maintenance.Service
	sched *scheduler.Scheduler

	metrics *metrics.Metrics
	rollup  *metrics.Rollup
	beat    *nodes.Heartbeat // nil for a client without workers
	tracer  trace.Tracer

	mu         sync.Mutex
	started    bool
	stopGauges context.CancelFunc

	typesMu     sync.Mutex
	typesSynced bool // see syncTypesOnce

	warnedMu sync.Mutex
	warned   map[string]bool // unknown types already warned of (warnUnknownTypes)
}

// NewClient checks cfg and builds a client. It does not touch the database.
func NewClient(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, drv: cfg.Driver, log: cfg.Logger, metrics: metrics.New(cfg.Driver.DB()), rollup: metrics.NewRollup(),
		tracer: tracerOf(cfg.TracerProvider)}
	if len(cfg.Queues) > 0 && len(c.handledTypes()) == 0 {
		// Workers claim only the types they have handlers for: with none,
		// they would claim nothing, so none start.
		cfg.Logger.Warn("no job type has a handler here: no worker starts, and jobs wait for a process that has one",
			"queues", len(cfg.Queues))
	} else if len(cfg.Queues) > 0 {
		c.pool = worker.New(worker.Config{
			Driver:   cfg.Driver,
			Queues:   c.queueList(),
			Run:      c.run,
			LeaseFor: c.leaseFor,
			Watchdog: c.watchdogFor,
			Fail:     c.stuckFailure,
			Circuit:  c.circuitFor,
			Logger:   cfg.Logger,
			PollMax:  cfg.PollMax,
			Hooks:    c.workerHooks(),
			Clock:    cfg.Clock,
			Node:     cfg.NodeID,
			// A zero limit is the driver's default.
			KeepAttempts: cfg.KeepAttempts,
		})
		concurrency := 0
		for _, q := range cfg.Queues {
			concurrency += q.Concurrency
		}
		c.beat = &nodes.Heartbeat{Driver: cfg.Driver, Node: sluicetype.Node{ID: cfg.NodeID, Concurrency: concurrency},
			Running: c.pool.Running, Rollup: c.rollup, Logger: cfg.Logger, Clock: cfg.Clock,
			Serve: c.serveWorkers, ServeEvery: ServeEvery}
	}
	if len(cfg.Queues) > 0 && !cfg.DisableMaintenance {
		c.maint = maintenance.New(maintenance.Config{
			Driver:         cfg.Driver,
			NodeID:         cfg.NodeID,
			Logger:         cfg.Logger,
			Retention:      cfg.Retention,
			AuditRetention: cfg.AuditRetention,
			RescueEvery:    cfg.RescueEvery,
			LeaderTTL:      cfg.LeaderTTL,
			Rescued:        c.countRescued,
			Chores:         c.chores,
			KeepAttempts:   cfg.KeepAttempts,
			Clock:          cfg.Clock,
		})
	}
	if len(cfg.Schedules) > 0 {
		entries := make([]scheduler.Entry, len(cfg.Schedules))
		byName := map[string]Schedule{}
		for i, s := range cfg.Schedules {
			entries[i] = scheduler.Entry{Name: s.Name, Spec: s.Spec, Overlap: s.Overlap, CatchUp: s.CatchUp}
			byName[s.Name] = s
		}
		hooks := scheduler.Hooks{
			Fired:   func(name string) { c.metrics.ScheduleFired(c.scheduleLabels(byName[name])) },
			Skipped: func(name string) { c.metrics.ScheduleSkipped(c.scheduleLabels(byName[name])) },
		}
		c.sched = scheduler.New(scheduler.Config{Driver: cfg.Driver, Entries: entries, Logger: cfg.Logger, Hooks: hooks,
			Enqueue: func(ctx context.Context, e scheduler.Entry, key string) (int64, bool, error) {
				s := byName[e.Name]
				var payload any
				if len(s.Payload) > 0 {
					payload = s.Payload
				}
				r, err := c.Enqueue(ctx, EnqueueParams{Type: s.Type, Key: key, Payload: payload, Queue: s.Queue})
				return r.ID, r.Duplicate, err
			}})
	}
	return c, nil
}

// queueList orders queues by name and gives each the longest lease of the
// types it runs, so no job's first lease is shorter than its type's.
func (c *Client) queueList() []worker.Queue {
	names := make([]string, 0, len(c.cfg.Queues))
	for n := range c.cfg.Queues {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]worker.Queue, 0, len(names))
	for _, n := range names {
		lease := time.Duration(0)
		for _, t := range c.cfg.Types {
			if t.Queue == n {
				lease = max(lease, t.Lease)
			}
		}
		if lease == 0 {
			lease = Type{}.WithDefaults().Lease
		}
		q := c.cfg.Queues[n]
		out = append(out, worker.Queue{Name: n, Concurrency: q.Concurrency, Rate: q.Rate, Lease: lease, Types: c.handledTypes(),
			ClusterRate: q.ClusterRate, ClusterBurst: q.ClusterBurst, Fair: q.Fair, Limits: c.limitsOf(q),
			Pace: c.paceOf(q)})
	}
	return out
}

// circuitFor is a job type's circuit breaker; the zero policy (none) for
// a type this client does not know.
func (c *Client) circuitFor(jobType string) driver.CircuitPolicy {
	return c.cfg.Types[jobType].Circuit.policy()
}

// limitsOf gathers the running caps a claim on queue q enforces: its own
// and every type's, since a type's jobs may sit in any queue. nil when
// there are none, which keeps the claim on its single-statement path.
func (c *Client) limitsOf(q QueueConfig) *driver.RunningCaps {
	l := &driver.RunningCaps{Queue: q.MaxRunning, Partition: q.MaxRunningPerPartition, Partitions: q.PartitionMaxRunning}
	l.PartitionRate, l.PartitionRates = q.partitionRates()
	for name, t := range c.cfg.Types {
		if t.MaxRunning > 0 {
			if l.Types == nil {
				l.Types = map[string]int{}
			}
			l.Types[name] = t.MaxRunning
		}
		if t.ClusterRate > 0 {
			if l.TypeRates == nil {
				l.TypeRates = map[string]driver.Rate{}
			}
			l.TypeRates[name] = driver.Rate{PerSecond: t.ClusterRate, Burst: t.ClusterBurst}
		}
	}
	if !l.Active() {
		return nil
	}
	return l
}

// paceOf is the refill interval of the fastest start rate that binds the
// claims of queue q: its partitions' and every type's, since a type's jobs
// may sit in any queue (limitsOf). Zero when none does.
func (c *Client) paceOf(q QueueConfig) time.Duration {
	fastest := q.ClusterRatePerPartition
	for _, r := range q.PartitionClusterRate {
		fastest = max(fastest, r)
	}
	for _, t := range c.cfg.Types {
		fastest = max(fastest, t.ClusterRate)
	}
	if fastest == 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / fastest)
}

func (c *Client) leaseFor(jobType string) time.Duration { return c.typeOf(jobType).Lease }

// watchdogFor is a claimed job's progress timeout, its own or else its
// type's, and its type's OnStuck: the worker's watchdog.
func (c *Client) watchdogFor(row sluicetype.JobRow) (time.Duration, sluicetype.OnStuck) {
	t := c.typeOf(row.Type)
	d := row.ProgressTimeout
	if d <= 0 {
		d = t.ProgressTimeout
	}
	return d, t.OnStuck
}

// stuckFailure is the failed attempt of a stuck job retried by its
// policy: as a handler's error would be, with its type's backoff.
func (c *Client) stuckFailure(row sluicetype.JobRow, err error) worker.Result {
	return c.failure(row, c.typeOf(row.Type), err)
}

// typeOf is the settings of a job type: the config's, or the defaults for
// a type the client does not know.
func (c *Client) typeOf(jobType string) Type {
	if t, ok := c.cfg.Types[jobType]; ok {
		return t
	}
	return Type{}.WithDefaults()
}

// Driver returns the client's storage driver, for reads the root package
// does not wrap (the dashboard and the CLI use it). driver.Driver is public;
// its package comment says what compatibility it promises.
func (c *Client) Driver() driver.Driver { return c.drv }

// Start checks the schema, records the types' settings for plain-SQL
// enqueues (SyncTypes) and starts the workers and maintenance. It returns
// at once; Stop shuts them down.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("sluice: client already started")
	}
	if _, err := driver.CheckSchema(ctx, c.drv); err != nil {
		return err
	}
	if err := c.syncTypesOnce(ctx); err != nil {
		return err
	}
	c.started = true
	var gctx context.Context
	gctx, c.stopGauges = context.WithCancel(context.WithoutCancel(ctx))
	c.StartGauges(gctx)
	if c.beat != nil {
		c.beat.Start(ctx)
	}
	if c.maint != nil {
		c.maint.Start(ctx)
	}
	if c.pool != nil {
		c.pool.Start(ctx)
		c.log.Info("workers started", "queues", len(c.cfg.Queues), "node", c.cfg.NodeID)
	}
	if c.sched != nil {
		c.sched.Start(ctx)
	}
	return nil
}

// Stop stops claiming, waits for running jobs until ctx ends, then cancels
// those still running and returns them to pending without charging the
// attempt. It returns when every outcome has been written.
func (c *Client) Stop(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return
	}
	if c.sched != nil {
		c.sched.Stop()
	}
	if c.pool != nil {
		c.pool.Stop(ctx)
	}
	if c.maint != nil {
		c.maint.Stop()
	}
	if c.beat != nil {
		// After the pool: the last outcomes are counted before the flush.
		c.beat.Stop()
	}
	c.stopGauges()
	c.started = false
	c.log.Info("workers stopped", "node", c.cfg.NodeID)
}

// Rescue returns jobs whose lease expired to pending now, whoever leads
// maintenance. The cron-triggered runner calls it before claiming.
func (c *Client) Rescue(ctx context.Context) (sluicetype.RescueResult, error) {
	return maintenance.Rescue(ctx, c.drv, c.cfg.KeepAttempts, c.log, c.countRescued)
}

// SweepDeadlines cancels the pending jobs whose deadline has passed now,
// whoever leads maintenance. The cron-triggered runner calls it before
// claiming.
func (c *Client) SweepDeadlines(ctx context.Context) (int64, error) {
	return maintenance.SweepDeadlines(ctx, c.drv, c.cfg.KeepAttempts, c.log)
}

// countRescued counts rescued jobs, and those the rescue failed for good
// as failed completions, the same way for the maintenance leader and for
// a cron pass.
func (c *Client) countRescued(r sluicetype.RescueResult) {
	c.metrics.Rescued(r)
	c.rollup.AddRescued(r, c.cfg.Clock())
}
