package worker

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// These tests run the pool on a real SQLite database. Leases and run-at
// times follow the database clock; what the pool reads of its own clock
// (when a lease is due for renewal) follows a manual clock that only the
// test moves, so that a renewal happens exactly when a test asks for it.

// newManualClock starts the tests' clock on a fixed date.
func newManualClock() *clock.Manual {
	return clock.NewManual(time.Date(2031, 5, 4, 12, 0, 0, 0, time.UTC))
}

// countingDriver delegates every call to the real driver and records the
// calls the pool batches: claims, completions and heartbeats.
type countingDriver struct {
	driver.Driver
	// beforeComplete, if set, runs before each Complete is delegated; it
	// gets the call's 1-based number.
	beforeComplete func(call int, cs []driver.Completion)

	mu        sync.Mutex
	claims    []driver.ClaimParams
	claimed   int // jobs returned by every Claim
	completes [][]driver.Completion
	beats     []driver.HeartbeatParams
}

func (d *countingDriver) Claim(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	jobs, err := d.Driver.Claim(ctx, p)
	d.mu.Lock()
	d.claims = append(d.claims, p)
	d.claimed += len(jobs)
	d.mu.Unlock()
	return jobs, err
}

func (d *countingDriver) Complete(ctx context.Context, p driver.CompleteParams) ([]int64, error) {
	cs := p.Completions
	d.mu.Lock()
	d.completes = append(d.completes, cs)
	call := len(d.completes)
	d.mu.Unlock()
	if d.beforeComplete != nil {
		d.beforeComplete(call, cs)
	}
	return d.Driver.Complete(ctx, driver.CompleteParams{Completions: cs})
}

// Heartbeat records a call once it returned.
func (d *countingDriver) Heartbeat(ctx context.Context, p driver.HeartbeatParams) ([]int64, error) {
	lost, err := d.Driver.Heartbeat(ctx, p)
	d.mu.Lock()
	d.beats = append(d.beats, p)
	d.mu.Unlock()
	return lost, err
}

// Runnable keeps the SQLite driver's probe, which embedding the interface
// would hide from the producer.
func (d *countingDriver) Runnable(ctx context.Context, p driver.RunnableParams) (bool, error) {
	return d.Driver.(driver.Prober).Runnable(ctx, p)
}

func (d *countingDriver) heartbeats() []driver.HeartbeatParams {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]driver.HeartbeatParams(nil), d.beats...)
}

func (d *countingDriver) completeCalls() [][]driver.Completion {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]driver.Completion(nil), d.completes...)
}

func (d *countingDriver) claimedJobs() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.claimed
}

// openSQLite returns a migrated SQLite driver wrapped in a countingDriver.
func openSQLite(t *testing.T) *countingDriver {
	return &countingDriver{Driver: testdb.Open(t, "sqlite")}
}

// enqueue inserts n jobs of type "t" into queue "q" and returns their ids.
func enqueue(t *testing.T, d driver.Driver, n int) []int64 {
	t.Helper()
	ps := make([]driver.InsertJob, n)
	for i := range ps {
		ps[i] = driver.InsertJob{Queue: "q", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 3}
	}
	res, err := d.Insert(context.Background(), driver.InsertParams{Jobs: ps})
	require.NoError(t, err)
	ids := make([]int64, n)
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}

// job reads one job from the database.
func job(t *testing.T, d driver.Driver, id int64) *sluicetype.JobRow {
	t.Helper()
	j, err := d.GetJob(context.Background(), id)
	require.NoError(t, err)
	return j
}

// count returns how many jobs of queue "q" are in status.
func count(t *testing.T, d driver.Driver, status sluicetype.Status) int {
	t.Helper()
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Queue: "q", Status: status, Limit: 1000})
	require.NoError(t, err)
	return len(jobs)
}

// testPool is a started pool that the test stops at most once, by itself
// or at cleanup.
type testPool struct {
	*Pool
	stopOnce sync.Once
}

// startPool runs one queue "q" whose jobs all get the queue's lease. Each
// of tune may adjust the pool before it starts.
func startPool(t *testing.T, d driver.Driver, clk clock.Clock, q Queue, run RunFunc, hooks Hooks, tune ...func(*Pool)) *testPool {
	t.Helper()
	q.Name = "q"
	if q.Lease == 0 {
		q.Lease = time.Minute
	}
	p := &testPool{Pool: New(Config{
		Driver: d, Queues: []Queue{q}, Run: run, Hooks: hooks, Clock: clk,
		LeaseFor: func(string) time.Duration { return q.Lease },
		Logger:   slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// An idle producer claims again within this; the probe usually
		// wakes it sooner.
		PollMax: 20 * time.Millisecond,
	})}
	for _, f := range tune {
		f(p.Pool)
	}
	p.Start(context.Background())
	// Handlers still blocked get cancelled right away.
	t.Cleanup(func() { p.stop(10 * time.Millisecond) })
	return p
}

// stop stops the pool, cancelling handlers still running after wait.
func (p *testPool) stop(wait time.Duration) {
	p.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		p.Stop(ctx)
	})
}

// testWriter sends the pool's warnings to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(b))
	return len(b), nil
}

// eventually polls cond every few milliseconds until it holds, and fails
// the test with msg after within.
func eventually(t *testing.T, within time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	// Every wait here is for a state, not a judgement of speed: a bound
	// a loaded machine under -race can pass is the one that tells.
	deadline := time.Now().Add(max(within, 20*time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(msg, args...)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitClosed waits for ch to be closed.
func waitClosed(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal(msg)
	}
}

// gate is a handler that blocks until released, counting the handlers that
// run at once.
type gate struct {
	release chan struct{}

	mu      sync.Mutex
	now     int
	most    int
	started []int64
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

func (g *gate) run(ctx context.Context, j sluicetype.JobRow) Result {
	g.mu.Lock()
	g.now++
	g.most = max(g.most, g.now)
	g.started = append(g.started, j.ID)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.now--
		g.mu.Unlock()
	}()
	select {
	case <-g.release:
		return Result{Status: sluicetype.StatusSuccess}
	case <-ctx.Done():
		return Result{Status: sluicetype.StatusPending}
	}
}

// counts returns how many handlers run now, the most that ever ran at once,
// and how many have started.
func (g *gate) counts() (now, most, started int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now, g.most, len(g.started)
}

func (g *gate) startedIDs() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int64(nil), g.started...)
}
