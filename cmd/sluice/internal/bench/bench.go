// Package bench is `sluice bench`: it creates its own tables under a bench
// prefix, optionally preloads finished rows, bulk-enqueues no-op jobs and
// works them down, and reports throughput, latency and peak memory with the
// same JSON keys as the River peer in bench/riverpeer, so that the two can
// be compared side by side (bench/compare.sh).
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
)

// DefaultPrefix keeps the bench tables apart from an application's.
const DefaultPrefix = "sluice_bench_"

// Defaults of Config, also those of the CLI's flags.
const (
	DefaultRate     = 200
	DefaultInterval = time.Minute
	// DefaultTimeout is riverpeer's.
	DefaultTimeout = 10 * time.Minute
)

// Job type and queue of the measured jobs; preloaded rows use another type
// so that the checks and the latency query never count them.
const (
	jobType     = "noop"
	preloadType = "preloaded"
	queue       = "default"
	// batchSize is the EnqueueMany batch, the same as riverpeer's InsertMany batch.
	batchSize = 5000
)

// Config describes one bench run.
type Config struct {
	URL string
	// ListenURL is dburl.Options.ListenURL, for a URL behind a transaction pooler.
	ListenURL string
	// Prefix of the bench tables, which are dropped before (and, unless
	// Keep, after) the run. Default DefaultPrefix; the application's
	// default prefix is refused.
	Prefix       string
	Jobs         int
	Concurrency  int
	PayloadBytes int
	FinishedRows int
	// Partitions spreads the bulk mode's jobs over this many partitions,
	// in turn; Fair makes the queue fair. They measure what fairness costs.
	Partitions int
	Fair       bool
	// Latency switches to the latency mode: single jobs enqueued while
	// the workers run, at Rate per second from the workers' own client,
	// or spaced out at random from another connection (Source).
	Latency bool
	Rate    float64 // default DefaultRate; SourceInProcess only
	// Source is where latency-mode jobs come from; default SourceInProcess.
	Source string
	// Gap is the mean gap between jobs from the other sources; default
	// DefaultGap.
	Gap time.Duration
	// Sustained switches to the sustained mode: Jobs enqueued in batches
	// at a steady Rate per second while the workers run, with figures
	// reported per Interval (default DefaultInterval).
	Sustained bool
	Interval  time.Duration
	// EnqueueOnly and WorkOnly split a bulk run across processes, so that
	// several of them can work one backlog: EnqueueOnly creates the
	// tables, enqueues Jobs and keeps the tables; WorkOnly works the jobs
	// it finds under Prefix until none is pending or running anywhere,
	// and leaves the tables to whoever made them.
	EnqueueOnly bool
	WorkOnly    bool
	// Timeout bounds the work phase; default DefaultTimeout.
	Timeout time.Duration
	Keep    bool
	Logger  *slog.Logger
	// Progress, if set, is called a few times a second during long phases
	// and once with Final set when a phase ends.
	Progress func(Progress)
}

// Progress reports how far a phase has got.
type Progress struct {
	Phase       string // "preload", "enqueue" or "work"
	Done, Total int64
	Elapsed     time.Duration
	Final       bool
}

// Result is one run's figures. The keys match riverpeer's output.
type Result struct {
	System       string  `json:"system,omitempty"`
	DB           string  `json:"db"`
	Mode         string  `json:"mode"` // "bulk", "latency", "sustained", "enqueue-only" or "work-only"
	Jobs         int     `json:"jobs"`
	Concurrency  int     `json:"concurrency"`
	PayloadBytes int     `json:"payload_bytes"`
	FinishedRows int     `json:"finished_rows"`
	Partitions   int     `json:"partitions,omitempty"`
	Fair         bool    `json:"fair,omitempty"`
	Rate         float64 `json:"rate,omitempty"`
	// Source is the latency mode's Config.Source.
	Source     string  `json:"latency_source,omitempty"`
	InsertPerS float64 `json:"insert_per_s"`
	WorkPerS   float64 `json:"work_per_s"`
	// Bulk mode: from next_run_at to finished_at, on the database clock,
	// as riverpeer measures scheduled_at to finalized_at. Latency mode:
	// from the start of the enqueue call or INSERT to the handler's
	// start, on this process's clock.
	LatencyP50 float64 `json:"latency_p50_ms"`
	LatencyP99 float64 `json:"latency_p99_ms"`
	PeakRSSMB  float64 `json:"peak_rss_mb"`
	// Succeeded counts the measured jobs found in status success at the end.
	Succeeded int64 `json:"succeeded"`
	// WorkStarted and WorkEnded (Unix seconds) bound a work-only run, so
	// that the runs of several processes add up to one aggregate rate:
	// the sum of their jobs over the latest end less the earliest start.
	WorkStarted float64 `json:"work_started_unix,omitempty"`
	WorkEnded   float64 `json:"work_ended_unix,omitempty"`
	// Intervals are the sustained mode's per-interval figures.
	Intervals []Interval `json:"intervals,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Source == "" {
		c.Source = SourceInProcess
	}
	if c.Gap <= 0 {
		c.Gap = DefaultGap
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Prefix == driver.DefaultPrefix:
		// The bench drops every table under its prefix.
		return fmt.Errorf("bench prefix %q is the application's; pick another", c.Prefix)
	case c.Jobs < 1 && !c.WorkOnly:
		return errors.New("bench: jobs must be at least 1")
	case btoi(c.Latency)+btoi(c.Sustained)+btoi(c.EnqueueOnly)+btoi(c.WorkOnly) > 1:
		return errors.New("bench: latency, sustained, enqueue-only and work-only are separate modes; pick one")
	case c.WorkOnly && (c.FinishedRows > 0 || c.Partitions > 0):
		return errors.New("bench: work-only works the jobs an enqueue-only run left; finished rows and partitions are that run's")
	case c.Concurrency < 1:
		return errors.New("bench: concurrency must be at least 1")
	case c.PayloadBytes < 0 || c.PayloadBytes > maxPad:
		return fmt.Errorf("bench: payload bytes must be between 0 and %d (the payload limit less its {\"pad\":\"\"} wrapper)", maxPad)
	case c.FinishedRows < 0:
		return errors.New("bench: finished rows must not be negative")
	case !slices.Contains(Sources, c.Source):
		return fmt.Errorf("bench: latency source %q is not one of %s", c.Source, strings.Join(Sources, ", "))
	}
	return driver.ValidatePrefix(c.Prefix)
}

// Run performs one bench run.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	scheme, err := dburl.Scheme(cfg.URL)
	if err != nil {
		return nil, err
	}
	d, err := dburl.Open(cfg.URL, dburl.Options{Prefix: cfg.Prefix, ListenURL: cfg.ListenURL})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dburl.Redact(cfg.URL), err)
	}
	defer d.Close()
	bq, err := newDialect(d, cfg.Prefix)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, d: d, sql: bq}
	if cfg.WorkOnly {
		return r.workOnly(ctx, scheme)
	}
	if err := d.DropTables(ctx, driver.DropTablesParams{Prefix: cfg.Prefix}); err != nil {
		return nil, fmt.Errorf("drop old bench tables: %w", err)
	}
	if !cfg.Keep && !cfg.EnqueueOnly {
		defer func() {
			// Drop even after a failure or an interrupt, with a context of
			// its own, so an aborted run leaves nothing behind.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if derr := d.DropTables(dctx, driver.DropTablesParams{Prefix: cfg.Prefix}); derr != nil && err == nil {
				err = fmt.Errorf("drop bench tables: %w", derr)
			}
		}()
	}
	if _, err := d.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrate bench tables: %w", err)
	}
	if cfg.FinishedRows > 0 {
		if err := r.preload(ctx); err != nil {
			return nil, err
		}
	}
	res = &Result{DB: scheme, Mode: "bulk", Jobs: cfg.Jobs, Concurrency: cfg.Concurrency,
		PayloadBytes: cfg.PayloadBytes, FinishedRows: cfg.FinishedRows, Partitions: cfg.Partitions, Fair: cfg.Fair}
	if cfg.Latency {
		res.Mode, res.Source = "latency", cfg.Source
		if cfg.Source == SourceInProcess {
			res.Rate = cfg.Rate
		}
		err = r.latencyRun(ctx, res)
	} else if cfg.Sustained {
		res.Mode, res.Rate = "sustained", cfg.Rate
		err = r.sustainedRun(ctx, res)
	} else if cfg.EnqueueOnly {
		res.Mode = "enqueue-only"
		res.InsertPerS, err = r.enqueueAll(ctx)
		res.PeakRSSMB = peakRSSMB()
		return res, err
	} else {
		err = r.bulkRun(ctx, res)
	}
	if err != nil {
		return nil, err
	}
	if res.Succeeded, err = r.sql.succeeded(ctx, d); err != nil {
		return nil, fmt.Errorf("count finished jobs: %w", err)
	}
	if res.Succeeded != int64(cfg.Jobs) {
		return nil, fmt.Errorf("only %d of %d jobs ended in success", res.Succeeded, cfg.Jobs)
	}
	res.PeakRSSMB = peakRSSMB()
	return res, nil
}

type runner struct {
	cfg Config
	d   driver.Driver
	sql dialect

	done    atomic.Int64 // handler runs finished
	allDone chan struct{}
	once    sync.Once
	lat     *histogram // latency mode only
}

// finished counts a handler run and signals when every job has had one.
func (r *runner) finished() {
	if r.done.Add(1) >= int64(r.cfg.Jobs) {
		r.once.Do(func() { close(r.allDone) })
	}
}

func (r *runner) client(h sluice.HandlerFunc) (*sluice.Client, error) {
	r.allDone = make(chan struct{})
	return sluice.NewClient(sluice.Config{
		Driver: r.d,
		Types:  map[string]sluice.Type{jobType: {Handler: h, Queue: queue}},
		Queues: map[string]sluice.QueueConfig{queue: {Concurrency: r.cfg.Concurrency, Fair: r.cfg.Fair}},
		Logger: r.cfg.Logger,
	})
}

// maxPad is the most padding a bench payload can carry within the payload
// limit (sluice.MaxPayloadBytes): it goes in {"pad":"..."}, or beside a
// job's own small fields in the sustained run.
const maxPad = sluice.MaxPayloadBytes - 64

func (r *runner) payload() json.RawMessage {
	if r.cfg.PayloadBytes == 0 {
		return nil // stored as {}, as riverpeer's empty NoopArgs
	}
	return json.RawMessage(`{"pad":"` + strings.Repeat("x", r.cfg.PayloadBytes) + `"}`)
}

// bulkRun enqueues every job first, timed, then starts the workers and
// times them until every job is finished, as riverpeer does.
func (r *runner) bulkRun(ctx context.Context, res *Result) error {
	c, err := r.client(func(context.Context, *sluice.Job) error {
		r.finished()
		return nil
	})
	if err != nil {
		return fmt.Errorf("bench client: %w", err)
	}
	if res.InsertPerS, err = r.enqueue(ctx, c); err != nil {
		return err
	}
	workSecs, err := r.work(ctx, c)
	if err != nil {
		return err
	}
	res.WorkPerS = float64(r.cfg.Jobs) / workSecs
	h := newHistogram()
	if err := r.sql.latencies(ctx, r.d, h.add); err != nil {
		return fmt.Errorf("read latencies: %w", err)
	}
	res.LatencyP50, res.LatencyP99 = h.quantileMS(0.50), h.quantileMS(0.99)
	return nil
}

// enqueueAll is the enqueue-only mode: bulkRun's enqueue phase on a
// client that runs no workers.
func (r *runner) enqueueAll(ctx context.Context) (float64, error) {
	// No workers here, so no queue config: sluice refuses one whose type
	// has no handler.
	c, err := sluice.NewClient(sluice.Config{Driver: r.d, Logger: r.cfg.Logger,
		Types: map[string]sluice.Type{jobType: {Queue: queue}}})
	if err != nil {
		return 0, fmt.Errorf("bench client: %w", err)
	}
	return r.enqueue(ctx, c)
}

// enqueue enqueues every job in batches and returns the jobs per second.
func (r *runner) enqueue(ctx context.Context, c *sluice.Client) (float64, error) {
	payload := r.payload()
	var enqueued atomic.Int64
	stop := r.track("enqueue", int64(r.cfg.Jobs), &enqueued)
	defer stop()
	t0 := time.Now()
	ps := make([]sluice.EnqueueParams, 0, batchSize)
	for i := 0; i < r.cfg.Jobs; i += batchSize {
		ps = ps[:0]
		for k := range min(batchSize, r.cfg.Jobs-i) {
			p := sluice.EnqueueParams{Type: jobType, Payload: payload}
			if r.cfg.Partitions > 0 {
				p.Partition = fmt.Sprintf("p%d", (i+k)%r.cfg.Partitions)
			}
			ps = append(ps, p)
		}
		if _, err := c.EnqueueMany(ctx, ps); err != nil {
			return 0, fmt.Errorf("enqueue batch at job %d: %w", i, err)
		}
		enqueued.Add(int64(len(ps)))
	}
	rate := float64(r.cfg.Jobs) / time.Since(t0).Seconds()
	if r.cfg.Partitions > 0 {
		// A fair claim reads each partition's head through the index of
		// pending jobs by partition (sluice_jobs_pending; sluice_jobs_fair
		// on MySQL); PostgreSQL picks that index once it has statistics of
		// the partitions, which autovacuum gathers on a live table.
		if _, err := r.d.DB().ExecContext(ctx, r.sql.analyze); err != nil {
			return 0, fmt.Errorf("analyze after enqueue: %w", err)
		}
	}
	return rate, nil
}

// Latency sources: where the latency mode's jobs come from.
const (
	// SourceInProcess enqueues with the workers' own client, whose
	// Enqueue wakes them in-process without waiting for the database.
	SourceInProcess = "inprocess"
	// SourceClient enqueues with a second client on a connection pool of
	// its own that runs no workers, as a web process or another node
	// does: only the database can tell the workers about the job.
	SourceClient = "client"
	// SourceSQL runs a plain INSERT on a connection of its own, as an
	// application that does not use sluice at all does.
	SourceSQL = "sql"
)

// Sources lists the latency sources, for validation and help texts.
var Sources = []string{SourceInProcess, SourceClient, SourceSQL}

// DefaultGap is the mean gap between jobs from another connection: jobs
// arrive at random between half and one and a half times it apart, so
// that each lands on idle workers, out of step with their poll.
const DefaultGap = 200 * time.Millisecond

// latencyRun starts the workers, then enqueues single jobs from another
// goroutine, each carrying the time its enqueue started; the handler
// records how long it took to start.
func (r *runner) latencyRun(ctx context.Context, res *Result) error {
	r.lat = newHistogram()
	c, err := r.client(func(_ context.Context, job *sluice.Job) error {
		us, err := sinceEnqueue(job)
		if err != nil {
			return sluice.Permanent(err)
		}
		r.lat.add(us)
		r.finished()
		return nil
	})
	if err != nil {
		return fmt.Errorf("bench client: %w", err)
	}
	send, closeSend, err := r.sender(c)
	if err != nil {
		return err
	}
	defer closeSend()
	// Job i is due at t0 + i/rate, or a random gap after the one before;
	// a slow enqueue delays the next ones instead of bursting to catch up.
	interval := time.Duration(float64(time.Second) / r.cfg.Rate)
	if r.cfg.Source != SourceInProcess {
		interval = 0
	}
	pad := ""
	if r.cfg.PayloadBytes > 0 {
		pad = `,"pad":"` + strings.Repeat("x", r.cfg.PayloadBytes) + `"`
	}
	enqErr := make(chan error, 1)
	var enqSecs float64
	workSecs, err := r.workWith(ctx, c, func(ctx context.Context) {
		t0 := time.Now()
		next := t0
		for i := 0; i < r.cfg.Jobs; i++ {
			if wait := time.Until(next); wait > 0 {
				select {
				case <-ctx.Done():
					enqErr <- ctx.Err()
					return
				case <-time.After(wait):
				}
			}
			start := time.Now()
			p := json.RawMessage(`{"t":"` + strconv.FormatInt(start.UnixNano(), 10) + `"` + pad + `}`)
			if err := send(ctx, p); err != nil {
				enqErr <- fmt.Errorf("enqueue job %d: %w", i, err)
				return
			}
			gap := interval
			if gap == 0 {
				gap = r.cfg.Gap/2 + rand.N(r.cfg.Gap)
			}
			if next = next.Add(gap); next.Before(start) {
				next = start
			}
		}
		enqSecs = time.Since(t0).Seconds()
		enqErr <- nil
	}, enqErr)
	if err != nil {
		return err
	}
	res.InsertPerS = float64(r.cfg.Jobs) / enqSecs
	res.WorkPerS = float64(r.cfg.Jobs) / workSecs
	res.LatencyP50, res.LatencyP99 = r.lat.quantileMS(0.50), r.lat.quantileMS(0.99)
	return nil
}

// sender returns what enqueues one latency-mode job from the configured
// source, and what closes the source's own connections.
func (r *runner) sender(c *sluice.Client) (func(context.Context, json.RawMessage) error, func(), error) {
	if r.cfg.Source == SourceInProcess {
		return func(ctx context.Context, p json.RawMessage) error {
			_, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: jobType, Payload: p})
			return err
		}, func() {}, nil
	}
	d, err := dburl.Open(r.cfg.URL, dburl.Options{Prefix: r.cfg.Prefix, ListenURL: r.cfg.ListenURL})
	if err != nil {
		return nil, nil, fmt.Errorf("open %s for the %s source: %w", dburl.Redact(r.cfg.URL), r.cfg.Source, err)
	}
	closeD := func() { d.Close() }
	if r.cfg.Source == SourceSQL {
		stmt := r.sql.plainInsert()
		return func(ctx context.Context, p json.RawMessage) error {
			_, err := d.DB().ExecContext(ctx, stmt, jobType, string(p))
			return err
		}, closeD, nil
	}
	other, err := sluice.NewClient(sluice.Config{Driver: d, Logger: r.cfg.Logger,
		Types: map[string]sluice.Type{jobType: {Queue: queue}}})
	if err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("bench client of the %s source: %w", r.cfg.Source, err)
	}
	return func(ctx context.Context, p json.RawMessage) error {
		_, err := other.Enqueue(ctx, sluice.EnqueueParams{Type: jobType, Payload: p})
		return err
	}, closeD, nil
}

// work starts the workers and returns the seconds from Start until every
// job is finished and its outcome written.
func (r *runner) work(ctx context.Context, c *sluice.Client) (float64, error) {
	return r.workWith(ctx, c, nil, nil)
}

// workWith is work with a feeder goroutine running beside the workers;
// feedErr receives its outcome (nil when it has enqueued everything).
func (r *runner) workWith(ctx context.Context, c *sluice.Client, feed func(context.Context), feedErr <-chan error) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	stop := r.track("work", int64(r.cfg.Jobs), &r.done)
	defer stop()
	t1 := time.Now()
	if err := c.Start(ctx); err != nil {
		return 0, fmt.Errorf("start workers: %w", err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer scancel()
		c.Stop(sctx)
	}()
	if feed != nil {
		go feed(ctx)
	}
	for waiting := true; waiting; {
		select {
		case <-r.allDone:
			waiting = false
		case err := <-feedErr:
			if err != nil {
				return 0, err
			}
			feedErr = nil // fed everything; keep waiting for the workers
		case <-ctx.Done():
			return 0, fmt.Errorf("work phase: %d of %d jobs done: %w", r.done.Load(), r.cfg.Jobs, ctx.Err())
		}
	}
	if feedErr != nil {
		// The last job can start before its Enqueue call returns.
		if err := <-feedErr; err != nil {
			return 0, err
		}
	}
	// Every handler has returned; the outcomes may still be on their way
	// to the database. The job counts as finished once written, as River's
	// finalized_at, so poll until no job is pending or processing.
	for {
		live, failed, err := liveJobs(ctx, c)
		if err != nil {
			return 0, fmt.Errorf("work phase: stats: %w", err)
		}
		if failed {
			return 0, errors.New("work phase: jobs failed")
		}
		if !live {
			break
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("work phase: jobs still pending or processing: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	return time.Since(t1).Seconds(), nil
}

// track reports a phase's progress until the returned func is called.
func (r *runner) track(phase string, total int64, done *atomic.Int64) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	start := time.Now()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				r.cfg.Progress(Progress{Phase: phase, Done: done.Load(), Total: total, Elapsed: time.Since(start)})
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
			r.cfg.Progress(Progress{Phase: phase, Done: done.Load(), Total: total, Elapsed: time.Since(start), Final: true})
		})
	}
}

// histogram counts durations in logarithmic buckets 2% wide, so that its
// size, and the bench's memory, does not grow with the number of jobs.
type histogram struct {
	counts []atomic.Int64
}

const (
	histBase    = 1.02
	histBuckets = 1200 // 1.02^1200 µs is far beyond an hour
)

func newHistogram() *histogram { return &histogram{counts: make([]atomic.Int64, histBuckets)} }

func (h *histogram) add(us int64) {
	i := 0
	if us > 1 {
		i = min(int(math.Log(float64(us))/math.Log(histBase)), histBuckets-1)
	}
	h.counts[i].Add(1)
}

// quantileMS returns the q-quantile in milliseconds, at the geometric
// middle of its bucket.
func (h *histogram) quantileMS(q float64) float64 {
	var total int64
	for i := range h.counts {
		total += h.counts[i].Load()
	}
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i := range h.counts {
		if seen += h.counts[i].Load(); seen >= max(rank, 1) {
			return math.Pow(histBase, float64(i)+0.5) / 1000
		}
	}
	return 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// peakRSSMB reads the process's peak resident set (VmHWM) on Linux; 0
// elsewhere.
func peakRSSMB() float64 { return rssMB("VmHWM:") }

// rssMB reads one memory line of /proc/self/status (VmHWM: the peak
// resident set, VmRSS: the current one) in MB on Linux; 0 elsewhere.
func rssMB(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}
