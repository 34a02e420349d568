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

const cancelReason = "cancelled by an operator: test"

// causes records, per job, the cause its handler's context ended with,
// once the handler returned.
type causes struct {
	mu      sync.Mutex
	by      map[int64]error
	started map[int64]bool
	dropped []sluicetype.Outcome
	lost    int
}

func newCauses() *causes { return &causes{by: map[int64]error{}, started: map[int64]bool{}} }

// run blocks until its context ends, then reports success: a handler
// that says it finished although it was told to stop.
func (c *causes) run(ctx context.Context, j sluicetype.JobRow) Result {
	c.mu.Lock()
	c.started[j.ID] = true
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	c.by[j.ID] = context.Cause(ctx)
	c.mu.Unlock()
	return Result{Status: sluicetype.StatusSuccess}
}

func (c *causes) hooks() Hooks {
	return Hooks{
		CancelDropped: func(_ sluicetype.JobRow, reported sluicetype.Outcome) {
			c.mu.Lock()
			c.dropped = append(c.dropped, reported)
			c.mu.Unlock()
		},
		LeaseLost: func(sluicetype.JobRow, string) { c.mu.Lock(); c.lost++; c.mu.Unlock() },
	}
}

func (c *causes) of(id int64) (error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	err, ok := c.by[id]
	return err, ok
}

func (c *causes) running(ids ...int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if !c.started[id] {
			return false
		}
	}
	return true
}

func (c *causes) droppedSoFar() ([]sluicetype.Outcome, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sluicetype.Outcome(nil), c.dropped...), c.lost
}

// requireCancelled checks that the job ended cancelled by the cancel, not
// by what its handler reported afterwards.
func requireCancelled(t *testing.T, d driver.Driver, id int64) {
	t.Helper()
	j := job(t, d, id)
	require.Equal(t, sluicetype.StatusCancelled, j.Status)
	require.Equal(t, cancelReason, j.LastError)
	require.Len(t, j.History, 1)
	require.Equal(t, sluicetype.OutcomeCancelled, j.History[0].Outcome)
}

// The poll finds the cancel while the handler runs: its context ends with
// ErrCancelled, the other job runs on, and the success it reports after
// is dropped and counted.
func TestCancelStopsTheRunningHandler(t *testing.T) {
	d := openSQLite(t)
	ids := enqueue(t, d, 2)
	c := newCauses()
	startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 2}, c.run, c.hooks(),
		func(p *Pool) { p.cfg.CancelPoll = 10 * time.Millisecond })
	eventually(t, 0, func() bool { return c.running(ids...) }, "both handlers started")

	running, err := d.Cancel(context.Background(), driver.CancelParams{ID: ids[0], Reason: cancelReason})
	require.NoError(t, err)
	require.True(t, running)
	eventually(t, 0, func() bool { _, ok := c.of(ids[0]); return ok }, "the cancelled job's handler returned")
	cause, _ := c.of(ids[0])
	require.True(t, errors.Is(cause, ErrCancelled), "cause %v", cause)
	require.False(t, errors.Is(cause, ErrLeaseLost))
	eventually(t, 0, func() bool { dropped, _ := c.droppedSoFar(); return len(dropped) == 1 }, "the dropped outcome counted")
	dropped, lost := c.droppedSoFar()
	require.Equal(t, []sluicetype.Outcome{sluicetype.OutcomeSuccess}, dropped)
	require.Zero(t, lost, "a cancel is not a lost lease")
	requireCancelled(t, d, ids[0])

	_, ok := c.of(ids[1])
	require.False(t, ok, "the other job's handler was stopped")
	require.Equal(t, sluicetype.StatusProcessing, job(t, d, ids[1]).Status)
}

// A cancel that lands between the handler's return and its outcome's
// write: the write is fenced out, and the outcome counted as dropped,
// not as a lost lease.
func TestCancelBeforeTheOutcomeIsWritten(t *testing.T) {
	d := openSQLite(t)
	id := enqueue(t, d, 1)[0]
	c := newCauses()
	d.beforeComplete = func(call int, cs []driver.Completion) {
		if call == 1 {
			_, err := d.Driver.Cancel(context.Background(), driver.CancelParams{ID: cs[0].ID, Reason: cancelReason})
			require.NoError(t, err)
		}
	}
	startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 1},
		func(context.Context, sluicetype.JobRow) Result { return Result{Status: sluicetype.StatusSuccess} }, c.hooks(),
		func(p *Pool) { p.cfg.CancelPoll = time.Hour })
	eventually(t, 0, func() bool { dropped, _ := c.droppedSoFar(); return len(dropped) == 1 }, "the dropped outcome counted")
	dropped, lost := c.droppedSoFar()
	require.Equal(t, []sluicetype.Outcome{sluicetype.OutcomeSuccess}, dropped)
	require.Zero(t, lost)
	requireCancelled(t, d, id)
}

// The heartbeat finds the cancel first (the poll is slow here): the
// handler is told it was cancelled, not that its lease was lost.
func TestHeartbeatFindsTheCancel(t *testing.T) {
	d := openSQLite(t)
	id := enqueue(t, d, 1)[0]
	c := newCauses()
	clk := newManualClock()
	startPool(t, d, clk.Clock(), Queue{Concurrency: 1, Lease: time.Minute}, c.run, c.hooks(),
		func(p *Pool) { p.cfg.CancelPoll = time.Hour })
	eventually(t, 0, func() bool { return c.running(id) }, "the handler started")
	_, err := d.Cancel(context.Background(), driver.CancelParams{ID: id, Reason: cancelReason})
	require.NoError(t, err)
	clk.Advance(21 * time.Second) // past a third of the lease: the next tick renews
	eventually(t, 0, func() bool { _, ok := c.of(id); return ok }, "the cancelled job's handler returned")
	cause, _ := c.of(id)
	require.True(t, errors.Is(cause, ErrCancelled), "cause %v", cause)
	eventually(t, 0, func() bool { dropped, _ := c.droppedSoFar(); return len(dropped) == 1 }, "the dropped outcome counted")
	_, lost := c.droppedSoFar()
	require.Zero(t, lost)
	requireCancelled(t, d, id)
}
