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
