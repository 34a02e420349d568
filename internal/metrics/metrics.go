// Package metrics holds sluice's observability state: the Prometheus
// metrics of one Client (its own registry, never a global one) and the
// in-memory roll-up counts flushed to sluice_stats, which the node
// heartbeat (internal/nodes) flushes on each beat.
//
// Labels are queue and type (and outcome, a fixed set of four; name on
// lock counters), never a job id or key, so the number of series stays
// bounded by configuration.
package metrics

import (
	"context"
	"database/sql"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/internal/buildinfo"
	"github.com/sluicehq/sluice/sluicetype"
)

// poolPrefix starts the names of the database pool's metrics.
const poolPrefix = "sluice_go_sql_"

// Seconds buckets: handler runs and queue waits span milliseconds to
// hours; claims and chunks are database round trips.
var (
	longBuckets  = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	queryBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
)

// Metrics is one Client's metrics. The zero value is not usable; call New.
type Metrics struct {
	reg    *prometheus.Registry
	labels map[string][]string // metric name -> label names, for Value
	series []string            // every series name registered, for Exported

	enqueued, deduplicated, completed, leaseLost *prometheus.CounterVec
	cancelDropped                                *prometheus.CounterVec
	fires, skips, lockAcquired, lockBusy         *prometheus.CounterVec
	batchRows, batchChunks                       *prometheus.CounterVec
	rescued                                      prometheus.Counter
	loginFailed                                  *prometheus.CounterVec
	runDuration, queueLatency                    *prometheus.HistogramVec
	claimDuration, chunkDuration                 *prometheus.HistogramVec
	pending, processing, failed, oldestPending   *prometheus.GaugeVec
	circuitOpen                                  *prometheus.GaugeVec
	paused, shardStalled, heartbeatAge           *prometheus.GaugeVec
	waitingForHandler                            *prometheus.GaugeVec
	unservedQueue                                *prometheus.GaugeVec
	handler                                      http.Handler

	gaugesOnce sync.Once
}

// New builds the metrics of a client whose database pool is db (nil: no
// pool statistics), in a registry of its own so that two clients in one
// process never share counters.
func New(db *sql.DB) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), labels: map[string][]string{}}
	// add registers v and records what Value and Exported read: its label
	// names and the series it exports.
	add := func(v prometheus.Collector, name string, labels []string, series ...string) {
		m.reg.MustRegister(v)
		m.labels[name] = labels
		m.series = append(m.series, series...)
	}
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		add(v, name, labels, name)
		return v
	}
	c0 := func(name, help string) prometheus.Counter {
		v := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		add(v, name, nil, name)
		return v
	}
	g := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		add(v, name, labels, name)
		return v
	}
	h := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		add(v, name, labels, name+"_bucket", name+"_sum", name+"_count")
		return v
	}
	m.enqueued = c("sluice_jobs_enqueued_total", "Jobs inserted (new rows; duplicates are counted apart).", "queue", "type")
	m.deduplicated = c("sluice_jobs_deduplicated_total", "Enqueues that found their business key taken and returned the existing job.", "queue", "type")
	m.completed = c("sluice_jobs_completed_total", "Finished attempts by outcome: success, retry (failed, will run again), failed (for good), cancelled (by an operator).", "queue", "type", "outcome")
	m.rescued = c0("sluice_leases_rescued_total", "Jobs whose lease expired and that the maintenance leader returned to pending or failed.")
	m.leaseLost = c("sluice_leases_lost_total", "Fenced updates that changed no row: the job's lease had moved on, so this worker's outcome was dropped.", "queue", "type")
	m.cancelDropped = c("sluice_cancelled_outcomes_dropped_total", "Outcomes that handlers reported after an operator cancelled their running job: dropped, the job stays cancelled. reported is what the handler said: success, retry, failed or released.", "queue", "type", "reported")
	m.loginFailed = c("sluice_login_failures_total", "Dashboard logins refused: wrong_token (checked and wrong), throttled (refused unchecked by the brake on failed attempts).", "outcome")
	m.fires = c("sluice_schedule_fires_total", "Schedule slots that enqueued a job on this node.", "queue", "type")
	m.skips = c("sluice_schedule_skips_total", "Schedule slots skipped because the previous run was still active (overlap forbid).", "queue", "type")
	m.lockAcquired = c("sluice_lock_acquisitions_total", "Named locks taken: the /v1/run run lock (run:QUEUE:TYPE) and the locks of package lock given these metrics.", "name")
	m.lockBusy = c("sluice_lock_busy_total", "Attempts to take a named lock that another holder had: a skipped /v1/run pass, or a busy lock of package lock.", "name")
	m.batchRows = c("sluice_batch_rows_total", "Rows processed by batch jobs; type is the batch name.", "type")
	m.batchChunks = c("sluice_batch_chunks_total", "Chunks committed by batch jobs; type is the batch name.", "type")
	m.runDuration = h("sluice_job_run_duration_seconds", "Handler run time of one attempt.", longBuckets, "queue", "type")
	m.queueLatency = h("sluice_job_queue_latency_seconds", "Time from a job's next_run_at to the claim that started its attempt, both database time.", longBuckets, "queue", "type")
	m.claimDuration = h("sluice_claim_duration_seconds", "Duration of one claim query.", queryBuckets, "queue")
	m.chunkDuration = h("sluice_batch_chunk_duration_seconds", "Duration of one batch chunk; type is the batch name.", longBuckets, "type")
	m.pending = g("sluice_queue_pending", "Pending jobs per queue, refreshed on an interval.", "queue")
	m.processing = g("sluice_queue_processing", "Processing jobs per queue, refreshed on an interval.", "queue")
	m.failed = g("sluice_queue_failed", "Failed jobs per queue, refreshed on an interval.", "queue")
	m.oldestPending = g("sluice_queue_oldest_pending_age_seconds", "Seconds the oldest runnable pending job has waited.", "queue")
	m.circuitOpen = g("sluice_circuit_open", "1 while a job type's circuit breaker is open or half-open (no job starts but one probe), 0 while closed; refreshed on an interval.", "type")
	m.waitingForHandler = g("sluice_jobs_waiting_for_handler", "Pending jobs per type that no process with a handler for the type has served in the last hour (sluice.HandlerWindow): a type missing from every worker's config, or a typo at enqueue; refreshed on an interval. A type with no waiting jobs has no series.", "type")
	m.unservedQueue = g("sluice_jobs_in_unserved_queue", "Pending jobs per queue that no process (a worker, or a pass of sluice run or /v1/run) has claimed from in the last hour (sluice.HandlerWindow): a queue no config lists, such as one a framework's onQueue() names; refreshed on an interval. A queue with no waiting jobs has no series.", "queue")
	m.paused = g("sluice_queue_paused", "1 for each queue an operator has paused (sluice queues pause); a queue that is not paused has no series.", "queue")
	// No labels, but a vector so that Reset can remove it: absent() then
	// tells "no worker has a row".
	m.heartbeatAge = g("sluice_worker_heartbeat_age_seconds", "Seconds since the newest heartbeat of any worker process in sluice_nodes (database time); absent when no worker has a row.")
	// The build, as Prometheus' own *_build_info metrics do: constant 1,
	// the facts in labels, so that a fleet's versions show in one query.
	bi := buildinfo.Get()
	g("sluice_build_info", "Always 1; the labels say which sluice build this process runs: version, commit (empty when unknown), go_version.",
		"version", "commit", "go_version").WithLabelValues(bi.Version, bi.Commit, bi.GoVersion).Set(1)
	m.shardStalled = g("sluice_batch_shard_stalled_seconds", "Per batch (type is the batch name), the longest time a running shard's checkpoint has not changed.", "type")
	if db != nil {
		// The standard pool collector, under the sluice_ prefix:
		// sluice_go_sql_open_connections, ..._wait_count_total, ...
		prometheus.WrapRegistererWithPrefix("sluice_", m.reg).MustRegister(collectors.NewDBStatsCollector(db, "sluice"))
	}
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// Enqueued counts an enqueue: a new row, or a duplicate of an existing one.
func (m *Metrics) Enqueued(queue, typ string, duplicate bool) {
	if duplicate {
		m.deduplicated.WithLabelValues(queue, typ).Inc()
		return
	}
	m.enqueued.WithLabelValues(queue, typ).Inc()
}

// Completed counts a finished attempt with its run time and the time it
// waited from next_run_at to its start.
func (m *Metrics) Completed(queue, typ string, outcome sluicetype.Outcome, ran, waited time.Duration) {
	m.completed.WithLabelValues(queue, typ, string(outcome)).Inc()
	if !attempted(outcome) {
		return
	}
	m.runDuration.WithLabelValues(queue, typ).Observe(ran.Seconds())
	m.queueLatency.WithLabelValues(queue, typ).Observe(max(waited, 0).Seconds())
}

// attempted reports whether an outcome's attempt ran, and so has a run time and
// a queue latency: an operator's cancel runs nothing.
func attempted(o sluicetype.Outcome) bool { return o != sluicetype.OutcomeCancelled }

// Claimed records one claim query's duration.
func (m *Metrics) Claimed(queue string, took time.Duration) {
	m.claimDuration.WithLabelValues(queue).Observe(took.Seconds())
}

// LeaseLost counts a fenced update that changed no row.
func (m *Metrics) LeaseLost(queue, typ string) { m.leaseLost.WithLabelValues(queue, typ).Inc() }

// CancelDropped counts an outcome dropped because an operator cancelled
// the job while its handler ran.
func (m *Metrics) CancelDropped(queue, typ string, reported sluicetype.Outcome) {
	m.cancelDropped.WithLabelValues(queue, typ, string(reported)).Inc()
}

// Rescued counts a rescue pass: every job it moved, and those it failed
// for good as failed completions (no attempt ran here: no run time).
func (m *Metrics) Rescued(r sluicetype.RescueResult) {
	m.rescued.Add(float64(r.Pending + r.Failed))
	for k, n := range r.FailedBy {
		m.completed.WithLabelValues(k.Queue, k.Type, string(sluicetype.OutcomeFailed)).Add(float64(n))
	}
}

// LoginFailed counts a refused dashboard login; outcome is wrong_token
// or throttled.
func (m *Metrics) LoginFailed(outcome string) { m.loginFailed.WithLabelValues(outcome).Inc() }

// ScheduleFired and ScheduleSkipped count schedule slots by the queue and
// type of the job they enqueue.
func (m *Metrics) ScheduleFired(queue, typ string)   { m.fires.WithLabelValues(queue, typ).Inc() }
func (m *Metrics) ScheduleSkipped(queue, typ string) { m.skips.WithLabelValues(queue, typ).Inc() }

// LockAcquired and LockBusy count a named lock taken, and an attempt that
// found it held by someone else: the run lock of a /v1/run pass, and the
// locks of package lock opened with these metrics. The name is a label,
// so callers use names from a fixed set (never a job id or key).
func (m *Metrics) LockAcquired(name string) { m.lockAcquired.WithLabelValues(name).Inc() }
func (m *Metrics) LockBusy(name string)     { m.lockBusy.WithLabelValues(name).Inc() }

// BatchChunk counts one committed chunk of rows of the named batch, and
// how long it took; package batch calls it through Batch.Metrics.
func (m *Metrics) BatchChunk(batch string, rows int, took time.Duration) {
	m.batchChunks.WithLabelValues(batch).Inc()
	m.batchRows.WithLabelValues(batch).Add(float64(rows))
	m.chunkDuration.WithLabelValues(batch).Observe(took.Seconds())
}

// QueueGauge is one queue's live counts, as the Stats query reads them.
type QueueGauge struct {
	Queue                       string
	Pending, Processing, Failed int64
	OldestPendingAge            time.Duration
}

// Gauges is everything the interval refresh reads: the live queue counts,
// the paused flags, the newest worker heartbeat and the stalled batch
// shards. Alert rules (deploy/prometheus) need each of them.
type Gauges struct {
	Queues []QueueGauge
	Paused map[string]bool
	// HeartbeatAge is the age of the newest worker heartbeat; nil when no
	// worker has a row, which leaves the gauge absent.
	HeartbeatAge *time.Duration
	// ShardStalled is, per batch, the longest time one of its running
	// shards' checkpoints has not changed.
	ShardStalled map[string]time.Duration
	// Circuits is, per job type with a breaker (configured or opened by
	// hand), whether its circuit is open or half-open.
	Circuits map[string]bool
	// WaitingForHandler is, per job type no process has served lately,
	// its pending jobs.
	WaitingForHandler map[string]int64
	// UnservedQueues is, per queue no process has claimed from lately,
	// its pending jobs.
	UnservedQueues map[string]int64
}

// SetGauges replaces the refreshed gauges; queues, flags and batches not
// in gs disappear.
func (m *Metrics) SetGauges(gs Gauges) {
	for _, v := range []*prometheus.GaugeVec{m.pending, m.processing, m.failed, m.oldestPending, m.paused, m.shardStalled, m.heartbeatAge, m.circuitOpen, m.waitingForHandler, m.unservedQueue} {
		v.Reset()
	}
	for _, q := range gs.Queues {
		m.pending.WithLabelValues(q.Queue).Set(float64(q.Pending))
		m.processing.WithLabelValues(q.Queue).Set(float64(q.Processing))
		m.failed.WithLabelValues(q.Queue).Set(float64(q.Failed))
		m.oldestPending.WithLabelValues(q.Queue).Set(q.OldestPendingAge.Seconds())
	}
	for q, p := range gs.Paused {
		if p {
			m.paused.WithLabelValues(q).Set(1)
		}
	}
	for typ, n := range gs.WaitingForHandler {
		m.waitingForHandler.WithLabelValues(typ).Set(float64(n))
	}
	for q, n := range gs.UnservedQueues {
		m.unservedQueue.WithLabelValues(q).Set(float64(n))
	}
	for b, d := range gs.ShardStalled {
		m.shardStalled.WithLabelValues(b).Set(d.Seconds())
	}
	if gs.HeartbeatAge != nil {
		m.heartbeatAge.WithLabelValues().Set(gs.HeartbeatAge.Seconds())
	}
	// Types are named by configuration and by operators, so the label
	// stays bounded.
	for typ, open := range gs.Circuits {
		v := 0.0
		if open {
			v = 1
		}
		m.circuitOpen.WithLabelValues(typ).Set(v)
	}
}

// StartGauges refreshes the queue gauges with read every interval until
// ctx ends; scrapes only read the last values, so a busy scraper never
// adds database load. Only the first call starts a loop.
func (m *Metrics) StartGauges(ctx context.Context, every time.Duration, read func(context.Context) (Gauges, error), onErr func(error)) {
	m.gaugesOnce.Do(func() {
		go func() {
			for {
				rctx, cancel := context.WithTimeout(ctx, every)
				gs, err := read(rctx)
				cancel()
				if err == nil {
					m.SetGauges(gs)
				} else if ctx.Err() == nil && onErr != nil {
					onErr(err)
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(every):
				}
			}
		}()
	})
}

// Value reads one series by its name and label values (a histogram gives
// its sample count); tests use it to check exact counts.
func (m *Metrics) Value(name string, labels ...string) float64 {
	fams, err := m.reg.Gather()
	if err != nil {
		return 0
	}
	names := m.labels[name]
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			got := map[string]string{}
			for _, lp := range s.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for i, v := range labels {
				if i >= len(names) || got[names[i]] != v {
					continue series
				}
			}
			switch {
			case s.Counter != nil:
				return s.GetCounter().GetValue()
			case s.Gauge != nil:
				return s.GetGauge().GetValue()
			case s.Histogram != nil:
				return float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// Exported lists every series name these metrics can export, whether or
// not it has a value yet (a histogram as its _bucket, _sum and _count
// series), sorted. The tests of deploy/ check the Grafana dashboard and
// the alert rules against it.
func (m *Metrics) Exported() ([]string, error) {
	fams, err := m.reg.Gather()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range m.series {
		seen[n] = true
	}
	// The pool collector's counters and gauges, always present.
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), poolPrefix) {
			seen[f.GetName()] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// ServeHTTP writes every metric in the Prometheus exposition format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	m.handler.ServeHTTP(w, r)
}
