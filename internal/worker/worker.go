// Package worker runs claimed jobs: a producer per queue claims batches
// sized to its free slots, each job runs in its own goroutine under a lease
// that a heartbeat keeps extending, and a completer writes outcomes back in
// batches, every one fenced by the job's lease token.
package worker

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/sluicetype"
)

// Result is what became of one attempt.
type Result struct {
	Status sluicetype.Status // success, failed, pending, or cancelled (a stuck job's policy)
	Delay  time.Duration
	Refund bool
	Error  *string
	// Summary, when set, is what logs above debug level show of Error:
	// the same text without what may carry user data. Only hooks read it.
	Summary string
	Result  *string
	// Transient: the attempt failed for a reason that may pass (not a
	// permanent error, not a snooze), whatever its next state. Circuit
	// breakers count these.
	Transient bool
	// HTTPStatus (a webhook's answer) or ExitCode (a command's) go into
	// the attempt history; zero and nil when the handler reported none.
	HTTPStatus int
	ExitCode   *int
	// Log, when set, is the attempt's output to keep (a command's); the
	// pool fills in its job and attempt number.
	Log *sluicetype.AttemptLog
	// Progress is the attempt's last progress report, or nil; the pool
	// fills it in from what the handler reported (Report).
	Progress *sluicetype.Progress
	// ProgressElsewhere: the handler handed out the attempt's progress
	// token (a webhook's receiver), so reports may have reached the job's
	// row through the API rather than through Report. With none reported
	// here, the pool reads the row's for the attempt's history entry.
	ProgressElsewhere bool
	// TraceID is the trace the attempt ran in, for its log line; "" when
	// it was not traced.
	TraceID string
	// Tx, when set, is the handler's completing transaction: the fenced
	// outcome is written in it and it is committed, or rolled back if the
	// lease was lost.
	Tx *sql.Tx
}

// RunFunc runs one claimed job. Its context ends when the job's lease is
// lost or the pool shuts down past its deadline.
type RunFunc func(ctx context.Context, job sluicetype.JobRow) Result

// Queue configures one queue's workers.
type Queue struct {
	Name        string
	Concurrency int
	Lease       time.Duration // lease written at claim time
	// Types, if set, are the only types the queue's workers claim: those
	// the process has handlers for. Empty claims every type.
	Types []string
	// Rate, if positive, caps job starts per second in this process.
	Rate float64
	// ClusterRate, if positive, caps job starts per second of the queue
	// on every node together, through the database's token bucket
	// "queue:NAME" holding up to ClusterBurst tokens.
	ClusterRate  float64
	ClusterBurst int
	// MaxJobs, if set, makes the producer bounded: it stops claiming after
	// MaxJobs jobs, or as soon as the queue has nothing runnable.
	MaxJobs int
	// Fair and Limits are passed to every claim (driver.ClaimParams).
	Fair   bool
	Limits *driver.RunningCaps
	// Pace, if set, is how often a start rate of Limits that binds this
	// queue's jobs refills a token. The producer then claims only jobs it
	// can start at once (tokens are spent at the claim), and while the
	// queue keeps starting jobs it claims again every Pace/2 rather than
	// backing off: its short claims are the rate's, not an empty queue's.
	Pace time.Duration
}

// Hooks let the caller observe the pool; any may be nil.
type Hooks struct {
	Claimed   func(queue string, n int, took time.Duration)
	Completed func(job sluicetype.JobRow, o Result, ran time.Duration)
	LeaseLost func(job sluicetype.JobRow, where string)
	// CancelDropped: the handler of a job an operator cancelled while it
	// ran returned, and what it reported is dropped.
	CancelDropped func(job sluicetype.JobRow, reported sluicetype.Outcome)
}

// Config configures a Pool.
type Config struct {
	Driver driver.Driver
	Queues []Queue
	Run    RunFunc
	// LeaseFor gives the lease of a job type; the heartbeat renews it.
	LeaseFor func(jobType string) time.Duration
	// Watchdog gives a claimed job's progress timeout (its own, else its
	// type's; 0 for none) and its type's policy ("" for the default):
	// stuck.go. Nil means no job has one.
	Watchdog func(job sluicetype.JobRow) (time.Duration, sluicetype.OnStuck)
	// Fail classifies err as a failed attempt of job, with its type's
	// backoff: the outcome of a stuck attempt retried. Nil retries at
	// once.
	Fail   func(job sluicetype.JobRow, err error) Result
	Logger *slog.Logger
	Hooks  Hooks
	// Clock is the client's clock, required: the pool reads the time only
	// through it.
	Clock clock.Clock
	// PollMin and PollMax bound the adaptive poll: fast while claims find
	// work, backing off to PollMax while idle. Defaults 5ms and 1s.
	PollMin, PollMax time.Duration
	// ProbeEvery is how often an idle producer asks a driver.Prober
	// whether its queue has a runnable job, so that a job inserted by
	// another process, which no Notify announces, waits about this long
	// rather than up to PollMax. Drivers that push wake-ups (a
	// driver.Listener) are not probed. Default 25ms.
	ProbeEvery time.Duration
	// MaxClaim caps one claim batch. Default 1,000.
	MaxClaim int
	// FetchWait is how long a busy producer (its last claim was full)
	// waits for an eighth of its slots to free up before claiming fewer,
	// so that a busy pool claims a few large batches rather than many
	// single jobs. Default 10ms.
	FetchWait time.Duration
	// Circuit gives a job type's circuit breaker; a zero Threshold (or a
	// nil Circuit) means none.
	Circuit func(jobType string) driver.CircuitPolicy
	// Node names this process in the attempt history (host:pid).
	Node string
	// KeepAttempts bounds each job's attempt history; 0 means
	// driver.DefaultKeepAttempts.
	KeepAttempts int
	// CancelPoll is how often the pool asks which of its running jobs an
	// operator cancelled. Default DefaultCancelPoll.
	CancelPoll time.Duration
	// Grace is how long handlers get to return after a shutdown deadline
	// cancels them before their jobs are requeued anyway. Default
	// DefaultGrace.
	Grace time.Duration
}

// DefaultGrace is how long shutdown waits for cancelled handlers to
// return: long enough for a command handler to get its SIGTERM, its kill
// grace (10 s by default) and its SIGKILL, and to report how its process
// group ended, so that its real outcome is written and no handler is left
// running when the process exits.
const DefaultGrace = 15 * time.Second

// ErrShutdown is the cause of a handler context cancelled by shutdown.
var ErrShutdown = errors.New("worker shutting down")

// ErrCancelled is the cause of a handler context cancelled because an
// operator cancelled its job while it ran. Its text begins the reason the
// job's history records.
var ErrCancelled = errors.New("cancelled by an operator")

// ErrLeaseLost is the cause of a handler context cancelled because its
// job's lease was lost (rescued after a stall, or cancelled): the cause is
// a *LeaseLostError, which errors.Is reports as ErrLeaseLost.
var ErrLeaseLost = errors.New("job lease lost")

// LeaseLostError is the cause of a handler context cancelled because its
// job's lease was lost. StopBy is when the handler must be gone: the
// earliest moment another worker may start the job. For a lease this
// process let lapse (its renewals failed) that is when it can pass at the
// database; for one the database says is gone already, the moment of the
// cancel. A command handler's kill grace ends there, whatever its length.
type LeaseLostError struct{ StopBy time.Time }

func (e *LeaseLostError) Error() string        { return ErrLeaseLost.Error() }
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }

// Pool runs the workers of several queues.
type Pool struct {
	cfg       Config
	log       *slog.Logger
	producers map[string]*producer
	running   *registry
	completer *completer
	paused    *pausedCache
	reach     *reach
	stopping  chan struct{} // closed when Stop begins

	stopClaims context.CancelFunc
	stopBG     context.CancelFunc
	// bgCtx ends once every outcome is written at shutdown (stopBG).
	bgCtx context.Context
	// lateChecks is lateClaimChecks; a test may move the checks.
	lateChecks []time.Duration
	claimWG    sync.WaitGroup // producers
	jobWG      sync.WaitGroup // running handlers
	bgWG       sync.WaitGroup // heartbeat, completer, pause refresher, late hand-backs
}

// New builds a pool; Start runs it.
func New(cfg Config) *Pool {
	if cfg.Clock == nil {
		panic("worker: Config.Clock is nil")
	}
	if cfg.PollMin <= 0 {
		cfg.PollMin = 5 * time.Millisecond
	}
	if cfg.PollMax <= 0 {
		cfg.PollMax = time.Second
	}
	if cfg.ProbeEvery <= 0 {
		cfg.ProbeEvery = 25 * time.Millisecond
	}
	if cfg.MaxClaim <= 0 {
		cfg.MaxClaim = 1000
	}
	if cfg.FetchWait <= 0 {
		cfg.FetchWait = 10 * time.Millisecond
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.CancelPoll <= 0 {
		cfg.CancelPoll = DefaultCancelPoll
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{cfg: cfg, log: cfg.Logger, producers: map[string]*producer{}, stopping: make(chan struct{}), lateChecks: lateClaimChecks}
	p.running = newRegistry()
	p.completer = newCompleter(p)
	p.paused = &pausedCache{d: cfg.Driver, log: cfg.Logger, interval: time.Second}
	p.reach = newReach(cfg.Driver, cfg.Logger, cfg.Clock)
	for _, q := range cfg.Queues {
		p.producers[q.Name] = newProducer(p, q)
	}
	return p
}

// Start begins claiming and running jobs. It returns at once.
func (p *Pool) Start(ctx context.Context) {
	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	claimCtx, stopClaims := context.WithCancel(ctx)
	p.stopBG, p.stopClaims, p.bgCtx = stopBG, stopClaims, bgCtx
	p.paused.refresh(bgCtx)
	p.bgWG.Add(6)
	go func() { defer p.bgWG.Done(); p.completer.loop(bgCtx) }()
	go func() { defer p.bgWG.Done(); p.cancelLoop(bgCtx) }()
	go func() { defer p.bgWG.Done(); p.heartbeatLoop(bgCtx) }()
	go func() { defer p.bgWG.Done(); p.expiryLoop(bgCtx) }()
	go func() { defer p.bgWG.Done(); p.reach.watch(bgCtx, func() bool { return p.running.len() > 0 }) }()
	go func() { defer p.bgWG.Done(); p.paused.loop(bgCtx) }()
	if l, ok := p.cfg.Driver.(driver.Listener); ok {
		p.bgWG.Add(1)
		go func() { defer p.bgWG.Done(); l.Listen(bgCtx, p.Notify, p.log) }()
	}
	for _, pr := range p.producers {
		p.claimWG.Add(1)
		go func() { defer p.claimWG.Done(); pr.loop(claimCtx) }()
	}
}

// Notify wakes a queue's producer: a job was just enqueued there. An
// empty queue wakes every producer (see driver.Listener).
func (p *Pool) Notify(queue string) {
	if queue == "" {
		for _, pr := range p.producers {
			pr.wake()
		}
		return
	}
	if pr := p.producers[queue]; pr != nil {
		pr.wake()
	}
}

// Stop stops claiming, waits for running jobs until ctx ends, then cancels
// the rest and returns their jobs to pending without charging the attempt.
// It returns once every outcome is written (or could not be).
func (p *Pool) Stop(ctx context.Context) {
	if p.stopClaims == nil {
		return
	}
	p.stopClaims()
	close(p.stopping)
	p.claimWG.Wait()

	done := make(chan struct{})
	go func() { p.jobWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		p.log.Warn("shutdown deadline reached; cancelling running jobs", "running", p.running.len())
		p.running.cancelAll(ErrShutdown)
		// Each handler's own outcome is written once it returns: a command
		// handler returns when its process group has ended, SIGKILLed at
		// the latest after its kill grace, which Grace covers.
		select {
		case <-done:
		case <-time.After(p.cfg.Grace):
			// Only a handler that ignores its context gets here. Its job
			// goes back to pending now; its goroutine ends with the
			// process, and a late outcome would be fenced out.
			p.requeueStuck()
		}
	}
	p.completer.drain()
	p.stopBG()
	p.bgWG.Wait()
}

// requeueStuck returns to pending every job whose handler has not
// returned. A handler that returned has its outcome queued; requeueing its
// job too would race that write and, when the requeue won, run finished
// work again.
func (p *Pool) requeueStuck() {
	jobs := p.running.abandonUnsettled()
	if len(jobs) == 0 {
		return
	}
	// One bound for the history reads of every job and the write, so that
	// a database that stopped answering holds shutdown up for 10 s, not
	// 5 s for each stuck job.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs := make([]driver.Completion, 0, len(jobs))
	outcomes := make([]Result, 0, len(jobs))
	for _, r := range jobs {
		o := p.interrupted(ctx, r, Interrupted+"; handler did not return")
		outcomes = append(outcomes, o)
		cs = append(cs, p.completion(r, o))
	}
	lost, err := p.cfg.Driver.Complete(ctx, driver.CompleteParams{Completions: cs})
	if err != nil {
		p.log.Error("requeue stuck jobs at shutdown", "jobs", len(cs), "err", err)
		return
	}
	for i, r := range jobs {
		p.running.remove(r)
		// Their attempts end here, so they are observed (logged, counted)
		// here: the handler's late return is fenced out and not observed.
		if h := p.cfg.Hooks.Completed; h != nil {
			h(r.job, outcomes[i], p.cfg.Clock.Since(r.claimed))
		}
	}
	p.log.Warn("requeued jobs whose handlers ignored cancellation at shutdown", "jobs", len(cs), "lost", len(lost))
}

// jobAttrs are the fields of the pool's own log lines about a running
// job, the same as the client's attempt lines, with the trace the job was
// enqueued in.
func (p *Pool) jobAttrs(x *running) []any {
	attrs := []any{"job_id", x.job.ID, "type", x.job.Type, "queue", x.job.Queue, "attempt", x.job.Attempts,
		"duration", p.cfg.Clock.Since(x.claimed)}
	if x.job.TraceParent != "" {
		ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": x.job.TraceParent})
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			attrs = append(attrs, "trace_id", sc.TraceID().String())
		}
	}
	return attrs
}

// completion is the fenced write of o for x. A job that fails now or has
// failed before (its last_error is set) gets the attempt appended to its
// history; a job that never failed writes none, which keeps the common
// success as cheap as it was.
func (p *Pool) completion(x *running, o Result) driver.Completion {
	c := driver.Completion{ID: x.job.ID, Token: x.job.LockedBy, Status: o.Status, Delay: o.Delay,
		Refund: o.Refund, Error: o.Error, Result: o.Result, KeepAttempts: p.cfg.KeepAttempts}
	if o.Log != nil {
		l := *o.Log
		l.JobID, l.Attempt = x.job.ID, x.job.Attempts
		c.Log = &l
	}
	if o.Error == nil && x.job.LastError == "" {
		return c
	}
	a := &sluicetype.Attempt{Number: x.job.Attempts, Node: p.cfg.Node, Start: x.job.UpdatedAt, Outcome: AttemptOutcome(o),
		HTTPStatus: o.HTTPStatus, ExitCode: o.ExitCode, Progress: o.Progress}
	if o.Error != nil {
		a.Error = *o.Error
	}
	c.Attempt = a
	return c
}

// AttemptOutcome names what became of an attempt: sluicetype.OutcomeSuccess,
// OutcomeFailed, OutcomeCancelled or OutcomeRetry, or sluicetype.AttemptReleased for one given
// back without being charged.
func AttemptOutcome(o Result) sluicetype.Outcome {
	switch {
	case o.Status == sluicetype.StatusSuccess:
		return sluicetype.OutcomeSuccess
	case o.Status == sluicetype.StatusFailed:
		return sluicetype.OutcomeFailed
	case o.Status == sluicetype.StatusCancelled:
		return sluicetype.OutcomeCancelled
	case o.Refund:
		return sluicetype.AttemptReleased
	default:
		return sluicetype.OutcomeRetry
	}
}

// Drained is closed when every bounded producer has stopped claiming and
// every job it started has finished.
func (p *Pool) Drained() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		p.claimWG.Wait()
		p.jobWG.Wait()
		close(ch)
	}()
	return ch
}

// Running returns how many jobs are in progress.
func (p *Pool) Running() int { return p.running.len() }

func newToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
