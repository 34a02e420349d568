package worker

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/sluicetype"
)

// Jobs claimed together share a lease token, and the heartbeat extends each
// token's leases in one call: two claims, two calls, once a third of the
// lease has passed on the pool's clock and not before. (The lease is short
// so that the heartbeat ticks every 50ms; nothing here rescues.)
func TestHeartbeatExtendsEachClaimInOneCall(t *testing.T) {
	const lease = 300 * time.Millisecond
	d := openSQLite(t)
	first := enqueue(t, d, 4)
	g := newGate()
	clk := newManualClock()
	p := startPool(t, d, clk.Clock(), Queue{Concurrency: 8, Lease: lease}, g.run, Hooks{})
	eventually(t, 2*time.Second, func() bool { now, _, _ := g.counts(); return now == 4 }, "the first claim did not start")
	second := enqueue(t, d, 3)
	p.Notify("q")
	eventually(t, 2*time.Second, func() bool { now, _, _ := g.counts(); return now == 7 }, "the second claim did not start")

	tokens := map[string][]int64{}
	until := map[int64]time.Time{}
	for _, id := range append(slices.Clone(first), second...) {
		j := job(t, d, id)
		tokens[j.LockedBy] = append(tokens[j.LockedBy], id)
		until[id] = *j.LockedUntil
	}
	require.Len(t, tokens, 2, "two claims, two lease tokens")

	// Heartbeat ticks come every 50ms or more; none is due yet.
	clk.Advance(lease/3 - time.Millisecond)
	time.Sleep(120 * time.Millisecond)
	require.Empty(t, d.heartbeats(), "leases renewed before a third of them passed")

	clk.Advance(time.Millisecond)
	eventually(t, 2*time.Second, func() bool { return len(d.heartbeats()) >= 2 }, "no heartbeat after a third of the lease")
	// Later ticks find nothing due until the clock moves again.
	time.Sleep(120 * time.Millisecond)
	beats := d.heartbeats()
	require.Len(t, beats, 2, "heartbeat calls for two claims")
	for _, b := range beats {
		require.Equal(t, lease, b.Lease)
		require.ElementsMatch(t, tokens[b.Token], b.IDs, "the heartbeat of token %s", b.Token)
		delete(tokens, b.Token)
	}
	require.Empty(t, tokens, "a claim's leases were not extended")
	for id, before := range until {
		require.True(t, job(t, d, id).LockedUntil.After(before), "job %d: lease not extended", id)
	}
}

// A lease shorter than the handler's run stays held: the heartbeat renews
// it in time, so a rescue pass that runs all along takes nothing. The
// pool's clock is three hours behind the database's: only its durations
// matter. The lease is real time, renewed every lease/3: 1.5 s leaves a
// renewal a second of slack on a machine loaded under -race.
func TestHeartbeatKeepsShortLeaseAlive(t *testing.T) {
	const lease = 1500 * time.Millisecond
	d := openSQLite(t)
	id := enqueue(t, d, 1)[0]
	skewed := clock.Clock(func() time.Time { return time.Now().Add(-3 * time.Hour) })
	var lost lostLeases
	var cause atomic.Value
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		select {
		case <-time.After(2 * lease):
			return Result{Status: sluicetype.StatusSuccess}
		case <-ctx.Done():
			cause.Store(context.Cause(ctx))
			return Result{Status: sluicetype.StatusPending}
		}
	}
	startPool(t, d, skewed, Queue{Concurrency: 1, Lease: lease}, run, Hooks{LeaseLost: lost.hook})

	ctx := context.Background()
	for job(t, d, id).Status != sluicetype.StatusSuccess {
		r, err := d.Rescue(ctx, driver.RescueParams{Limit: 10})
		require.NoError(t, err)
		require.Zero(t, r.Pending+r.Failed, "the running job's lease expired")
		time.Sleep(10 * time.Millisecond)
	}
	require.Nil(t, cause.Load(), "the handler was cancelled")
	_, wasLost := lost.get(id)
	require.False(t, wasLost)
	require.Equal(t, 1, job(t, d, id).Attempts)
	require.GreaterOrEqual(t, len(d.heartbeats()), 3, "heartbeats during two leases")
}

// When the heartbeat finds the lease taken, it cancels the handler with
// ErrLeaseLost and reports it; nothing of that attempt is written.
func TestHeartbeatCancelsHandlerOfLostLease(t *testing.T) {
	const lease = 100 * time.Millisecond
	d := openSQLite(t)
	id := enqueue(t, d, 1)[0]
	clk := newManualClock()
	var lost lostLeases
	cancelled := make(chan error, 1)
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		return Result{Status: sluicetype.StatusFailed}
	}
	p := startPool(t, d, clk.Clock(), Queue{Concurrency: 1, Lease: lease, Rate: 0.001}, run, Hooks{LeaseLost: lost.hook})
	eventually(t, 2*time.Second, func() bool { return p.Running() == 1 }, "the job did not start")

	stealLease(t, d, id)
	clk.Advance(lease / 3)
	eventually(t, 2*time.Second, func() bool { return len(d.heartbeats()) > 0 }, "no heartbeat")
	// The heartbeat acts on what it found: the clock stands still, so no
	// later tick can be what cancels the handler, and no tighter bound
	// than "at all" is needed.
	select {
	case err := <-cancelled:
		require.True(t, errors.Is(err, ErrLeaseLost), "cause %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler of a lost lease was not cancelled")
	}
	eventually(t, 10*time.Second, func() bool { _, ok := lost.get(id); return ok }, "the lost lease was not reported")
	where, _ := lost.get(id)
	require.Equal(t, "heartbeat", where)
	p.stop(time.Second)
	require.Empty(t, d.completeCalls(), "an outcome of the lost attempt was written")
	j := job(t, d, id)
	require.Equal(t, sluicetype.StatusProcessing, j.Status)
	require.Equal(t, "other-worker", j.LockedBy)
}
