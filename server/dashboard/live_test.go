package dashboard

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestLiveSnapshotIsShared checks the cost of the live pages: however many
// viewers poll at once, one tick runs the live-rows query once (and the
// roll-up reads once per rollTick), and a later tick sees new data.
func TestLiveSnapshotIsShared(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	l := &live{c: newClient(t, d)}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := l.get(ctx)
			require.NoError(t, err)
			require.NotNil(t, s)
		}()
	}
	wg.Wait()
	require.EqualValues(t, 5, l.queries, "50 viewers at once: Stats once, plus the clock, the paused flags and the two roll-up tables once")

	_, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "q", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 1}}})
	require.NoError(t, err)
	// The ticks are read against the process clock; the test moves the
	// snapshot's age instead of waiting, so that a slow machine cannot
	// turn "within a tick" into "after one".
	age := func(liveAge, rollAge time.Duration) {
		l.mu.Lock()
		defer l.mu.Unlock()
		now := time.Now()
		l.liveAt, l.rollAt = now.Add(-liveAge), now.Add(-rollAge)
	}
	age(liveTick-time.Second, 0)
	s, err := l.get(ctx)
	require.NoError(t, err)
	require.Empty(t, s.Queues, "within a tick the cached snapshot is served")
	require.EqualValues(t, 5, l.queries)

	age(liveTick, rollTick-time.Second)
	s, err = l.get(ctx)
	require.NoError(t, err)
	require.Len(t, s.Queues, 1)
	require.EqualValues(t, 1, s.Queues[0].Pending)
	require.EqualValues(t, 7, l.queries, "the next tick reads the live rows and the paused flags only")

	age(liveTick, rollTick)
	_, err = l.get(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 12, l.queries, "a roll-up tick reads the clock and the roll-ups again, beside the live rows and the paused flags")
}

// A queue paused by another process (the CLI, the API of another server)
// shows as paused on the next live tick, not after the roll-up period.
func TestLivePausedFollowsWithinATick(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	l := &live{c: newClient(t, d)}
	s, err := l.get(ctx)
	require.NoError(t, err)
	require.Empty(t, s.Queues)
	require.NoError(t, d.SetQueuePaused(ctx, driver.SetQueuePausedParams{Queue: "mail", Paused: true}))
	// One live tick later (the snapshot's age moved rather than slept),
	// with the roll-ups still fresh.
	l.mu.Lock()
	l.liveAt = time.Now().Add(-liveTick)
	l.mu.Unlock()
	s, err = l.get(ctx)
	require.NoError(t, err)
	require.Len(t, s.Queues, 1)
	require.True(t, s.Queues[0].Paused, "paused within one live tick (%s)", liveTick)
}

// newClient is a client without workers on d, as the dashboard reads through.
func newClient(t *testing.T, d driver.Driver) *sluice.Client {
	t.Helper()
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	return c
}
