package postgres_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testdb"
)

func TestListenWakesOnInsert(t *testing.T) {
	d := testdb.Open(t, "postgres")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woke := make(chan string, 16)
	go d.(driver.Listener).Listen(ctx, func(q string) { woke <- q }, slog.New(slog.DiscardHandler))

	// The LISTEN connection needs a moment; insert until a wake-up arrives.
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		_, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "mail", Type: "t", Dedupe: driver.DedupePermanent, Payload: []byte("{}"), MaxAttempts: 1}}})
		require.NoError(t, err)
		select {
		case q := <-woke:
			require.Equal(t, "mail", q)
			// A delayed job is not runnable yet, so it wakes nobody.
			_, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "later", Type: "t", Dedupe: driver.DedupePermanent, Payload: []byte("{}"), MaxAttempts: 1, Delay: time.Hour}}})
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
