package worker

import (
	"context"
	"errors"
	"log/slog"
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
	cancelled, started := make(chan error, 1), make(chan struct{})
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		close(started)
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		return Result{Status: sluicetype.StatusFailed}
	}
	p := startPool(t, d, clk.Clock(), Queue{Concurrency: 1, Lease: lease, Rate: 0.001}, run, Hooks{LeaseLost: lost.hook})
	// The handler itself, or a lease lost before it starts keeps it from
	// starting, and nothing is cancelled.
	waitClosed(t, started, "the job did not start")
	require.Equal(t, 1, p.Running())

	stealLease(t, d, id)
	clk.Advance(lease / 3)
	eventually(t, 2*time.Second, func() bool { return len(d.heartbeats()) > 0 }, "no heartbeat")
	// The heartbeat acts on what it found: the clock stands still, so no
	// later tick can be what cancels the handler, and no tighter bound
	// than "at all" is needed.
	select {
	case err := <-cancelled:
		require.True(t, errors.Is(err, ErrLeaseLost), "cause %v", err)
		// Another attempt may hold the lease already: the handler must
		// stop at once.
		var ll *LeaseLostError
		require.ErrorAs(t, err, &ll)
		require.Equal(t, clk.Now(), ll.StopBy)
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

// flakyBeats fails the first n heartbeat statements the way a connection
// the server closed fails one, then delegates.
type flakyBeats struct {
	driver.Driver
	fail  atomic.Int32
	calls atomic.Int32
}

func (d *flakyBeats) Heartbeat(ctx context.Context, p driver.HeartbeatParams) ([]int64, error) {
	d.calls.Add(1)
	if d.fail.Add(-1) >= 0 {
		return nil, errors.New("FATAL: terminating connection due to administrator command (SQLSTATE 57P01)")
	}
	return d.Driver.Heartbeat(ctx, p)
}

// A renewal that meets a dead connection is tried again at once within
// the same beat, on another connection, instead of a tick later: a
// server that kills connections every 200 ms must not cost a lease.
func TestRenewTriesAgainAfterAFailure(t *testing.T) {
	const lease = 6 * time.Second
	base := openSQLite(t)
	id := enqueue(t, base, 1)[0]
	token := "renew-test"
	jobs, err := base.Claim(context.Background(), driver.ClaimParams{Queue: "q", Limit: 1, Lease: lease, Token: token})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	d := &flakyBeats{Driver: base}
	p := New(Config{
		Driver: d, Queues: []Queue{{Name: "q", Concurrency: 1, Lease: lease}}, Clock: newManualClock().Clock(),
		Run:    func(context.Context, sluicetype.JobRow) Result { return Result{} },
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	params := driver.HeartbeatParams{Token: token, IDs: []int64{id}, Lease: lease}

	d.fail.Store(renewTries - 1)
	before := job(t, base, id).LockedUntil
	lost, err := p.renew(context.Background(), params)
	require.NoError(t, err, "the last try gets through")
	require.Empty(t, lost)
	require.EqualValues(t, renewTries, d.calls.Load(), "one statement per try")
	// The pauses between the tries (50 + 100 ms) put the renewed lease's
	// end past the claim's.
	require.True(t, job(t, base, id).LockedUntil.After(*before), "lease extended")

	// Every try fails: the beat gives up after renewTries, for the next
	// tick to try again.
	d.calls.Store(0)
	d.fail.Store(renewTries)
	_, err = p.renew(context.Background(), params)
	require.Error(t, err)
	require.EqualValues(t, renewTries, d.calls.Load())
}

// An outcome write that keeps failing is retried at most a twelfth of the
// lease apart, so several tries fit in a short lease; a long lease's
// retries back off to retryMax.
func TestRetryWaitStaysUnderTheCeiling(t *testing.T) {
	require.Equal(t, 500*time.Millisecond, retryCeiling(6*time.Second))
	require.Equal(t, retryMax, retryCeiling(5*time.Minute))
	require.Equal(t, retryMin, retryCeiling(200*time.Millisecond))

	r := newReach(openSQLite(t), slog.New(slog.DiscardHandler), clock.System)
	wait := retryMin
	ceiling := 150 * time.Millisecond
	for range 3 {
		start := time.Now()
		require.True(t, r.retryWait(context.Background(), &wait, ceiling))
		require.GreaterOrEqual(t, time.Since(start), min(wait, ceiling)/2, "it paused")
		require.LessOrEqual(t, wait, ceiling, "the next pause")
	}
	require.Equal(t, ceiling, wait)
}
