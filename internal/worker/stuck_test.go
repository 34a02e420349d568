package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The watchdog's tests move the pool's manual clock; the cancel poll
// that runs the watchdog ticks every few milliseconds of real time, and
// a test waits for polls (reads of ProgressSeen), never for time to pass.

const stuckTimeout = 10 * time.Second

// seenDriver counts the watchdog's reads of the database.
type seenDriver struct {
	*countingDriver
	mu    sync.Mutex
	reads int
	marks []driver.ProgressMark // of the last read
}

func (d *seenDriver) ProgressSeen(ctx context.Context, ids []int64) ([]driver.ProgressMark, error) {
	got, err := d.countingDriver.ProgressSeen(ctx, ids)
	d.mu.Lock()
	if err == nil {
		d.reads++
		d.marks = got
	}
	d.mu.Unlock()
	return got, err
}

func (d *seenDriver) state() (int, []driver.ProgressMark) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reads, append([]driver.ProgressMark(nil), d.marks...)
}

// polls waits for two more watchdog rounds to have read the database:
// whatever the clock says now, the watchdog has acted on it.
func (d *seenDriver) polls(t *testing.T) {
	t.Helper()
	n, _ := d.state()
	eventually(t, 0, func() bool { m, _ := d.state(); return m >= n+2 }, "the watchdog polled")
}

// startStuckPool runs queue "q" with every job's progress timeout
// stuckTimeout under policy, a lease far longer (the heartbeat stays out
// of the way), and a retry's backoff of an hour, so that a retried job
// waits rather than runs again.
func startStuckPool(t *testing.T, d driver.Driver, clk func() time.Time, run RunFunc, hooks Hooks, policy sluicetype.OnStuck) {
	startPool(t, d, clk, Queue{Concurrency: 2, Lease: time.Hour}, run, hooks, func(p *Pool) {
		p.cfg.CancelPoll = 5 * time.Millisecond
		p.cfg.Watchdog = func(sluicetype.JobRow) (time.Duration, sluicetype.OnStuck) { return stuckTimeout, policy }
		p.cfg.Fail = func(j sluicetype.JobRow, err error) Result {
			msg := err.Error()
			return Result{Status: sluicetype.StatusPending, Delay: time.Hour, Error: &msg, Transient: true}
		}
	})
}

// A job that reports nothing for its timeout is stopped with a
// *StuckError; under retry, its attempt fails with the reason (history
// and last_error) once its handler has returned, and the success the
// handler reported after is dropped.
func TestStuckRetried(t *testing.T) {
	d := &seenDriver{countingDriver: openSQLite(t)}
	clk := newManualClock()
	ids := enqueue(t, d, 2)
	c := newCauses()
	startStuckPool(t, d, clk.Clock(), c.run, c.hooks(), sluicetype.OnStuckRetry)
	eventually(t, 0, func() bool { return c.running(ids...) }, "the handlers started")

	clk.Advance(stuckTimeout - time.Second)
	d.polls(t)
	_, ok := c.of(ids[0])
	require.False(t, ok, "stopped before its timeout")

	clk.Advance(time.Second)
	eventually(t, 0, func() bool { _, ok := c.of(ids[0]); return ok }, "the stuck handler returned")
	cause, _ := c.of(ids[0])
	require.True(t, errors.Is(cause, ErrStuck), "cause %v", cause)
	require.False(t, errors.Is(cause, ErrCancelled))
	require.EqualError(t, cause, "no progress reported for 10s")

	for _, id := range ids {
		eventually(t, 0, func() bool { return job(t, d, id).Status == sluicetype.StatusPending }, "job %d retried", id)
		j := job(t, d, id)
		require.Equal(t, "no progress reported for 10s", j.LastError, "the handler's late success is dropped")
		require.Len(t, j.History, 1)
		require.Equal(t, sluicetype.OutcomeRetry, j.History[0].Outcome)
		require.Equal(t, "no progress reported for 10s", j.History[0].Error)
		require.Equal(t, 1, j.Attempts, "the attempt is charged")
	}
	dropped, lost := c.droppedSoFar()
	require.Empty(t, dropped, "a stuck job is not an operator's cancel")
	require.Zero(t, lost)
}

// Under cancel, the job ends cancelled with "stuck: ..." and stays so.
func TestStuckCancelled(t *testing.T) {
	d := &seenDriver{countingDriver: openSQLite(t)}
	clk := newManualClock()
	id := enqueue(t, d, 1)[0]
	c := newCauses()
	startStuckPool(t, d, clk.Clock(), c.run, c.hooks(), sluicetype.OnStuckCancel)
	eventually(t, 0, func() bool { return c.running(id) }, "the handler started")

	clk.Advance(stuckTimeout)
	eventually(t, 0, func() bool { return job(t, d, id).Status == sluicetype.StatusCancelled }, "the job cancelled")
	cause, _ := c.of(id)
	require.True(t, errors.Is(cause, ErrStuck), "cause %v", cause)
	j := job(t, d, id)
	const reason = "stuck: no progress reported for 10s"
	require.Equal(t, reason, j.LastError, "the handler's late success is dropped")
	require.NotNil(t, j.FinishedAt)
	require.Len(t, j.History, 1)
	require.Equal(t, sluicetype.OutcomeCancelled, j.History[0].Outcome)
	require.Equal(t, reason, j.History[0].Error)
}

// reporter is a handler that reports progress each time the test asks,
// and otherwise waits for its context to end.
type reporter struct {
	ask, did chan struct{}
	causes   *causes
}

func newReporter() *reporter {
	return &reporter{ask: make(chan struct{}), did: make(chan struct{}), causes: newCauses()}
}

func (r *reporter) run(ctx context.Context, j sluicetype.JobRow) Result {
	r.causes.mu.Lock()
	r.causes.started[j.ID] = true
	r.causes.mu.Unlock()
	report := Report(ctx)
	for {
		select {
		case <-r.ask:
			report(1, 2, "half")
			r.did <- struct{}{}
		case <-ctx.Done():
			r.causes.mu.Lock()
			r.causes.by[j.ID] = context.Cause(ctx)
			r.causes.mu.Unlock()
			return Result{Status: sluicetype.StatusSuccess}
		}
	}
}

// A report made in the process (job.Progress, a command's fd-3 line)
// resets the clock at once.
func TestStuckReportResets(t *testing.T) {
	d := &seenDriver{countingDriver: openSQLite(t)}
	clk := newManualClock()
	id := enqueue(t, d, 1)[0]
	r := newReporter()
	startStuckPool(t, d, clk.Clock(), r.run, r.causes.hooks(), sluicetype.OnStuckCancel)
	eventually(t, 0, func() bool { return r.causes.running(id) }, "the handler started")

	clk.Advance(8 * time.Second)
	r.ask <- struct{}{}
	<-r.did
	// The report is written too, and the poll sees the row change after
	// the clock moved on: that change is the report's own, not a second
	// report, and does not reset the clock again.
	clk.Advance(8 * time.Second) // 16 s since the start, 8 since the report
	eventually(t, 0, func() bool { _, marks := d.state(); return len(marks) == 1 }, "the poll saw the write")
	d.polls(t)
	_, ok := r.causes.of(id)
	require.False(t, ok, "stopped though it reported within its timeout")
	require.Equal(t, sluicetype.StatusProcessing, job(t, d, id).Status)

	clk.Advance(2 * time.Second)
	eventually(t, 0, func() bool { return job(t, d, id).Status == sluicetype.StatusCancelled }, "stuck after its last report")
	cause, _ := r.causes.of(id)
	require.True(t, errors.Is(cause, ErrStuck), "cause %v", cause)
}

// A report that reaches the database another way (a webhook receiver's,
// through any server) resets the clock when the poll sees the job's
// progress_at change, at the worker's own time of that poll.
func TestStuckWebhookReportResets(t *testing.T) {
	d := &seenDriver{countingDriver: openSQLite(t)}
	clk := newManualClock()
	id := enqueue(t, d, 1)[0]
	c := newCauses()
	startStuckPool(t, d, clk.Clock(), c.run, c.hooks(), sluicetype.OnStuckCancel)
	eventually(t, 0, func() bool { return c.running(id) }, "the handler started")

	clk.Advance(8 * time.Second)
	token := job(t, d, id).LockedBy
	report := func(done int64) {
		held, err := d.Progress(context.Background(), driver.ProgressParams{ID: id, Token: token, Done: done, Total: 3})
		require.NoError(t, err)
		require.True(t, held)
	}
	report(1)
	at := job(t, d, id).Progress.At
	eventually(t, 0, func() bool {
		_, marks := d.state()
		return len(marks) == 1 && marks[0].At.Equal(at)
	}, "the poll saw the report")
	d.polls(t)

	clk.Advance(8 * time.Second) // 16 s since the start, 8 since the poll saw the report
	d.polls(t)
	_, ok := c.of(id)
	require.False(t, ok, "stopped though it reported within its timeout")

	// The same value read again is no report: the clock runs on.
	clk.Advance(2 * time.Second)
	eventually(t, 0, func() bool { return job(t, d, id).Status == sluicetype.StatusCancelled }, "stuck after its last report")
	cause, _ := c.of(id)
	require.True(t, errors.Is(cause, ErrStuck), "cause %v", cause)
}

// A job without a timeout is never stopped, whatever the clock says.
func TestNoTimeoutNoWatchdog(t *testing.T) {
	d := &seenDriver{countingDriver: openSQLite(t)}
	clk := newManualClock()
	id := enqueue(t, d, 1)[0]
	c := newCauses()
	startPool(t, d, clk.Clock(), Queue{Concurrency: 1, Lease: time.Hour}, c.run, c.hooks(), func(p *Pool) {
		p.cfg.CancelPoll = 5 * time.Millisecond
		p.cfg.Watchdog = func(sluicetype.JobRow) (time.Duration, sluicetype.OnStuck) { return 0, "" }
	})
	eventually(t, 0, func() bool { return c.running(id) }, "the handler started")
	clk.Advance(time.Hour / 2)
	time.Sleep(50 * time.Millisecond) // some ten polls; there is no state to wait for
	reads, _ := d.state()
	require.Zero(t, reads, "no job to watch, no read")
	_, ok := c.of(id)
	require.False(t, ok)
}
