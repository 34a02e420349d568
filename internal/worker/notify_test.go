package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testdb"
)

// unprobed hides the SQLite driver's Prober, so that an idle producer
// learns of a job only by its poll or by Notify.
type unprobed struct{ driver.Driver }

// Notify("") is what a driver.Listener sends when it starts listening
// again after a lost connection: jobs inserted meanwhile were announced to
// nobody, so every queue's producer claims once, however long its poll.
func TestNotifyEmptyWakesEveryQueue(t *testing.T) {
	d := unprobed{testdb.Open(t, "sqlite")}
	started := make(chan string, 4)
	p := New(Config{
		Driver: d, Clock: newManualClock().Clock(),
		Queues:   []Queue{{Name: "a", Concurrency: 1, Lease: time.Minute}, {Name: "b", Concurrency: 1, Lease: time.Minute}},
		LeaseFor: func(string) time.Duration { return time.Minute },
		Run: func(_ context.Context, j driver.JobRow) Outcome {
			started <- j.Queue
			return Outcome{Status: driver.StatusSuccess}
		},
		Logger:  slog.New(slog.DiscardHandler),
		PollMin: time.Hour, PollMax: time.Hour,
	})
	p.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		p.Stop(ctx)
	})
	// Let both producers make their first, empty claim and settle into
	// their hour-long wait.
	time.Sleep(200 * time.Millisecond)
	for _, q := range []string{"a", "b"} {
		_, err := d.Insert(context.Background(), driver.InsertParams{Jobs: []driver.InsertJob{
			{Queue: q, Type: "t", Dedupe: driver.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 1}}})
		require.NoError(t, err)
	}
	select {
	case q := <-started:
		t.Fatalf("a job of queue %s started with nothing to wake its producer", q)
	case <-time.After(200 * time.Millisecond):
	}
	p.Notify("")
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case q := <-started:
			got[q] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("Notify(\"\") woke only %v", got)
		}
	}
}
