package worker

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// unprobed hides the SQLite driver's Prober, so that an idle producer
// learns of a job only by its poll or by Notify, and counts the claims
// that returned, per queue.
type unprobed struct {
	driver.Driver
	mu     sync.Mutex
	claims map[string]int
}

func (u *unprobed) Claim(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	jobs, err := u.Driver.Claim(ctx, p)
	u.mu.Lock()
	u.claims[p.Queue]++
	u.mu.Unlock()
	return jobs, err
}

func (u *unprobed) claimed(queue string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.claims[queue]
}

// Notify("") is what a driver.Listener sends when it starts listening
// again after a lost connection: jobs inserted meanwhile were announced to
// nobody, so every queue's producer claims once, however long its poll.
func TestNotifyEmptyWakesEveryQueue(t *testing.T) {
	d := &unprobed{Driver: testdb.Open(t, "sqlite"), claims: map[string]int{}}
	started := make(chan string, 4)
	p := New(Config{
		Driver: d, Clock: newManualClock().Clock(),
		Queues:   []Queue{{Name: "a", Concurrency: 1, Lease: time.Minute}, {Name: "b", Concurrency: 1, Lease: time.Minute}},
		LeaseFor: func(string) time.Duration { return time.Minute },
		Run: func(_ context.Context, j sluicetype.JobRow) Result {
			started <- j.Queue
			return Result{Status: sluicetype.StatusSuccess}
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
	// Both producers made their first, empty claim and settle into their
	// hour-long wait.
	testdb.WaitFor(t, 10*time.Second, "each producer's first claim", func() bool { return d.claimed("a") == 1 && d.claimed("b") == 1 })
	for _, q := range []string{"a", "b"} {
		_, err := d.Insert(context.Background(), driver.InsertParams{Jobs: []driver.InsertJob{
			{Queue: q, Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 1}}})
		require.NoError(t, err)
	}
	select {
	case q := <-started:
		t.Fatalf("a job of queue %s started with nothing to wake its producer", q)
	case <-time.After(200 * time.Millisecond):
	}
	require.Equal(t, 2, d.claimed("a")+d.claimed("b"), "no producer claimed again before the Notify")
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
