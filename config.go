package sluice

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/scheduler"
	"github.com/sluicehq/sluice/sluicetype"
)

// Type configures one job type: its handler and the defaults of its jobs.
type Type struct {
	Handler     Handler
	Queue       string        // default DefaultQueue
	Timeout     time.Duration // cancels the handler's context; 0 means none
	Lease       time.Duration // default DefaultLease; renewed every Lease/3
	MaxAttempts int           // default DefaultMaxAttempts
	// Deadline, if positive, is how long after becoming due (its run_at,
	// or the enqueue plus its delay) a job of this type may still start:
	// past it the job is never started and maintenance cancels it. A
	// job's own EnqueueParams.Deadline wins. Jobs inserted by plain SQL
	// get no deadline from it.
	Deadline time.Duration
	// ProgressTimeout, if positive, is how long a running job of this
	// type may report no progress (Job.Progress, a command's fd-3 lines,
	// a webhook receiver's progress call) before it is stuck: the worker
	// holding its lease stops the handler, and OnStuck says what becomes
	// of the job (docs/guarantees.md "Stuck jobs"). A job's own
	// EnqueueParams.ProgressTimeout wins. Zero means none.
	ProgressTimeout time.Duration
	// OnStuck is sluicetype.OnStuckRetry (the default: the attempt fails
	// with the reason and the job is retried with Backoff) or
	// OnStuckCancel (the job ends cancelled with the reason).
	OnStuck sluicetype.OnStuck
	Backoff Backoff
	Dedupe  string // sluicetype.DedupePermanent (default) or sluicetype.DedupeActive
	// Circuit is the type's circuit breaker, shared by every node; a zero
	// Threshold means none.
	Circuit Circuit
	// MaxRunning caps the running jobs of this type over every process
	// and queue; 0 means no cap. Every process that claims must set it.
	MaxRunning int
	// ClusterRate caps the job starts per second of this type over every
	// process and queue, through the token bucket "type:NAME" in the
	// database that holds up to ClusterBurst tokens (default: a tenth of a
	// second's worth, at least 1): in any span of T seconds at most
	// ClusterBurst + ClusterRate*T of its jobs start. 0 means no cap.
	// Every process that claims must set it, as MaxRunning.
	ClusterRate  float64
	ClusterBurst int
}

// Circuit configures a job type's circuit breaker (docs/design.md
// "Circuit breakers"): after Threshold consecutive transient failures,
// across all nodes, no job of the type starts for Cooldown; its jobs stay
// pending and are not charged an attempt. Then one probe job runs: a
// success closes the circuit, a failure reopens it for twice the last
// cool-down, up to MaxCooldown.
type Circuit struct {
	Threshold   int
	Cooldown    time.Duration // default DefaultCircuitCooldown
	MaxCooldown time.Duration // default DefaultCircuitMaxCooldown, or Cooldown if longer
}

// policy is the breaker as the worker and the driver take it.
func (c Circuit) policy() driver.CircuitPolicy {
	return driver.CircuitPolicy{Threshold: c.Threshold, Cooldown: c.Cooldown, MaxCooldown: c.MaxCooldown}
}

// QueueConfig configures the workers of one queue.
type QueueConfig struct {
	Concurrency int // default DefaultConcurrency
	// Rate caps job starts per second in this process; 0 means no cap.
	// Every process applies it on its own.
	Rate float64
	// ClusterRate caps job starts per second of the queue across every
	// node, through a token bucket row in the database that holds up to
	// ClusterBurst tokens (default: a tenth of a second's worth, at least
	// 1). In any span of T seconds the queue starts at most
	// ClusterBurst + ClusterRate*T jobs. 0 means no cap. A queue with a
	// cluster rate claims only jobs it can start at once (no prefetch).
	ClusterRate  float64
	ClusterBurst int
	// Fair takes turns between the queue's partitions (EnqueueParams
	// Partition): each claim serves the partitions round-robin, one job
	// each a round, and priority orders jobs only within a partition.
	Fair bool
	// MaxRunning caps the queue's running jobs over every process; 0 means
	// no cap.
	MaxRunning int
	// MaxRunningPerPartition caps each partition's running jobs in this
	// queue over every process, and PartitionMaxRunning overrides it for
	// single partitions (a premium tenant); 0 means no cap. Both need Fair.
	MaxRunningPerPartition int
	PartitionMaxRunning    map[string]int
	// ClusterRatePerPartition caps each partition's job starts per second
	// in this queue over every process, through a token bucket per
	// partition ("partition:QUEUE#PARTITION") that holds up to
	// ClusterBurstPerPartition tokens (default: a tenth of a second of the
	// partition's rate, at least 1). PartitionClusterRate overrides the
	// rate for single partitions. 0 means no cap. Both need Fair.
	ClusterRatePerPartition  float64
	ClusterBurstPerPartition int
	PartitionClusterRate     map[string]float64
}

// Defaults for what a Type, a QueueConfig or Config.Retention leaves out.
// Type.WithDefaults applies a type's, Config's the others; the config file
// leaves them out too, so a type behaves the same whether it is configured
// in Go or in YAML.
const (
	DefaultQueue       = "default"
	DefaultConcurrency = 10

	DefaultLease       = 5 * time.Minute
	DefaultMaxAttempts = 5
	// The retry policy (docs/design.md "Retries").
	DefaultBackoffBase = time.Minute
	DefaultBackoffMax  = time.Hour

	DefaultCircuitCooldown    = 30 * time.Second
	DefaultCircuitMaxCooldown = 10 * time.Minute

	DefaultRetentionSuccess   = 7 * 24 * time.Hour
	DefaultRetentionFailed    = 30 * 24 * time.Hour
	DefaultRetentionCancelled = 7 * 24 * time.Hour
)

// Schedule overlap policies; the scheduler owns them, the config file
// package uses them too.
const (
	OverlapForbid  = scheduler.OverlapForbid
	OverlapAllow   = scheduler.OverlapAllow
	DefaultOverlap = scheduler.DefaultOverlap
)

// Schedule enqueues a job of Type at every slot of Spec. Every node may
// run the same schedules: each slot's job is keyed sched:<name>:<slot>.
type Schedule struct {
	Name    string
	Spec    *cron.Expr
	Type    string
	Payload json.RawMessage // nil means {}
	Queue   string          // default: the type's queue
	// Overlap is OverlapForbid (skip a slot while the previous slot's
	// job is pending or processing) or OverlapAllow; empty means
	// DefaultOverlap, the same as in the config file.
	Overlap string
	CatchUp int // missed slots to enqueue after downtime; default 1
}

// Config configures a Client. Only Driver is required; a client without
// Queues only enqueues.
type Config struct {
	Driver driver.Driver
	Types  map[string]Type
	Queues map[string]QueueConfig
	// Schedules run on Start, on every client that has them.
	Schedules []Schedule
	Logger    *slog.Logger
	// NodeID names this process in leases; default "host:pid".
	NodeID string
	// Retention keeps finished jobs this long per status before the
	// maintenance leader purges them. Defaults: DefaultRetentionSuccess,
	// DefaultRetentionFailed, DefaultRetentionCancelled. A negative value
	// keeps them forever.
	Retention map[sluicetype.Status]time.Duration
	// AuditRetention keeps audit entries (WithActor) this long before the
	// maintenance leader prunes them; 0 means DefaultAuditRetention, a
	// negative value keeps them forever.
	AuditRetention time.Duration
	// DisableMaintenance keeps this client out of the maintenance leader
	// election: it does not rescue expired leases, purge finished jobs or
	// compact roll-ups. By default every client that runs workers takes
	// part; a client without Queues never does.
	DisableMaintenance bool
	// Clock is this process's wall clock, and every read of it by the
	// client, its workers and maintenance goes through it. It is used only
	// for what is local to the process: the minute a finished job is
	// counted in, the roll-up compaction cutoff, the queue-latency metric,
	// when to renew a running job's lease, durations in logs and metrics.
	// Leases, run times, rescue and schedules use the database clock, so a
	// skewed node cannot run a job early, twice or late. Default the host's
	// clock; tests skew it.
	Clock func() time.Time
	// RescueEvery, LeaderTTL and PollMax tune background loops; zero
	// picks defaults (5s, 30s, 1s). A dead maintenance leader is replaced
	// after LeaderTTL.
	RescueEvery time.Duration
	LeaderTTL   time.Duration
	PollMax     time.Duration
	// KeepAttempts is how many attempts each job's history keeps, the
	// latest ones; 0 means driver.DefaultKeepAttempts (20). Only jobs that
	// failed at least once have a history: see docs/design.md "Attempt
	// history".
	KeepAttempts int
	// TracerProvider makes the spans of enqueues and job runs; nil means
	// OpenTelemetry's global provider, which is a no-op unless the
	// application installed one. See docs/design.md "Tracing".
	TracerProvider trace.TracerProvider
	// LogPayloads adds job payloads to the debug-level "job finished" log
	// line. Off by default: payloads may hold personal data or secrets.
	LogPayloads bool
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.System
	}
	if c.NodeID == "" {
		host, _ := os.Hostname()
		c.NodeID = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	ret := map[sluicetype.Status]time.Duration{
		sluicetype.StatusSuccess:   DefaultRetentionSuccess,
		sluicetype.StatusFailed:    DefaultRetentionFailed,
		sluicetype.StatusCancelled: DefaultRetentionCancelled,
	}
	for k, v := range c.Retention {
		ret[k] = v
	}
	c.Retention = ret
	if c.AuditRetention == 0 {
		c.AuditRetention = DefaultAuditRetention
	}
	types := make(map[string]Type, len(c.Types))
	for name, t := range c.Types {
		types[name] = t.WithDefaults()
	}
	c.Types = types
	queues := make(map[string]QueueConfig, len(c.Queues))
	for name, q := range c.Queues {
		if q.Concurrency <= 0 {
			q.Concurrency = DefaultConcurrency
		}
		if q.ClusterRate > 0 && q.ClusterBurst <= 0 {
			q.ClusterBurst = defaultBurst(q.ClusterRate)
		}
		queues[name] = q
	}
	c.Queues = queues
	return c
}

// WithDefaults is t with the defaults filled in where it leaves a field
// zero: DefaultQueue, DefaultLease, DefaultMaxAttempts, permanent dedupe,
// the default backoff and circuit cool-downs, and a cluster burst of a
// tenth of a second's worth. NewClient applies it to every type, and an
// enqueue of a type the client does not know gets Type{}.WithDefaults().
func (t Type) WithDefaults() Type {
	if t.Queue == "" {
		t.Queue = DefaultQueue
	}
	if t.Lease <= 0 {
		t.Lease = DefaultLease
	}
	if t.MaxAttempts <= 0 {
		t.MaxAttempts = DefaultMaxAttempts
	}
	if t.Dedupe == "" {
		t.Dedupe = sluicetype.DedupePermanent
	}
	if t.OnStuck == "" {
		t.OnStuck = sluicetype.DefaultOnStuck
	}
	t.Backoff = t.Backoff.withDefaults()
	if t.Circuit.Cooldown == 0 {
		t.Circuit.Cooldown = DefaultCircuitCooldown
	}
	if t.Circuit.MaxCooldown == 0 {
		t.Circuit.MaxCooldown = max(DefaultCircuitMaxCooldown, t.Circuit.Cooldown)
	}
	if t.ClusterRate > 0 && t.ClusterBurst <= 0 {
		t.ClusterBurst = defaultBurst(t.ClusterRate)
	}
	return t
}

func (c Config) validate() error {
	if c.Driver == nil {
		return errors.New("sluice config: Driver is required")
	}
	if c.KeepAttempts < 0 {
		return inputErr("KeepAttempts", "%d: want 0 (the default, %d) or more", c.KeepAttempts, driver.DefaultKeepAttempts)
	}
	for name, q := range c.Queues {
		if err := checkQueueLimits(q); err != nil {
			return fmt.Errorf("sluice config: queue %s: %w", name, err)
		}
	}
	for name, t := range c.Types {
		if err := checkTypeLimits(t); err != nil {
			return fmt.Errorf("sluice config: type %s: %w", name, err)
		}
	}
	for name, t := range c.Types {
		if err := checkName("type", name, sluicetype.MaxTypeLen); err != nil {
			return fmt.Errorf("sluice config: %w", err)
		}
		if err := checkName("queue", t.Queue, sluicetype.MaxQueueLen); err != nil {
			return fmt.Errorf("sluice config: type %s: %w", name, err)
		}
		if t.Dedupe != sluicetype.DedupePermanent && t.Dedupe != sluicetype.DedupeActive {
			return fmt.Errorf("sluice config: type %s: dedupe %q: want permanent or active", name, t.Dedupe)
		}
		var bad error
		switch cb := t.Circuit; {
		case cb.Threshold < 0:
			bad = inputErr("Circuit.Threshold", "must not be negative, got %d", cb.Threshold)
		case cb.Cooldown < 0:
			bad = inputErr("Circuit.Cooldown", "must be positive, got %s", cb.Cooldown)
		case cb.MaxCooldown < cb.Cooldown:
			bad = inputErr("Circuit.MaxCooldown", "%s is shorter than Cooldown %s", cb.MaxCooldown, cb.Cooldown)
		}
		if bad != nil {
			return fmt.Errorf("sluice config: type %s: %w", name, bad)
		}
		if t.Handler == nil && len(c.Queues) > 0 {
			if _, runs := c.Queues[t.Queue]; runs {
				return fmt.Errorf("sluice config: type %s: no handler, but its queue %s has workers here", name, t.Queue)
			}
		}
	}
	for name, q := range c.Queues {
		if err := checkName("queue", name, sluicetype.MaxQueueLen); err != nil {
			return fmt.Errorf("sluice config: %w", err)
		}
		if q.ClusterRate < 0 || math.IsNaN(q.ClusterRate) || math.IsInf(q.ClusterRate, 0) {
			return fmt.Errorf("sluice config: queue %s: %w", name, inputErr("ClusterRate", "must be a positive number of starts per second, got %v", q.ClusterRate))
		}
	}
	seen := map[string]bool{}
	for _, s := range c.Schedules {
		switch {
		case s.Name == "" || seen[s.Name]:
			return fmt.Errorf("sluice config: schedule name %q is empty or used twice", s.Name)
		case s.Spec == nil:
			return fmt.Errorf("sluice config: schedule %s: no cron spec", s.Name)
		case s.Overlap != "" && s.Overlap != OverlapForbid && s.Overlap != OverlapAllow:
			return fmt.Errorf("sluice config: schedule %s: overlap %q: want %s or %s", s.Name, s.Overlap, OverlapForbid, OverlapAllow)
		}
		if err := checkName("type", s.Type, sluicetype.MaxTypeLen); err != nil {
			return fmt.Errorf("sluice config: schedule %s: %w", s.Name, err)
		}
		// Checked now, by the rule every enqueue applies, so that a bad
		// payload stops the start rather than failing each slot.
		if _, err := encodePayload(s.Payload); err != nil {
			return fmt.Errorf("sluice config: schedule %s: %w", s.Name, err)
		}
		seen[s.Name] = true
	}
	return nil
}

// checkQueueLimits is the one rule for a queue's running caps, shared with
// the config file.
func checkQueueLimits(q QueueConfig) error {
	switch {
	case q.MaxRunning < 0:
		return inputErr("max_running", "must not be negative")
	case q.MaxRunningPerPartition < 0:
		return inputErr("max_running_per_partition", "must not be negative")
	case (q.MaxRunningPerPartition > 0 || len(q.PartitionMaxRunning) > 0) && !q.Fair:
		// In global order a claim would stall behind a partition at its cap.
		return inputErr("max_running_per_partition", "needs fair: true")
	}
	for p, n := range q.PartitionMaxRunning {
		if err := sluicetype.CheckPartition(p); err != nil {
			return inputErr("partition_max_running", "partition %q: %v", p, err)
		}
		if n < 1 {
			return inputErr("partition_max_running", "partition %q: must be at least 1, got %d", p, n)
		}
	}
	if err := checkRate("cluster_rate_per_partition", q.ClusterRatePerPartition); err != nil {
		return err
	}
	switch {
	case q.ClusterBurstPerPartition < 0 || q.ClusterBurstPerPartition > 0 && q.ClusterRatePerPartition == 0 && len(q.PartitionClusterRate) == 0:
		return inputErr("cluster_burst_per_partition", "must be positive and go with a cluster_rate_per_partition or partition_cluster_rate, got %d", q.ClusterBurstPerPartition)
	case q.ClusterRatePerPartition > 0 && !q.Fair:
		// In global order a claim would stall behind a partition out of
		// tokens, as behind one at its running cap.
		return inputErr("cluster_rate_per_partition", "needs fair: true")
	case len(q.PartitionClusterRate) > 0 && !q.Fair:
		return inputErr("partition_cluster_rate", "needs fair: true")
	}
	for p, r := range q.PartitionClusterRate {
		if err := sluicetype.CheckPartition(p); err != nil {
			return inputErr("partition_cluster_rate", "partition %q: %v", p, err)
		}
		if r <= 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return inputErr("partition_cluster_rate", "partition %q: must be a positive number of starts per second, got %v", p, r)
		}
	}
	return nil
}

// checkTypeLimits is the one rule for a type's running cap, start rate
// and watchdog, shared with the config file.
func checkTypeLimits(t Type) error {
	if _, err := sluicetype.ParseOnStuck(string(t.OnStuck)); err != nil {
		return inputErr("on_stuck", "%v", err)
	}
	switch {
	case t.ProgressTimeout < 0:
		return inputErr("progress_timeout", "must be positive, got %s", t.ProgressTimeout)
	case t.MaxRunning < 0:
		return inputErr("max_running", "must not be negative, got %d", t.MaxRunning)
	case t.ClusterBurst < 0 || t.ClusterBurst > 0 && t.ClusterRate == 0:
		return inputErr("cluster_burst", "must be positive and go with a cluster_rate, got %d", t.ClusterBurst)
	}
	return checkRate("cluster_rate", t.ClusterRate)
}

// checkRate checks a start rate per second; 0 means none.
func checkRate(field string, r float64) error {
	if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return inputErr(field, "must be a positive number of starts per second, got %v", r)
	}
	return nil
}

// defaultBurst is the bucket size of a cluster-wide rate that sets none: a
// tenth of a second's worth, at least 1.
func defaultBurst(rate float64) int { return max(1, int(math.Ceil(rate/10))) }

// partitionRates is the queue's per-partition start rates as the driver
// takes them, each with its bucket size.
func (q QueueConfig) partitionRates() (driver.Rate, map[string]driver.Rate) {
	burst := func(r float64) int {
		if q.ClusterBurstPerPartition > 0 {
			return q.ClusterBurstPerPartition
		}
		return defaultBurst(r)
	}
	var def driver.Rate
	if q.ClusterRatePerPartition > 0 {
		def = driver.Rate{PerSecond: q.ClusterRatePerPartition, Burst: burst(q.ClusterRatePerPartition)}
	}
	var over map[string]driver.Rate
	for p, r := range q.PartitionClusterRate {
		if over == nil {
			over = map[string]driver.Rate{}
		}
		over[p] = driver.Rate{PerSecond: r, Burst: burst(r)}
	}
	return def, over
}

// CheckTypeConfig checks a type's running cap and start rate as NewClient
// does; the config file reports its errors under the type's keys.
func CheckTypeConfig(t Type) error { return checkTypeLimits(t) }

// CheckQueueConfig checks a queue's fairness and running caps as NewClient
// does; the config file reports its errors under the queue's keys.
func CheckQueueConfig(q QueueConfig) error { return checkQueueLimits(q) }
