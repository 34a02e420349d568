package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// A DetailError's detail reaches last_error and debug logs only, however
// the handler wraps it (here also inside the type's timeout message).
func TestDetailErrorStaysOutOfLogs(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var log testdb.SyncBuffer
		c, err := sluice.NewClient(sluice.Config{Driver: d, Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: level})),
			Types: map[string]sluice.Type{"charge": {Timeout: 20 * time.Millisecond, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				<-ctx.Done()
				return fmt.Errorf("charging: %w", &sluice.DetailError{Err: ctx.Err(), Detail: "card 4111-1111"})
			})}}})
		require.NoError(t, err)
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "charge", MaxAttempts: 1})
		require.NoError(t, err)
		res, err := c.RunOnce(ctx, sluice.RunParams{Type: "charge"})
		require.NoError(t, err)
		require.Equal(t, sluice.RunResult{OK: true, Failed: 1}, res)
		j, err := d.GetJob(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusFailed, j.Status)
		require.Equal(t, "timed out after 20ms: charging: context deadline exceeded: card 4111-1111", j.LastError)
		require.Contains(t, log.String(), `error="timed out after 20ms: charging: context deadline exceeded"`)
		if level == slog.LevelInfo {
			require.NotContains(t, log.String(), "4111", "info level: no handler output")
		} else {
			require.Contains(t, log.String(), `error_detail="timed out after 20ms: charging: context deadline exceeded: card 4111-1111"`)
		}
	}
	require.True(t, errors.Is(&sluice.DetailError{Err: context.Canceled}, context.Canceled))
}

// Two processes on the same tables count the queues once per interval:
// the first refresh counts and shares its counts, and the second, within
// the interval, shows them without counting (a job enqueued between the
// two is not in them yet).
func TestQueueGaugesCountedOncePerCluster(t *testing.T) {
	d, tg := testdb.OpenURL(t, "sqlite")
	ctx := context.Background()
	other, err := dburl.Open(tg.URL, dburl.Options{Prefix: tg.Prefix})
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	start := func(drv driver.Driver) *sluice.Client {
		c, err := sluice.NewClient(sluice.Config{Driver: drv})
		require.NoError(t, err)
		gctx, stop := context.WithCancel(ctx)
		t.Cleanup(stop)
		c.StartGauges(gctx)
		// The first refresh runs at start.
		testdb.WaitFor(t, time.Minute, "the first gauge refresh", func() bool {
			return c.Metrics().Value("sluice_queue_pending", "default") > 0
		})
		return c
	}
	enqueue := func(n int) {
		for range n {
			testdb.Insert(t, ctx, d, testdb.Job("default", "", ""))
		}
	}

	enqueue(2)
	a := start(d)
	require.EqualValues(t, 2, a.Metrics().Value("sluice_queue_pending", "default"))
	first, err := d.ReadGauges(ctx)
	require.NoError(t, err)

	enqueue(1)
	b := start(other)
	shared, err := d.ReadGauges(ctx)
	require.NoError(t, err)
	if !shared.TakenAt.Equal(first.TakenAt) {
		// A machine too slow to start b within the interval: b counted.
		t.Logf("b's refresh came after the interval (taken_at %s, then %s)", first.TakenAt, shared.TakenAt)
		require.EqualValues(t, 3, b.Metrics().Value("sluice_queue_pending", "default"))
		return
	}
	require.EqualValues(t, 2, b.Metrics().Value("sluice_queue_pending", "default"), "b counted instead of reading a's counts")
}
