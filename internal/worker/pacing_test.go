package worker

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// The two pacing figures of docs/guarantees.md and docs/scale.md: a process pings a database that stopped
// answering every 250 ms (one ping shared by all its loops), and an idle
// producer probes for a runnable job every 25 ms. Both are tickers or
// sleeps of the stated interval, so a window of W holds at most
// W/interval + 1 of them, exactly, however loaded the machine: the upper
// bound is asserted as that count. A pace that slow load could explain is
// no defect, so the lower bound is loose.

// pingServer is a database/sql driver whose connections fail while down
// is set, and counts the attempts.
type pingServer struct {
	down     atomic.Bool
	attempts atomic.Int32
}

var errDown = errors.New("test: connection refused")

func (s *pingServer) Open(string) (sqldriver.Conn, error) {
	if s.down.Load() {
		s.attempts.Add(1)
		return nil, errDown
	}
	return pingConn{}, nil
}

type pingConn struct{}

func (pingConn) Prepare(string) (sqldriver.Stmt, error) { return nil, errors.New("unused") }
func (pingConn) Close() error                           { return nil }
func (pingConn) Begin() (sqldriver.Tx, error)           { return nil, errors.New("unused") }

// pingDriver is a driver.Driver whose DB is the pingServer's.
type pingDriver struct {
	driver.Driver
	db *sql.DB
}

func (d pingDriver) DB() *sql.DB { return d.db }

func TestOutagePingEvery250msSharedByAllLoops(t *testing.T) {
	require.Equal(t, 250*time.Millisecond, probeEvery, "the figure of docs/guarantees.md")
	srv := &pingServer{}
	db := sql.OpenDB(connector{srv})
	t.Cleanup(func() { db.Close() })
	r := newReach(pingDriver{db: db}, slog.New(slog.DiscardHandler), clock.System)
	srv.down.Store(true)

	// Twenty loops fail at once and wait for the database.
	const loops = 20
	var wg sync.WaitGroup
	var resumed atomic.Int32
	start := time.Now()
	for range loops {
		wg.Go(func() {
			if r.wait(context.Background()) {
				resumed.Add(1)
			}
		})
	}
	time.Sleep(2 * time.Second)
	pings := int(srv.attempts.Load())
	window := time.Since(start)
	srv.down.Store(false)
	wg.Wait()
	resumedAfter := time.Since(start) - window
	t.Logf("%d loops: %d pings in %s while down; all resumed %s after the database answered", loops, pings, window.Round(time.Millisecond), resumedAfter.Round(time.Millisecond))
	require.LessOrEqual(t, pings, int(window/probeEvery)+1, "pings faster than every %s, or one per loop", probeEvery)
	require.GreaterOrEqual(t, pings, 3, "the probe kept pinging")
	require.EqualValues(t, loops, resumed.Load(), "every loop learns the database is back")
	require.Less(t, resumedAfter, probeEvery+time.Second, "the next ping finds the database back")
}

// connector hands database/sql the pingServer without registering a name.
type connector struct{ s *pingServer }

func (c connector) Connect(context.Context) (sqldriver.Conn, error) { return c.s.Open("") }
func (c connector) Driver() sqldriver.Driver                        { return c.s }

// probed counts an idle producer's probes.
type probed struct {
	driver.Driver
	probes atomic.Int32
}

func (p *probed) Runnable(ctx context.Context, rp driver.RunnableParams) (bool, error) {
	p.probes.Add(1)
	return p.Driver.(driver.Prober).Runnable(ctx, rp)
}

func TestIdleProbeEvery25ms(t *testing.T) {
	d := &probed{Driver: testdb.Open(t, "sqlite")}
	started := make(chan time.Time, 1)
	p := New(Config{
		Driver: d, Clock: newManualClock().Clock(),
		Queues:   []Queue{{Name: "q", Concurrency: 1, Lease: time.Minute}},
		LeaseFor: func(string) time.Duration { return time.Minute },
		Run: func(context.Context, sluicetype.JobRow) Result {
			started <- time.Now()
			return Result{Status: sluicetype.StatusSuccess}
		},
		Logger: slog.New(slog.DiscardHandler),
		// The poll never comes round: only the probe finds a job.
		PollMin: time.Hour, PollMax: time.Hour,
	})
	require.Equal(t, 25*time.Millisecond, p.cfg.ProbeEvery, "the figure of docs/scale.md is the default")
	p.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
	})
	testdb.WaitFor(t, 10*time.Second, "the first probe", func() bool { return d.probes.Load() > 0 })
	from, start := d.probes.Load(), time.Now()
	time.Sleep(time.Second)
	n, window := int(d.probes.Load()-from), time.Since(start)
	t.Logf("%d probes in %s", n, window.Round(time.Millisecond))
	require.LessOrEqual(t, n, int(window/p.cfg.ProbeEvery)+1, "probes faster than every %s", p.cfg.ProbeEvery)
	require.GreaterOrEqual(t, n, 5, "the idle producer kept probing")

	at := time.Now()
	enqueue(t, d.Driver, 1)
	select {
	case s := <-started:
		t.Logf("a job inserted behind the producer's back started %s later", s.Sub(at).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the probe never found the job (the poll is an hour away)")
	}
}
