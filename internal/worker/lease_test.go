package worker

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"

	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// These tests hold the rule that no handler outlives its lease: a job
// re-claimed by the process that still runs its stale attempt waits for
// it, every database call has a deadline, a silent cut is found by a
// liveness ping, and a handler whose lease was not renewed in time is
// stopped before the lease can pass at the database.

// silentServer is a database/sql driver whose connections hang, as over a
// network that drops packets, while silent is set: a dial waits for its
// context to end. It stands in for the pool's liveness pings only; the
// jobs' calls go to the real database.
type silentServer struct{ silent atomic.Bool }

type silentConnector struct{ s *silentServer }

func (c silentConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	if c.s.silent.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return pingConn{}, nil
}
func (c silentConnector) Driver() sqldriver.Driver { return nil }

// cutDriver is a real database behind a link that the test can cut: while
// cut, Claim and Heartbeat wait until their context ends, and so does a
// ping; blockBeats alone makes only the heartbeat hang.
type cutDriver struct {
	*countingDriver
	srv        *silentServer
	db         *sql.DB
	blockBeats atomic.Bool

	mu    sync.Mutex
	ended []error // causes of the calls that hung, in order
}

func newCutDriver(t *testing.T) *cutDriver {
	srv := &silentServer{}
	db := sql.OpenDB(silentConnector{srv})
	// No idle connection: every ping dials, as one over a cut link would
	// find its connection dead.
	db.SetMaxIdleConns(-1)
	t.Cleanup(func() { db.Close() })
	return &cutDriver{countingDriver: openSQLite(t), srv: srv, db: db}
}

func (d *cutDriver) DB() *sql.DB { return d.db }

func (d *cutDriver) cut(on bool) { d.srv.silent.Store(on) }

// hang waits, as a call on a silent connection does, for ctx to end.
func (d *cutDriver) hang(ctx context.Context) error {
	<-ctx.Done()
	d.mu.Lock()
	d.ended = append(d.ended, context.Cause(ctx))
	d.mu.Unlock()
	return ctx.Err()
}

func (d *cutDriver) hung() []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]error(nil), d.ended...)
}

// claimCalls counts the claims that reached the database.
func (d *cutDriver) claimCalls() int {
	d.countingDriver.mu.Lock()
	defer d.countingDriver.mu.Unlock()
	return len(d.countingDriver.claims)
}

func (d *cutDriver) Claim(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	if d.srv.silent.Load() {
		return nil, d.hang(ctx)
	}
	return d.countingDriver.Claim(ctx, p)
}

func (d *cutDriver) Heartbeat(ctx context.Context, p driver.HeartbeatParams) ([]int64, error) {
	if d.srv.silent.Load() || d.blockBeats.Load() {
		return nil, d.hang(ctx)
	}
	return d.countingDriver.Heartbeat(ctx, p)
}

// Item 1 of issue 35: a job whose lease this process lost, re-claimed
// while its stale attempt is still winding down, waits for that attempt
// to return, and the stale attempt's end never touches the new one: the
// new attempt stays registered and keeps its lease renewed. Before, the
// registry was keyed by job id: the new attempt ran alongside the stale
// one, and the stale one's fenced-out completion removed the new
// attempt's entry, so it got no heartbeat and lost its lease in turn.
func TestReclaimWaitsForStaleAttemptAndKeepsItsLease(t *testing.T) {
	testdb.ForEach(t, testReclaimWaitsForStaleAttempt)
}

func testReclaimWaitsForStaleAttempt(t *testing.T, name string) {
	const lease = 300 * time.Millisecond
	d := &countingDriver{Driver: testdb.Open(t, name)}
	id := enqueue(t, d, 1)[0]
	clk := newManualClock()
	var mu sync.Mutex
	now, most, starts := 0, 0, 0
	releaseFirst, releaseSecond := make(chan struct{}), make(chan struct{})
	firstCause := make(chan error, 1)
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		mu.Lock()
		now++
		most = max(most, now)
		starts++
		n := starts
		mu.Unlock()
		defer func() { mu.Lock(); now--; mu.Unlock() }()
		if n == 1 {
			<-releaseFirst // winding down, deaf to its context for a while
			firstCause <- context.Cause(ctx)
		} else {
			<-releaseSecond
		}
		return Result{Status: sluicetype.StatusSuccess}
	}
	started := func() int { mu.Lock(); defer mu.Unlock(); return starts }
	var lost lostLeases
	p := startPool(t, d, clk.Clock(), Queue{Concurrency: 2, Lease: lease}, run, Hooks{LeaseLost: lost.hook})
	eventually(t, 5*time.Second, func() bool { return started() == 1 }, "the first attempt did not start")
	first := job(t, d, id).LockedBy

	// The pool's clock stands still, so nothing renews the lease: it
	// passes at the database, the job is rescued and this pool claims it
	// again under a new token.
	stealBack := func() bool {
		r, err := d.Rescue(context.Background(), driver.RescueParams{Limit: 10})
		require.NoError(t, err)
		return r.Pending == 1
	}
	eventually(t, 5*time.Second, stealBack, "the lease never expired")
	p.Notify("q")
	eventually(t, 5*time.Second, func() bool {
		j := job(t, d, id)
		return j.Status == sluicetype.StatusProcessing && j.LockedBy != first
	}, "the job was not re-claimed")
	second := job(t, d, id).LockedBy

	// The new attempt waits: the stale one was told its lease is lost.
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, 1, started(), "the re-claimed job started while its stale attempt still ran")
	close(releaseFirst)
	require.ErrorIs(t, <-firstCause, ErrLeaseLost, "the stale attempt was not told its lease is lost")
	eventually(t, 5*time.Second, func() bool { return started() == 2 }, "the re-claimed job did not start after the stale attempt returned")

	// The stale attempt's end left the new one registered, and its lease
	// is renewed when due.
	require.Equal(t, 1, p.Running(), "the new attempt is not registered")
	clk.Advance(lease / 3)
	eventually(t, 5*time.Second, func() bool {
		for _, b := range d.heartbeats() {
			if b.Token == second {
				return true
			}
		}
		return false
	}, "the new attempt's lease was not renewed")
	close(releaseSecond)
	eventually(t, 5*time.Second, func() bool { return job(t, d, id).Status == sluicetype.StatusSuccess }, "the new attempt's success was not written")
	require.Equal(t, 1, most, "two attempts of the job ran at once")
	require.Equal(t, 2, job(t, d, id).Attempts)
}

// Item 2: a heartbeat that gets no answer fails at its deadline, a
// quarter of the lease, instead of holding the heartbeat loop until the
// connection gives up (TCP retransmission: minutes). Before, it had no
// deadline at all.
func TestBlockedHeartbeatFailsAtItsDeadline(t *testing.T) {
	const lease = 4 * time.Second
	require.Equal(t, time.Second, callTimeout(lease), "a quarter of the lease, as docs/guarantees.md says")
	d := newCutDriver(t)
	enqueue(t, d, 1)
	clk := newManualClock()
	g := newGate()
	p := startPool(t, d, clk.Clock(), Queue{Concurrency: 1, Lease: lease}, g.run, Hooks{})
	eventually(t, 30*time.Second, func() bool { return p.Running() == 1 }, "the job did not start")

	d.blockBeats.Store(true)
	at := time.Now()
	clk.Advance(lease / 3)
	// 20 s: far past the deadline, well short of "never".
	eventually(t, 20*time.Second, func() bool { return len(d.hung()) > 0 }, "the blocked heartbeat never returned")
	took := time.Since(at)
	t.Logf("a heartbeat that got no answer failed after %s (deadline %s)", took.Round(time.Millisecond), callTimeout(lease))
	require.ErrorIs(t, d.hung()[0], context.DeadlineExceeded)
	require.GreaterOrEqual(t, took, callTimeout(lease), "the heartbeat was cut short before its deadline")
	close(g.release)
}

// Item 3: a handler whose lease was not renewed in time is cancelled with
// ErrLeaseLost once lease - margin has passed on the pool's clock since
// the last renewal began, while the lease still holds at the database:
// it is told to stop before another worker can take the job. Before,
// nothing stopped it while the heartbeat hung.
func TestHandlerStoppedBeforeUnrenewedLeasePasses(t *testing.T) {
	// The database's lease is long, so that the test can see it still
	// held; the pool's clock is the test's.
	const lease = time.Minute
	require.Equal(t, lease/4, leaseMargin(lease), "the margin of docs/guarantees.md")
	d := newCutDriver(t)
	id := enqueue(t, d, 1)[0]
	clk := newManualClock()
	cause, started := make(chan error, 1), make(chan struct{})
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return Result{Status: sluicetype.StatusSuccess}
	}
	var lost lostLeases
	p := startPool(t, d, clk.Clock(), Queue{Concurrency: 1, Lease: lease}, run, Hooks{LeaseLost: lost.hook})
	// The handler itself: a job whose lease goes unrenewed before its
	// handler starts is not started at all.
	waitClosed(t, started, "the job did not start")
	require.Equal(t, 1, p.Running())
	d.blockBeats.Store(true)

	clk.Advance(lease - leaseMargin(lease) - time.Millisecond)
	select {
	case err := <-cause:
		t.Fatalf("the handler was stopped before lease - margin: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	select {
	case err := <-cause:
		require.ErrorIs(t, err, ErrLeaseLost)
		// The handler has what is left of the lease, the margin on the
		// pool's clock (which stands still here), to stop in.
		var ll *LeaseLostError
		require.ErrorAs(t, err, &ll)
		require.Equal(t, clk.Now().Add(leaseMargin(lease)), ll.StopBy)
	case <-time.After(20 * time.Second):
		t.Fatal("a handler whose lease was not renewed in time was not stopped")
	}
	eventually(t, 5*time.Second, func() bool { _, ok := lost.get(id); return ok }, "the lost lease was not reported")
	where, _ := lost.get(id)
	require.Equal(t, "lease not renewed in time", where)
	j := job(t, d, id)
	dbNow, err := d.Now(context.Background())
	require.NoError(t, err)
	require.True(t, j.LockedUntil.After(dbNow), "the lease had passed at the database before the handler was stopped")
	require.Equal(t, sluicetype.StatusProcessing, j.Status, "the dropped attempt wrote an outcome")
}

// A prefetched job whose lease has gone unrenewed for half of it (the
// database stopped answering the heartbeat) is not started when a handler
// slot frees: it would get at most a quarter of its lease before the
// expiry loop stopped it (a partition run saw a command killed before its
// first line). It is reported lost and left to the rescue.
func TestUnrenewedPrefetchedJobDoesNotStart(t *testing.T) {
	const lease = time.Minute
	d := newCutDriver(t)
	ids := enqueue(t, d, 2)
	clk := newManualClock()
	var mu sync.Mutex
	var ran []int64
	free := make(chan struct{})
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		mu.Lock()
		ran = append(ran, j.ID)
		first := len(ran) == 1
		mu.Unlock()
		if first {
			<-free
		}
		return Result{Status: sluicetype.StatusSuccess}
	}
	var lost lostLeases
	p := startPool(t, d, clk.Clock(), Queue{Concurrency: 1, Lease: lease}, run, Hooks{LeaseLost: lost.hook})
	eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		started := len(ran)
		mu.Unlock()
		// Running counts the prefetched job too: it holds a lease.
		return started == 1 && p.Running() == 2 && job(t, d, ids[0]).Status == sluicetype.StatusProcessing && job(t, d, ids[1]).Status == sluicetype.StatusProcessing
	}, "one job did not start with the other prefetched")
	d.blockBeats.Store(true)
	clk.Advance(lease / 2)
	close(free)

	mu.Lock()
	first := ran[0]
	mu.Unlock()
	other := ids[0]
	if other == first {
		other = ids[1]
	}
	eventually(t, 30*time.Second, func() bool { _, ok := lost.get(other); return ok }, "the prefetched job's unrenewed lease was not reported")
	where, _ := lost.get(other)
	require.Equal(t, "not renewed before its start", where)
	eventually(t, 30*time.Second, func() bool { return job(t, d, first).Status == sluicetype.StatusSuccess }, "the first job's outcome was not written")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int64{first}, ran, "a handler started on a lease that was not renewed for half of it")
}

// Item 4: a silent cut (no reset, no refusal: packets dropped) is found
// by the liveness ping while the pool holds a lease, and the calls in
// flight are cancelled then, not at their own deadlines (a claim's: a
// quarter of a 10-minute lease, capped at 30 s). When the link heals the
// loops resume at the probe's next ping.
func TestSilentCutCancelsCallsInFlight(t *testing.T) {
	const lease = 10 * time.Minute
	require.Equal(t, 3*time.Second, 2*watchEvery+probeTimeout, "the detection bound of docs/guarantees.md")
	d := newCutDriver(t)
	enqueue(t, d, 1)
	g := newGate()
	p := startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 2, Lease: lease}, g.run, Hooks{})
	eventually(t, 30*time.Second, func() bool { return p.Running() == 1 }, "the job did not start")

	// The idle producer's next claim hangs on the cut link.
	at := time.Now()
	d.cut(true)
	eventually(t, 25*time.Second, func() bool { return len(d.hung()) > 0 }, "the claim in flight was not cancelled")
	detected := time.Since(at)
	require.ErrorIs(t, d.hung()[0], errUnreachable, "the claim ended at its own deadline, not at the liveness ping")
	t.Logf("a silent cut cancelled the claim in flight %s after it began (stated bound %s)",
		detected.Round(time.Millisecond), 2*watchEvery+probeTimeout)

	claims := d.claimCalls()
	healed := time.Now()
	d.cut(false)
	eventually(t, 10*time.Second, func() bool { return d.claimCalls() > claims }, "claims did not resume after the heal")
	t.Logf("claims resumed %s after the heal", time.Since(healed).Round(time.Millisecond))
	close(g.release)
}

// Item 6: shutdown waits for a cancelled handler to return, longer than
// the second it used to give (a command handler's SIGTERM grace is 10 s),
// and writes its real outcome: Stop never returns with a handler alive.
// Before, the job was requeued after 1 s and Stop returned while the
// handler still ran.
func TestShutdownWaitsForCancelledHandler(t *testing.T) {
	d := openSQLite(t)
	id := enqueue(t, d, 1)[0]
	var returned atomic.Bool
	started, cancelled := make(chan struct{}), make(chan struct{})
	finish := make(chan struct{})
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		close(started)
		<-ctx.Done()
		close(cancelled)
		<-finish // finishing its item, as a command that traps SIGTERM does
		returned.Store(true)
		return Result{Status: sluicetype.StatusSuccess}
	}
	p := startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 1}, run, Hooks{})
	// The handler itself, not only the claim (Running counts a claimed
	// job before its handler starts; stopped then, it never would).
	waitClosed(t, started, "the job did not start")
	stopped := make(chan struct{})
	go func() { p.stop(10 * time.Millisecond); close(stopped) }()
	waitClosed(t, cancelled, "the shutdown did not cancel the handler")
	// Past the old one-second grace.
	time.Sleep(1500 * time.Millisecond)
	select {
	case <-stopped:
		t.Fatal("Stop returned while a handler still ran")
	default:
	}
	require.Equal(t, sluicetype.StatusProcessing, job(t, d, id).Status, "the job was requeued under its running handler")
	close(finish)
	select {
	case <-stopped:
	case <-time.After(DefaultGrace + 10*time.Second):
		t.Fatal("Stop did not return")
	}
	require.True(t, returned.Load())
	j := job(t, d, id)
	require.Equal(t, sluicetype.StatusSuccess, j.Status, "the handler's own outcome was not written")
	require.Equal(t, 1, j.Attempts)
}

// Item 7: a job claimed ahead of a free handler (prefetched) that never
// started is not charged when its worker dies: the rescue gives its
// attempt back, so that with max_attempts 1 it runs later instead of
// failing with "lease expired". The job that did start is charged. The
// pool's clock stands still, so nothing renews the short lease: the
// worker is as good as dead to the database.
func TestPrefetchedJobNotChargedWhenWorkerDies(t *testing.T) {
	testdb.ForEach(t, testPrefetchedJobNotCharged)
}

func testPrefetchedJobNotCharged(t *testing.T, name string) {
	const lease = 300 * time.Millisecond
	d := &countingDriver{Driver: testdb.Open(t, name)}
	ps := []driver.InsertJob{
		{Queue: "q", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 1},
		{Queue: "q", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 1},
	}
	_, err := d.Insert(context.Background(), driver.InsertParams{Jobs: ps})
	require.NoError(t, err)
	g := newGate()
	t.Cleanup(func() { close(g.release) })
	startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 1, Lease: lease}, g.run, Hooks{})
	eventually(t, 5*time.Second, func() bool { _, _, n := g.counts(); return n == 1 && d.claimedJobs() == 2 },
		"one job did not start with the other prefetched")
	ran := g.startedIDs()[0]

	var total sluicetype.RescueResult
	eventually(t, 5*time.Second, func() bool {
		r, err := d.Rescue(context.Background(), driver.RescueParams{Limit: 10})
		require.NoError(t, err)
		total.Add(r)
		return total.Pending+total.Failed == 2
	}, "the leases never expired")
	require.Equal(t, 1, total.Failed, "the job that ran used its one attempt")
	require.Equal(t, 1, total.Pending, "the prefetched job was charged for a run that never started")
	require.Equal(t, sluicetype.StatusFailed, job(t, d, ran).Status)
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Queue: "q", Status: sluicetype.StatusPending, Limit: 10})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Zero(t, jobs[0].Attempts)
}
