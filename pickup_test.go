package sluice_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/testkit/clienttest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestPlainInsertWakesIdleWorkers inserts jobs with a plain SQL INSERT on
// a connection of its own, as a PHP application does, into workers that
// have idled long enough for their claim poll to back off. No in-process
// Notify announces these jobs, and PollMax is a minute, so only the
// database's own wake-up (PostgreSQL's NOTIFY trigger) or the idle probe
// (MySQL, SQLite) can start them soon. Without either, each job waits for
// the backed-off poll, over a second here; the bound is half of that, far
// above the tens of milliseconds the mechanism takes, so load does not
// make it flaky.
func TestPlainInsertWakesIdleWorkers(t *testing.T) {
	const jobs = 3
	// idleFor lets the poll back off: after it, the next claim is over a
	// second away.
	const idleFor = 1500 * time.Millisecond
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		started := make(chan time.Time, jobs)
		clienttest.Start(t, sluice.Config{Driver: d, PollMax: time.Minute,
			Types: map[string]sluice.Type{"plain": {Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error {
				started <- time.Now()
				return nil
			})}},
			Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 2}}})

		// The application's own connection: another pool, unknown to
		// the client.
		app, err := dburl.Open(tg.URL, dburl.Options{Prefix: tg.Prefix})
		require.NoError(t, err)
		defer app.Close()
		insert := "INSERT INTO " + tg.Prefix + "jobs (type, payload) VALUES (?, '{}')"
		if name == "postgres" {
			insert = "INSERT INTO " + tg.Prefix + "jobs (type, payload) VALUES ($1, '{}')"
		}

		var waits []time.Duration
		for range jobs {
			time.Sleep(idleFor)
			at := time.Now()
			_, err := app.DB().ExecContext(context.Background(), insert, "plain")
			require.NoError(t, err)
			select {
			case s := <-started:
				waits = append(waits, s.Sub(at))
			case <-time.After(30 * time.Second):
				t.Fatalf("a plainly inserted job did not start within 30s")
			}
		}
		slices.Sort(waits)
		t.Logf("%s: plain INSERT to handler start: %v", name, waits)
		require.Less(t, waits[len(waits)/2], idleFor/3,
			"median pickup of a plain INSERT into idle workers: %v", waits)
	})
}
