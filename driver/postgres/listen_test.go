package postgres_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// listen runs d's Listen until the test ends and sorts its wake-ups: a
// queue's name, or "" each time listening (re)starts.
func listen(t *testing.T, d driver.Driver, log *slog.Logger) (queues, restarts chan string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	queues, restarts = make(chan string, 16), make(chan string, 16)
	go func() {
		defer close(done)
		d.(driver.Listener).Listen(ctx, func(q string) {
			if q == "" {
				restarts <- q
			} else {
				queues <- q
			}
		}, log)
	}()
	return queues, restarts
}

func TestListenWakesOnInsert(t *testing.T) {
	d := testdb.Open(t, "postgres")
	ctx := context.Background()
	woke, _ := listen(t, d, slog.New(slog.DiscardHandler))

	// The LISTEN connection needs a moment; insert until a wake-up arrives.
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		_, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "mail", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte("{}"), MaxAttempts: 1}}})
		require.NoError(t, err)
		select {
		case q := <-woke:
			require.Equal(t, "mail", q)
			// A delayed job is not runnable yet, so it wakes nobody.
			_, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "later", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte("{}"), MaxAttempts: 1, Delay: time.Hour}}})
			require.NoError(t, err)
			select {
			case q := <-woke:
				require.NotEqual(t, "later", q)
			case <-time.After(300 * time.Millisecond):
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("no notification within 10s")
		}
	}
}

// TestListenReconnects kills the LISTEN connection's backend again and
// again, as a failover or a proxy timeout does. Every time, the listener
// reconnects after the shortest wait, not one that grew with each loss
// (a connection that had worked is a fresh loss), and wakes every queue
// once listening again, for jobs inserted while it was deaf.
func TestListenReconnects(t *testing.T) {
	d, tg := testdb.OpenURL(t, "postgres")
	var logs testdb.SyncBuffer
	_, restarts := listen(t, d, slog.New(slog.NewTextHandler(&logs, nil)))
	const losses = 5
	channel := `LISTEN "` + tg.Prefix + `jobs"`
	for i := 0; i <= losses; i++ {
		select {
		case <-restarts:
		case <-time.After(15 * time.Second):
			t.Fatalf("listening did not (re)start within 15s after loss %d; log:\n%s", i, logs.String())
		}
		if i == losses {
			break
		}
		var n int64
		require.NoError(t, d.DB().QueryRow("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1", channel).Scan(&n))
		require.Equal(t, int64(1), n, "one LISTEN backend to terminate")
	}
	lines := strings.Count(logs.String(), "postgres LISTEN connection lost")
	require.Equal(t, losses, lines, "one warning per loss:\n%s", logs.String())
	require.Equal(t, losses, strings.Count(logs.String(), "retry_in=100ms"), "every loss retried after the shortest wait:\n%s", logs.String())
}
